"""How a loop is built for one lane of a run: the algorithm (with the lane's swept values), the
env fragment a placement chose, and the loop variant (lagged or not)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.fragment import Fragment
from jaxrl_fdg.core.lagged import LaggedLoop
from jaxrl_fdg.core.loop import Loop
from jaxrl_fdg.core.protocol import LoopLike


class LoopBuilder(NamedTuple):
    """``builder(env, swept, loop_type=Loop)``: the loop of one lane.

    Attributes:
      algorithm: ``swept values -> Algorithm`` (``{}`` for the configured values).
      rollout_len: steps per rollout.
      lagged: learn from the rollout collected one iteration earlier (``policy_lag = 1``).
    """

    algorithm: Callable[[Mapping[str, Any]], Algorithm]
    rollout_len: int
    lagged: bool = False

    def __call__(
        self, env: Fragment, swept: Mapping[str, Any], loop_type: Callable[..., Loop] = Loop
    ) -> LoopLike:
        loop = loop_type(env, self.algorithm(swept), self.rollout_len)
        return LaggedLoop(loop) if self.lagged else loop

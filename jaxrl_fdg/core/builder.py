"""How a loop is built for one lane of a run: the algorithm (with the lane's swept values), the
env fragment a placement chose, and the loop variant (lagged or not, the env batch in halves or
not)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.fragment import Fragment
from jaxrl_fdg.core.lagged import lagged
from jaxrl_fdg.core.loop import make_loop
from jaxrl_fdg.core.record import Loop


class LoopBuilder(NamedTuple):
    """``builder(env, swept, halves=1)``: the loop of one lane.

    Attributes:
      algorithm: ``swept values -> Algorithm`` (``{}`` for the configured values).
      rollout_len: steps per rollout.
      lagged: learn from the rollout collected one iteration earlier (``policy_lag = 1``).
    """

    algorithm: Callable[[Mapping[str, Any]], Algorithm]
    rollout_len: int
    lagged: bool = False

    def __call__(self, env: Fragment, swept: Mapping[str, Any], halves: int = 1) -> Loop:
        """The loop of ``env`` (with ``halves = 2``, the fragment of half the env batch) and
        the algorithm built with the ``swept`` values."""
        loop = make_loop(env, self.algorithm(swept), self.rollout_len, halves)
        return lagged(loop) if self.lagged else loop

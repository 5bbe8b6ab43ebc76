"""Replication: several runs in one program, the loop's pure functions vmapped over a leading
run axis (seeds, and the points of a hyperparameter sweep).

``SeedLoop(loop, n)`` offers the :class:`~jaxrl_fdg.core.protocol.LoopLike` interface the fusion
plans use, with every piece that computes ``jax.vmap``-ed, so each fusion mode runs ``n``
independent runs in one program per boundary. Run ``i`` starts from ``jax.random.key(seed_i)``, the
key the run with that seed alone starts from, so each lane computes that run (to float32 rounding:
batched matrix products may round differently from unbatched ones). The restructuring helpers (which
edge goes where) are shape-agnostic and are used as they are.

A hyperparameter sweep is the same vmap with one more input per lane: the swept values. Each lane
builds its loop, inside the vmap, from the algorithm's hyperparameters with the swept fields set
to that lane's (traced) values, so one program trains every combination. Only float
hyperparameters can be swept this way (see :func:`jaxrl_fdg.config.split_sweep`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.core.protocol import LoopLike, LoopWrapper
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies.base import LoopBuilder, env_fragment
from jaxrl_fdg.policies.single import Single

if TYPE_CHECKING:  # types only: config and envs sit above policies
    from jaxrl_fdg.config import Resolved, TrainConfig
    from jaxrl_fdg.envs import Environment
    from jaxrl_fdg.envs.host import HostSimulator

# Builds a lane's loop from its swept hyperparameter values (traced scalars).
Builder = Callable[[Mapping[str, jax.Array]], LoopLike]


class SeedLoop(LoopWrapper):
    """A loop over ``num_seeds`` independent runs; state leaves gain a leading axis.

    Args:
      loop: the loop every lane runs (with ``sweep``: the loop of the first lane's values, used
        for the shape-agnostic edge plumbing only).
      num_seeds: the number of lanes (runs).
      sweep: per swept hyperparameter, its value in each lane (``[num_seeds]``).
      build: a lane's loop from its swept values; required with ``sweep``.
    """

    def __init__(
        self,
        loop: LoopLike,
        num_seeds: int,
        sweep: Mapping[str, Sequence[float]] | None = None,
        build: Builder | None = None,
    ):
        super().__init__(loop)
        self.num_seeds = num_seeds
        if sweep and build is None:
            raise ValueError("a sweep needs build: the loop of a lane's hyperparameter values")
        values = {k: np.asarray(v, np.float32) for k, v in (sweep or {}).items()}
        if values:
            self._lanes = lambda method, *axes: _swept(build, method, values, *axes)
        else:
            self._lanes = lambda method, *axes: jax.vmap(method(loop), *axes)
        # The iteration counter is one for all lanes, which advance together: kept unbatched,
        # a periodic node's condition on it stays a branch (a batched one would run both).
        self._init = self._lanes(lambda lane: lane.init, 0, _STATE)
        self._begin = self._lanes(lambda lane: lane.begin, (_STATE,), (_STATE, 0, 0))
        self._rollout = self._lanes(lambda lane: lane.rollout, (_STATE,), (_STATE, 0, 0))
        self._learn = self._lanes(lambda lane: lane.learn, (_STATE, 0, 0), (_STATE, 0))
        self._iteration = self._lanes(lambda lane: lane.iteration, (_STATE,), (_STATE, 0))
        self._stack = self._lanes(lambda lane: lane.stack)

    def init(self, key):
        return self._init(key)

    def begin(self, state):
        return self._begin(state)

    def rollout(self, state, fixed=None):
        if fixed is not None:
            raise ValueError("the lanes of a SeedLoop read their edges from their own state")
        return self._rollout(state)

    def learn(self, state, trajectory, key):
        return self._learn(state, trajectory, key)

    def iteration(self, state, _=None):
        return self._iteration(state)

    def stack(self, transitions):
        return self._stack(transitions)

    def step_fn(self, index: int):
        return self._lanes(lambda lane: lane.step_fn(index))


# How a LoopState is laid out over the lanes: all but the iteration counter per lane.
_STATE = LoopState(fragments=0, key=0, iteration=None, pending=0)


def _swept(
    build: Builder, method: Callable, values: dict[str, np.ndarray], in_axes=0, out_axes=0
) -> Callable:
    """``method(loop)`` of each lane's own loop, vmapped over the lanes and their values."""

    def per_lane(lane_values, *args):
        return method(build(lane_values))(*args)

    axes = (0, *in_axes) if isinstance(in_axes, tuple) else 0
    batched = jax.vmap(per_lane, in_axes=axes, out_axes=out_axes)
    return lambda *args: batched({k: jnp.asarray(v) for k, v in values.items()}, *args)


def seed_keys(seed: int | Sequence[int], num_seeds: int | None = None) -> jax.Array:
    """``[key(seed), key(seed + 1), ...]`` (or the keys of the given seeds): each lane starts
    where its single-seed run does."""
    seeds = np.arange(seed, seed + num_seeds) if num_seeds is not None else np.asarray(seed)
    return jax.vmap(jax.random.key)(jnp.asarray(seeds, jnp.int32))


class Replicated(Single):
    """The placement of a run of several lanes (``num_seeds`` × the sweep's points) on one
    device: each lane runs what its run alone would, all in one vmapped program. Chosen by
    :func:`jaxrl_fdg.policies.select`, never named by a flag."""

    name = "replicated"
    summary = "num_seeds × sweep points as lanes of one vmapped program"

    def __init__(self, lanes: int):
        self.lanes = lanes

    def check(
        self, config: TrainConfig, env: Environment | HostSimulator, spec: AlgorithmSpec
    ) -> None:
        if env.on_host:
            raise ConfigError(
                f"{self._runs(config)} need a JAX environment; {config.env} is a host "
                "simulator (run one process per seed instead)"
            )
        super().check(config, env, spec)

    def _runs(self, config: TrainConfig) -> str:
        return f"{self.lanes} runs (num_seeds = {config.num_seeds} × the hyperparameter sweep)"

    def wrap(self, resolved: Resolved, build: LoopBuilder) -> LoopLike:
        env = env_fragment(resolved)
        lanes = resolved.lanes
        sweep = {name: [lane.point[name] for lane in lanes] for name in resolved.sweep}
        return SeedLoop(build(env, {}), len(lanes), sweep, lambda swept: build(env, swept))

    def initial_key(self, resolved: Resolved) -> jax.Array:
        return seed_keys([lane.seed for lane in resolved.lanes])

    def evaluation(self, run: Callable) -> Callable:
        return jax.vmap(run)  # each run's evaluation is the one its single run makes

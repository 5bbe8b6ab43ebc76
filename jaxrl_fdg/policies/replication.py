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
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.core.protocol import LoopLike, LoopWrapper
from jaxrl_fdg.core.types import LoopState, Metrics
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies import population
from jaxrl_fdg.policies.base import LoopBuilder, env_fragment
from jaxrl_fdg.policies.population import POPULATION, Halving, Population
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
      population: population-based training or successive halving across the lanes
        (:mod:`jaxrl_fdg.policies.population`); needs a sweep. The swept values then live in the
        state (``fragments[POPULATION]``), where its steps change them; under successive
        halving each lane also counts its own iterations (the loop state's counter stays the
        run's, and each lane's loop sees its own).
      seeds: each lane's seed (for a population's state).
    """

    def __init__(
        self,
        loop: LoopLike,
        num_seeds: int,
        sweep: Mapping[str, Sequence[float]] | None = None,
        build: Builder | None = None,
        population: Population | Halving | None = None,
        seeds: Sequence[int] | None = None,
    ):
        super().__init__(loop)
        self.num_seeds = num_seeds
        if sweep and build is None:
            raise ValueError("a sweep needs build: the loop of a lane's hyperparameter values")
        if population is not None and not sweep:
            raise ValueError("population-based training needs swept hyperparameters to explore")
        self._values = {k: np.asarray(v, np.float32) for k, v in (sweep or {}).items()}
        self.population = population
        self._seeds = tuple(seeds if seeds is not None else range(num_seeds))
        own = population is not None and population.own_iterations
        axes = _OWN_ITERATIONS if own else _STATE
        if self._values:
            self._lanes = lambda method, *axes: _swept(build, method, *axes)
        else:
            self._lanes = lambda method, *axes: _unswept(jax.vmap(method(loop), *axes))
        # The iteration counter is one for all lanes, which advance together: kept unbatched,
        # a periodic node's condition on it stays a branch (a batched one would run both).
        self._init = self._lanes(lambda lane: lane.init, 0, _STATE)
        self._begin = self._lanes(lambda lane: lane.begin, (axes,), (axes, 0, 0))
        self._rollout = self._lanes(lambda lane: lane.rollout, (axes,), (axes, 0, 0))
        self._learn = self._lanes(lambda lane: lane.learn, (axes, 0, 0), (axes, 0))
        self._iteration = self._lanes(lambda lane: lane.iteration, (axes,), (axes, 0))
        self._stack = self._lanes(lambda lane: lane.stack)

    def init(self, key):
        state = self._init(self._values, key)
        if self.population is None:
            return state
        values = {k: jnp.asarray(v) for k, v in self._values.items()}
        return _with(state, self.population.start(values, self._seeds))

    def begin(self, state):
        (state, k_rollout, k_learn), population, iteration = self._split(self._begin, state)
        return _with(state, population, iteration), k_rollout, k_learn

    def rollout(self, state, fixed=None):
        if fixed is not None:
            raise ValueError("the lanes of a SeedLoop read their edges from their own state")
        (state, trajectory, k_learn), population, iteration = self._split(self._rollout, state)
        return _with(state, population, iteration), trajectory, k_learn

    def learn(self, state, trajectory, key):
        return self._learned(*self._split(self._learn, state, trajectory, key))

    def iteration(self, state, _=None):
        return self._learned(*self._split(self._iteration, state))

    def stack(self, transitions):
        return self._stack(self._values, transitions)

    def step_fn(self, index: int):
        step = self._lanes(lambda lane: lane.step_fn(index))
        if self.population is None:
            return lambda *args: step(self._values, *args)
        # The hyperparameters travel with the state of the call (see unroll).
        return lambda packed, *args: step(packed[0], packed[1], *args)

    def unroll(self, state, key, run, steps=None):
        if self.population is None:
            return self.inner.unroll(state, key, run, steps)
        hparams = state.fragments[POPULATION].hparams

        def with_hparams(index, call_state, *args):  # what step_fn takes under a population
            return run(index, (hparams, call_state), *args)

        return self.inner.unroll(state, key, with_hparams, steps)

    def _split(self, method: Callable, state: LoopState, *args):
        """``method`` (batched) on ``state`` with each lane's hyperparameters: the sweep's, or
        the population's (taken out of the state, with each lane's own iteration count under
        successive halving). Returns its outputs, the population and the run's iteration."""
        if self.population is None:
            return method(self._values, state, *args), None, None
        fragments = dict(state.fragments)
        population = fragments.pop(POPULATION)
        lanes = state._replace(fragments=fragments)
        if self.population.own_iterations:
            lanes = lanes._replace(iteration=self.population.local(population, state.iteration))
        return method(population.hparams, lanes, *args), population, state.iteration

    def _learned(self, outputs: tuple[LoopState, Metrics], population: Any, iteration: Any):
        """After the learn phase: a population's step, where one is due."""
        state, metrics = outputs
        if population is None:
            return state, metrics
        state = state._replace(iteration=iteration + 1)
        population, state, metrics = self.population.step(
            population, state, metrics, restart=self._init
        )
        return _with(state, population), metrics


def _with(state: LoopState, population: Any, iteration: jax.Array | None = None) -> LoopState:
    """``state`` with the population's state beside the fragments' (and the run's
    ``iteration`` for the lanes' own counts)."""
    if population is None:
        return state
    fragments = {**state.fragments, POPULATION: population}
    if iteration is None:
        return state._replace(fragments=fragments)
    return state._replace(fragments=fragments, iteration=iteration)


# How a LoopState is laid out over the lanes: all but the iteration counter per lane, or (lanes
# that count their own iterations) all of it.
_STATE = LoopState(fragments=0, key=0, iteration=None, pending=0)
_OWN_ITERATIONS = LoopState(fragments=0, key=0, iteration=0, pending=0)


def _swept(build: Builder, method: Callable, in_axes=0, out_axes=0) -> Callable:
    """``method(loop)`` of each lane's own loop, vmapped over the lanes; the lanes' swept
    values (``{name: [lanes]}``) come first."""

    def per_lane(lane_values, *args):
        return method(build(lane_values))(*args)

    axes = (0, *in_axes) if isinstance(in_axes, tuple) else 0
    return jax.vmap(per_lane, in_axes=axes, out_axes=out_axes)


def _unswept(batched: Callable) -> Callable:
    """A batched method with the (empty) swept values first, like :func:`_swept`'s."""
    return lambda _values, *args: batched(*args)


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
        loop = build(env, {})
        pop = population.from_config(resolved.config, resolved.sweep, loop.learner_side, len(lanes))
        seeds = [lane.seed for lane in lanes]
        return SeedLoop(loop, len(lanes), sweep, lambda swept: build(env, swept), pop, seeds)

    def initial_key(self, resolved: Resolved) -> jax.Array:
        return seed_keys([lane.seed for lane in resolved.lanes])

    def evaluation(self, run: Callable) -> Callable:
        return jax.vmap(run)  # each run's evaluation is the one its single run makes

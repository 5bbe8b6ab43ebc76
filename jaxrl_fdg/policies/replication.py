"""Replication: several runs in one program, the loop's pure functions vmapped over a leading
run axis (seeds, and the points of a hyperparameter sweep).

:func:`replicated` turns a loop record into one whose every computing piece is ``jax.vmap``-ed,
so each fusion mode runs ``n`` independent runs in one program per boundary. Run ``i`` starts
from ``jax.random.key(seed_i)``, the key the run with that seed alone starts from, so each lane
computes that run (to float32 rounding: batched matrix products may round differently from
unbatched ones). The pieces that only move edges about (the fixed edges, the rollout carry) are
shape-agnostic and kept as they are.

A hyperparameter sweep is the same vmap with one more input per lane: the swept values. Each lane
builds its loop, inside the vmap, from the algorithm's hyperparameters with the swept fields set
to that lane's (traced) values, so one program trains every combination. Only float
hyperparameters can be swept this way (see :func:`jaxrl_fdg.config.split_sweep`).

With a population (``jaxrl_fdg.tuning``) the swept values live in the loop state
(``LoopState.population``), where its steps change them; each call of the step body driven
from Python then takes them as its argument (``Loop.call_args``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import branch
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState, Metrics
from jaxrl_fdg.policies.base import (
    EnvKind,
    LoopSource,
    Request,
    Supports,
    env_fragment,
)
from jaxrl_fdg.policies.single import Single

# Builds a lane's loop from its swept hyperparameter values (traced scalars).
Builder = Callable[[Mapping[str, jax.Array]], Loop]

# How a LoopState is laid out over the lanes: all but the iteration counter per lane, or (lanes
# that count their own iterations) all of it. The population is taken out before the vmap.
_STATE = LoopState(fragments=0, key=0, iteration=None, pending=0, population=None)
_OWN_ITERATIONS = LoopState(fragments=0, key=0, iteration=0, pending=0, population=None)


def replicated(
    loop: Loop,
    num_seeds: int,
    sweep: Mapping[str, Sequence[float]] | None = None,
    build: Builder | None = None,
    population: Any = None,
    seeds: Sequence[int] | None = None,
) -> Loop:
    """``loop`` over ``num_seeds`` independent runs; state leaves gain a leading axis.

    Args:
      loop: the loop every lane runs (with ``sweep``: the loop of the first lane's values, whose
        shape-agnostic pieces are kept).
      num_seeds: the number of lanes (runs).
      sweep: per swept hyperparameter, its value in each lane (``[num_seeds]``).
      build: a lane's loop from its swept values; required with ``sweep``.
      population: population-based training or successive halving across the lanes
        (``jaxrl_fdg.tuning``); needs a sweep. Under successive halving each lane also counts
        its own iterations (the loop state's counter stays the run's, and each lane's loop
        sees its own).
      seeds: each lane's seed (for a population's state).
    """
    lanes = _Lanes(loop, num_seeds, sweep, build, population, seeds)
    pending = lanes.learn_pending if loop.learn_pending is not None else None
    calls = tuple(lanes.call(i) for i in range(len(loop.calls)))
    return loop._replace(
        init=lanes.init,
        begin=lanes.begin,
        calls=calls,
        host_calls=calls,
        stack=lanes.stack,
        rollout=lanes.rollout,
        learn=lanes.learn,
        iteration=lanes.iteration,
        call_args=lanes.call_args,
        learn_pending=pending,
    )


class _Lanes:
    """The replicated pieces of one loop (see :func:`replicated`)."""

    def __init__(self, loop, num_seeds, sweep, build, population, seeds):
        if sweep and build is None:
            raise ValueError("a sweep needs build: the loop of a lane's hyperparameter values")
        if population is not None and not sweep:
            raise ValueError("population-based training needs swept hyperparameters to explore")
        self.loop, self.num_seeds = loop, num_seeds
        self._values = {k: np.asarray(v, np.float32) for k, v in (sweep or {}).items()}
        self.population = population
        self._seeds = tuple(seeds if seeds is not None else range(num_seeds))
        own = population is not None and population.own_iterations
        axes = _OWN_ITERATIONS if own else _STATE
        if self._values:
            self._lanes = lambda method, *axes: _swept(build, method, *axes)
        else:
            self._lanes = lambda method, *axes: _unswept(branch.vmap(method(loop), *axes))
        # The iteration counter is one for all lanes, which advance together: kept unbatched,
        # a periodic node's condition on it stays a branch (a batched one would run both).
        self._init = self._lanes(lambda lane: lane.init, 0, _STATE)
        self._begin = self._lanes(lambda lane: lane.begin, (axes,), (axes, 0, 0))
        self._rollout = self._lanes(lambda lane: lane.rollout, (axes,), (axes, 0, 0))
        self._learn = self._lanes(lambda lane: lane.learn, (axes, 0, 0), (axes, 0))
        if loop.learn_pending is not None:
            self._pending = self._lanes(lambda lane: lane.learn_pending, (axes, 0), (axes, 0))
        self._iteration = self._lanes(lambda lane: lane.iteration, (axes,), (axes, 0))
        self._stack = self._lanes(lambda lane: lane.stack)

    def init(self, key: jax.Array) -> LoopState:
        state = self._init(self._values, key)
        if self.population is None:
            return state
        values = {k: jnp.asarray(v) for k, v in self._values.items()}
        return state._replace(population=self.population.start(values, self._seeds))

    def begin(self, state: LoopState):
        (state, k_rollout, k_learn), population, iteration = self._split(self._begin, state)
        return _with(state, population, iteration), k_rollout, k_learn

    def rollout(self, state: LoopState, fixed: dict | None = None):
        if fixed is not None:
            raise ValueError("the lanes of a replicated loop read their edges from their state")
        (state, trajectory, k_learn), population, iteration = self._split(self._rollout, state)
        return _with(state, population, iteration), trajectory, k_learn

    def learn(self, state: LoopState, trajectory: Any, key: jax.Array):
        return self._learned(*self._split(self._learn, state, trajectory, key))

    def learn_pending(self, state: LoopState, pending: Any):
        return self._learned(*self._split(self._pending, state, pending))

    def iteration(self, state: LoopState, _: Any = None):
        return self._learned(*self._split(self._iteration, state))

    def stack(self, transitions: Sequence[Any]):
        return self._stack(self._values, transitions)

    def call(self, index: int) -> Callable:
        """Step call ``index`` for every lane; under a population its swept values are the
        call's last argument (:meth:`call_args`)."""
        step = self._lanes(lambda lane: lane.calls[index])
        if self.population is None:
            return lambda state, inputs, key: step(self._values, state, inputs, key)
        return lambda state, inputs, key, hparams: step(hparams, state, inputs, key)

    def call_args(self, state: LoopState) -> tuple:
        return () if self.population is None else (state.population.hparams,)

    def _split(self, method: Callable, state: LoopState, *args):
        """``method`` (batched) on ``state`` with each lane's hyperparameters: the sweep's, or
        the population's (taken out of the state, with each lane's own iteration count under
        successive halving). Returns its outputs, the population and the run's iteration."""
        if self.population is None:
            return method(self._values, state, *args), None, None
        population = state.population
        lanes = state._replace(population=None)
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
    """``state`` with the population's state (and the run's ``iteration`` for the lanes' own
    counts)."""
    if population is None:
        return state
    if iteration is None:
        return state._replace(population=population)
    return state._replace(population=population, iteration=iteration)


def _swept(build: Builder, method: Callable, in_axes=0, out_axes=0) -> Callable:
    """``method(loop)`` of each lane's own loop, vmapped over the lanes; the lanes' swept
    values (``{name: [lanes]}``) come first."""

    def per_lane(lane_values, *args):
        return method(build(lane_values))(*args)

    axes = (0, *in_axes) if isinstance(in_axes, tuple) else 0
    return branch.vmap(per_lane, in_axes=axes, out_axes=out_axes)


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
    supports = Supports(
        envs=frozenset({EnvKind.JAX}),
        policy_lags=(0, 1),
        lanes=True,
        why={"envs": "run one process per seed instead"},
    )

    def __init__(self, lanes: int):
        self.lanes = lanes

    def subject(self, request: Request) -> str:
        return f"{request.lanes} runs (num_seeds = {request.num_seeds} × the hyperparameter sweep)"

    def wrap(self, source: LoopSource) -> Loop:
        env = env_fragment(source)
        loop = source.build(env, {})
        population = source.population
        if population is not None:
            population = population.copying(loop.info.learner_side)
        return replicated(
            loop,
            source.request.lanes,
            source.sweep,
            lambda swept: source.build(env, swept),
            population,
            source.request.seeds,
        )

    def initial_key(self, request: Request) -> jax.Array:
        return seed_keys(request.seeds)

    def evaluation(self, run: Callable) -> Callable:
        return jax.vmap(run)  # each run's evaluation is the one its single run makes


def SeedLoop(loop: Loop, num_seeds: int, *args: Any, **kwargs: Any) -> Loop:  # noqa: N802
    """Deprecated: :func:`replicated`."""
    import warnings

    warnings.warn(
        "SeedLoop is deprecated; use jaxrl_fdg.policies.replication.replicated",
        DeprecationWarning,
        stacklevel=2,
    )
    return replicated(loop, num_seeds, *args, **kwargs)

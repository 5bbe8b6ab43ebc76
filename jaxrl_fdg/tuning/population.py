"""Populations across the lanes of one program: population-based training (Jaderberg et al.,
2017) and successive halving with restarts.

The lanes of a replicated run (``jaxrl_fdg.policies.replication``) train side by side; with
population-based training they also learn from each other. Every ``every`` iterations, inside the
compiled program and so in every fusion mode alike, the lanes are ranked by a metric averaged
since the last step:

* **exploit**: each lane of the worst ``quantile`` copies a lane drawn from the best
  ``quantile``: the state of every fragment outside the step body (the learners' parameters,
  optimizer moments and normaliser statistics, a replay) and its hyperparameters. The
  environments and the actor's own state (a recurrent policy's memory) stay the lane's own, so its
  episodes in progress go on;
* **explore**: each swept hyperparameter of a lane that copied is multiplied by one of
  ``factors``, drawn at random (clipped to its range, if it was given one), or, with chance
  ``resample``, drawn afresh from its range or its list of values.

The swept hyperparameters are therefore part of the loop state (``LoopState.population``),
traced into every program: changing them never recompiles. Every draw comes from ``key(seed)``
folded with the iteration, so the population's history depends on the seed alone.

Each lane's metrics carry its lineage: ``pbt/<name>`` its value of each swept hyperparameter after
the iteration, ``pbt/parent`` the lane it copied last (its index among the lanes; ``-1``: none
yet) and ``pbt/copied_at`` the iteration it did (``-1``), ``pbt/score`` the score it was ranked by
at the last step. A metric row keeps their values after its last iteration, and a run with
population-based training has a row at least every step's interval, so no copy goes unrecorded.

**Successive halving** (:class:`Halving`) ranks the lanes of a random search the same way every
``every`` iterations and restarts the worst ``drop`` of them on new points: a slot's whole state
is made afresh, as ``init`` makes it, from the new point's seed and values, drawn inside the
program. Each lane counts its own iterations from its point's start (the loop sees that count), so
a restarted point computes what it computes alone, for as many iterations as it gets. Its lineage
columns: ``halving/<name>``, ``halving/seed`` (its point's seed), ``halving/started_at`` (the run's
iteration its point started at) and ``halving/score``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.names import EPISODE_RETURN, EPISODE_RETURN_SUM, EPISODES
from jaxrl_fdg.core.types import LoopState, Metrics
from jaxrl_fdg.errors import ConfigError

# The metric ranked by default (EPISODE_RETURN): completed episodes' mean return since the step.
# The metric columns of a population's lineage (a row keeps their last value: run.metrics).
LINEAGE_PREFIXES = ("pbt/", "halving/")
_PBT_STREAM = 0x50B7  # folded into the run's seed: the population's draws are their own stream
_HALVING_STREAM = 0x5A1F


class Range(NamedTuple):
    """Where a swept hyperparameter may be drawn from afresh: ``kind`` ``loguniform`` or
    ``uniform`` between ``values[0]`` and ``values[1]`` (and perturbations are clipped to it), or
    ``choice`` among ``values`` (a grid's list)."""

    kind: str
    values: tuple[float, ...]


class PopulationState(NamedTuple):
    """Per lane (each leaf ``[lanes]``): its hyperparameters, the metric's sum and count since
    the last step, the score it was last ranked by, the lane it last copied and the iteration it
    did (-1, -1: none)."""

    hparams: dict[str, jax.Array]
    total: jax.Array
    count: jax.Array
    score: jax.Array
    parent: jax.Array
    copied_at: jax.Array


@dataclasses.dataclass(frozen=True)
class Ranked:
    """What both kinds of population share: a step every ``every`` iterations that ranks the
    lanes by ``metric`` (``episode_return`` or a learner metric's name; ``minimize`` ranks
    lower first) averaged since the last step, and where a swept hyperparameter is drawn
    afresh from (``ranges``); ``seed`` is the run's."""

    every: int
    metric: str
    minimize: bool
    ranges: Mapping[str, Range]
    seed: int

    # Whether each lane counts its own iterations (the loop state's counter is then per lane).
    own_iterations = False

    def copying(self, fragments: tuple[str, ...]) -> Ranked:
        """This population for a loop whose learner side is ``fragments`` (what a lane that
        copies another takes of its state; the rest, the environments and the actors' own
        state, stays the lane's)."""
        return self

    def _observe(self, population: Any, metrics: Metrics) -> Any:
        """``population`` with an iteration's ``metrics`` (each ``[lanes]``) added to its sum."""
        returns = EPISODE_RETURN_SUM in metrics  # an environment that reports its episodes
        if self.metric == EPISODE_RETURN and returns:
            total, count = metrics[EPISODE_RETURN_SUM], metrics[EPISODES]
        elif self.metric in metrics and self.metric != EPISODE_RETURN:
            total, count = metrics[self.metric], jnp.ones_like(population.count)
        else:
            names = sorted(k for k in metrics if not k.startswith(LINEAGE_PREFIXES))
            raise ConfigError(
                f"rank_metric = {self.metric!r} is not a metric of this run (valid: "
                f"{', '.join([EPISODE_RETURN] * returns + names)})"
            )
        return population._replace(
            total=population.total + total.astype(jnp.float32),
            count=population.count + count.astype(jnp.float32),
        )

    def _ranked(self, population: Any) -> tuple[jax.Array, jax.Array]:
        """``(score, lanes worst first)``. A lane with no episode since the last step keeps its
        last score."""
        score = jnp.where(
            population.count > 0,
            population.total / jnp.maximum(population.count, 1),
            population.score,
        )
        return score, jnp.argsort(score if not self.minimize else -score, stable=True)

    def _draw(self, name: str, key: jax.Array, lanes: int) -> jax.Array:
        """``lanes`` values of hyperparameter ``name`` drawn afresh from its range or list."""
        drawn_from = self.ranges[name]
        if drawn_from.kind == "choice":
            choices = jnp.asarray(drawn_from.values, jnp.float32)
            return choices[jax.random.randint(key, (lanes,), 0, len(choices))]
        low, high = drawn_from.values
        if drawn_from.kind == "loguniform":
            low, high = math.log(low), math.log(high)
        fresh = jax.random.uniform(key, (lanes,), jnp.float32, low, high)
        return jnp.exp(fresh) if drawn_from.kind == "loguniform" else fresh


@dataclasses.dataclass(frozen=True)
class Population(Ranked):
    """Population-based training's settings; its functions work on all lanes at once.

    Attributes:
      every: iterations between steps (a step follows the learn phase of each multiple).
      quantile: the fraction of lanes that copy, and that are copied (``0 < quantile <= 0.5``).
      factors: what a copied hyperparameter is multiplied by, one drawn per lane and name.
      resample: the chance a copied hyperparameter is drawn afresh instead.
      metric: ``episode_return`` or a learner metric's name; ``minimize`` ranks lower first.
      ranges: per swept hyperparameter, where it is drawn afresh from.
      seed: the run's seed.
      copied: the fragments whose state a lane copies (set by the replication).
    """

    quantile: float = 0.25
    factors: tuple[float, ...] = (0.8, 1.25)
    resample: float = 0.25
    copied: tuple[str, ...] = ()

    def copying(self, fragments: tuple[str, ...]) -> Population:
        return dataclasses.replace(self, copied=tuple(fragments))

    def movers(self, lanes: int) -> int:
        """How many lanes copy at each step (as many are copied from)."""
        return math.floor(lanes * self.quantile)

    def start(self, hparams: Mapping[str, jax.Array], seeds: Sequence[int]) -> PopulationState:
        """The state a run starts from (the replication's entry point; ``seeds`` unused)."""
        return self.init(hparams)

    def step(
        self, population: PopulationState, state: LoopState, metrics: Metrics, restart: Callable
    ) -> tuple[PopulationState, LoopState, Metrics]:
        """:meth:`after_learn` on a loop state (the replication's entry point)."""
        population, fragments, metrics = self.after_learn(
            population, state.fragments, state.iteration, metrics
        )
        return population, state._replace(fragments=fragments), metrics

    def init(self, hparams: Mapping[str, jax.Array]) -> PopulationState:
        """The state before the first step, from each lane's initial hyperparameters."""
        lanes = next(iter(hparams.values())).shape[0]
        zeros, none = jnp.zeros((lanes,), jnp.float32), jnp.full((lanes,), -1, jnp.int32)
        hparams = {k: jnp.asarray(v, jnp.float32) for k, v in hparams.items()}
        return PopulationState(hparams, zeros, zeros, zeros, none, none)

    def after_learn(
        self, population: PopulationState, fragments: dict, iteration: jax.Array, metrics: Metrics
    ) -> tuple[PopulationState, dict, Metrics]:
        """Fold an iteration's ``metrics`` (each ``[lanes]``) into the score, then, on a multiple
        of ``every`` (``iteration``: iterations completed, one count for all lanes), run a step.
        Returns the population, the fragments' states and the metrics with the lineage's."""
        population = self._observe(population, metrics)
        due = iteration % self.every == 0
        population, fragments = jax.lax.cond(
            due, self._step, lambda p, f, _: (p, f), population, fragments, iteration
        )
        lineage = _lineage(
            "pbt/",
            population.hparams,
            parent=population.parent,
            copied_at=population.copied_at,
            score=population.score,
        )
        return population, fragments, {**metrics, **lineage}

    def _step(
        self, population: PopulationState, fragments: dict, iteration: jax.Array
    ) -> tuple[PopulationState, dict]:
        """Exploit and explore: the worst lanes copy the best and change their hyperparameters."""
        lanes = population.score.shape[0]
        movers = self.movers(lanes)
        key = jax.random.fold_in(jax.random.key(self.seed ^ _PBT_STREAM), iteration)
        k_donor, k_explore = jax.random.split(key)
        score, order = self._ranked(population)
        worst, best = order[:movers], order[lanes - movers :]
        donors = best[jax.random.randint(k_donor, (movers,), 0, movers)]
        source = jnp.arange(lanes).at[worst].set(donors)
        moved = jnp.zeros((lanes,), bool).at[worst].set(True)
        fragments = {
            name: jax.tree.map(lambda x: x[source], state) if name in self.copied else state
            for name, state in fragments.items()
        }
        hparams = {}
        for i, (name, values) in enumerate(population.hparams.items()):
            copied = values[source]
            explored = self._explore(name, copied, jax.random.fold_in(k_explore, i))
            hparams[name] = jnp.where(moved, explored, copied)
        zeros = jnp.zeros_like(population.total)
        population = PopulationState(
            hparams,
            zeros,
            zeros,
            score[source],
            jnp.where(moved, source, population.parent),
            jnp.where(moved, iteration, population.copied_at),
        )
        return population, fragments

    def _explore(self, name: str, values: jax.Array, key: jax.Array) -> jax.Array:
        """Each lane's ``values`` perturbed by a factor, or drawn afresh with chance
        ``resample``."""
        lanes = values.shape[0]
        k_factor, k_choose, k_draw = jax.random.split(key, 3)
        factors = jnp.asarray(self.factors, jnp.float32)
        perturbed = values * factors[jax.random.randint(k_factor, (lanes,), 0, len(self.factors))]
        if self.ranges[name].kind != "choice":
            perturbed = jnp.clip(perturbed, *self.ranges[name].values)
        fresh = self._draw(name, k_draw, lanes)
        redraw = jax.random.uniform(k_choose, (lanes,)) < self.resample
        return jnp.where(redraw, fresh, perturbed)


class HalvingState(NamedTuple):
    """Per lane (each leaf ``[lanes]``): its point's hyperparameters, the metric's sum and count
    since the last step, its last score, its point's seed and the run's iteration it started at."""

    hparams: dict[str, jax.Array]
    total: jax.Array
    count: jax.Array
    score: jax.Array
    seed: jax.Array
    started_at: jax.Array


@dataclasses.dataclass(frozen=True)
class Halving(Ranked):
    """Successive halving with restarts: every ``every`` iterations the worst ``drop`` of the
    lanes start new points, drawn from ``ranges``. The ``k``-th point started at step ``r``
    (``r = 1, 2, ...``) has seed ``seed + lanes + (r - 1) × dropped + k``: after every seed of the
    run's own lanes. No step follows iteration ``until`` (the run's last; an extended run's first
    budget, ``schedule_steps``, like every schedule's horizon), whose lanes are the run's
    result."""

    drop: float = 0.5
    lanes: int = 0
    until: int = 2**31 - 1

    own_iterations = True

    def dropped(self, lanes: int) -> int:
        """How many lanes start new points at each step."""
        return math.floor(lanes * self.drop)

    def start(self, hparams: Mapping[str, jax.Array], seeds: Sequence[int]) -> HalvingState:
        """The state a run starts from: each lane on its own point, from iteration 0. ``seeds``
        (the lanes') are below 2**31 (``check`` refuses a run whose points' would not be)."""
        seeds = jnp.asarray(seeds, jnp.int32)
        zeros = jnp.zeros(seeds.shape, jnp.float32)
        hparams = {k: jnp.asarray(v, jnp.float32) for k, v in hparams.items()}
        return HalvingState(hparams, zeros, zeros, zeros, seeds, jnp.zeros_like(seeds))

    def local(self, population: HalvingState, iteration: jax.Array) -> jax.Array:
        """Each lane's own iteration count: the run's less its point's start."""
        return iteration - population.started_at

    def step(
        self, population: HalvingState, state: LoopState, metrics: Metrics, restart: Callable
    ) -> tuple[HalvingState, LoopState, Metrics]:
        """Fold ``metrics`` into the score; on a multiple of ``every`` (``state.iteration``, the
        run's count), restart the worst lanes: ``restart(hparams, keys)`` is the loop state
        ``init`` makes for every lane from those values and keys, of which the restarted lanes
        keep theirs."""
        population = self._observe(population, metrics)
        due = (state.iteration % self.every == 0) & (state.iteration < self.until)
        population, state = jax.lax.cond(
            due,
            functools.partial(self._restart, restart=restart),
            lambda p, s: (p, s),
            population,
            state,
        )
        lineage = _lineage(
            "halving/",
            population.hparams,
            seed=population.seed,
            started_at=population.started_at,
            score=population.score,
        )
        return population, state, {**metrics, **lineage}

    def _restart(
        self, population: HalvingState, state: LoopState, restart: Callable
    ) -> tuple[HalvingState, LoopState]:
        lanes = population.score.shape[0]
        drops = self.dropped(lanes)
        score, order = self._ranked(population)
        worst = order[:drops]
        rung = state.iteration // self.every
        new_seeds = self.seed + self.lanes + (rung - 1) * drops + jnp.arange(drops, dtype=jnp.int32)
        seeds = population.seed.at[worst].set(new_seeds.astype(jnp.int32))
        restarted = jnp.zeros((lanes,), bool).at[worst].set(True)
        base = jax.random.key(self.seed ^ _HALVING_STREAM)
        hparams = {}
        for i, (name, values) in enumerate(population.hparams.items()):

            def draw(seed, i=i, name=name):  # a point's values depend on its seed alone
                return self._draw(name, jax.random.fold_in(jax.random.fold_in(base, seed), i), 1)[0]

            hparams[name] = jnp.where(restarted, jax.vmap(draw)(seeds), values)
        fresh = restart(hparams, jax.vmap(jax.random.key)(seeds))

        def pick(new: jax.Array, old: jax.Array) -> jax.Array:
            return jnp.where(restarted.reshape((lanes,) + (1,) * (old.ndim - 1)), new, old)

        zeros = jnp.zeros_like(population.total)
        population = HalvingState(
            hparams,
            zeros,
            zeros,
            jnp.where(restarted, 0.0, score),
            seeds,
            jnp.where(restarted, state.iteration, population.started_at),
        )
        fragments = jax.tree.map(pick, fresh.fragments, state.fragments)
        return population, state._replace(fragments=fragments, key=pick(fresh.key, state.key))


def _lineage(prefix: str, hparams: Mapping[str, jax.Array], **columns: jax.Array) -> Metrics:
    """A population's metric columns: each hyperparameter's and each of ``columns``, as float32
    (metric rows hold floats), named ``prefix + name``."""
    return {prefix + k: v.astype(jnp.float32) for k, v in {**hparams, **columns}.items()}

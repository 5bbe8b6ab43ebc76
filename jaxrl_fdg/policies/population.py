"""Population-based training across the lanes of one program (Jaderberg et al., 2017).

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

The swept hyperparameters are therefore part of the loop state (:data:`POPULATION`), traced into
every program: changing them never recompiles. Every draw comes from ``key(seed)`` folded with the
iteration, so the population's history depends on the seed alone.

Each lane's metrics carry its lineage: ``pbt/<name>`` its value of each swept hyperparameter after
the iteration, ``pbt/parent`` the lane it copied last (its index among the lanes; ``-1``: none
yet) and ``pbt/copied_at`` the iteration it did (``-1``), ``pbt/score`` the score it was ranked by
at the last step. A metric row keeps their values after its last iteration, and a run with
population-based training has a row at least every step's interval, so no copy goes unrecorded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.types import Metrics
from jaxrl_fdg.errors import ConfigError

# The population's state, beside the fragments' in ``LoopState.fragments``.
POPULATION = "_population"
# The metric ranked by default: completed episodes' mean return since the last step.
EPISODE_RETURN = "episode_return"
_PBT_STREAM = 0x50B7  # folded into the run's seed: the population's draws are their own stream


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
class Population:
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

    every: int
    quantile: float
    factors: tuple[float, ...]
    resample: float
    metric: str
    minimize: bool
    ranges: Mapping[str, Range]
    seed: int
    copied: tuple[str, ...] = ()

    def movers(self, lanes: int) -> int:
        """How many lanes copy at each step (as many are copied from)."""
        return math.floor(lanes * self.quantile)

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
        lineage = {f"pbt/{k}": v for k, v in population.hparams.items()}
        lineage["pbt/parent"] = population.parent.astype(jnp.float32)
        lineage["pbt/copied_at"] = population.copied_at.astype(jnp.float32)
        lineage["pbt/score"] = population.score
        return population, fragments, {**metrics, **lineage}

    def _observe(self, population: PopulationState, metrics: Metrics) -> PopulationState:
        if self.metric == EPISODE_RETURN:
            total, count = metrics["episode_return_sum"], metrics["episodes"]
        else:
            if self.metric not in metrics:
                names = sorted(k for k in metrics if not k.startswith("pbt/"))
                raise ConfigError(
                    f"pbt_metric = {self.metric!r} is not a metric of this run (valid: "
                    f"{EPISODE_RETURN}, {', '.join(names)})"
                )
            total, count = metrics[self.metric], jnp.ones_like(population.count)
        return population._replace(
            total=population.total + total.astype(jnp.float32),
            count=population.count + count.astype(jnp.float32),
        )

    def _step(
        self, population: PopulationState, fragments: dict, iteration: jax.Array
    ) -> tuple[PopulationState, dict]:
        """Exploit and explore: the worst lanes copy the best and change their hyperparameters."""
        lanes = population.score.shape[0]
        movers = self.movers(lanes)
        key = jax.random.fold_in(jax.random.key(self.seed ^ _PBT_STREAM), iteration)
        k_donor, k_explore = jax.random.split(key)
        # A lane with no episode since the last step keeps its last score.
        score = jnp.where(
            population.count > 0,
            population.total / jnp.maximum(population.count, 1),
            population.score,
        )
        order = jnp.argsort(score if not self.minimize else -score, stable=True)  # worst first
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
        drawn_from = self.ranges[name]
        if drawn_from.kind == "choice":
            choices = jnp.asarray(drawn_from.values, jnp.float32)
            fresh = choices[jax.random.randint(k_draw, (lanes,), 0, len(choices))]
        else:
            low, high = drawn_from.values
            perturbed = jnp.clip(perturbed, low, high)
            if drawn_from.kind == "loguniform":
                low, high = math.log(low), math.log(high)
            fresh = jax.random.uniform(k_draw, (lanes,), jnp.float32, low, high)
            fresh = jnp.exp(fresh) if drawn_from.kind == "loguniform" else fresh
        redraw = jax.random.uniform(k_choose, (lanes,)) < self.resample
        return jnp.where(redraw, fresh, perturbed)


def factors(text: str) -> tuple[float, ...]:
    """``pbt_perturb``'s factors (``"0.8,1.25"``), or a :class:`ConfigError`."""
    try:
        values = tuple(float(v) for v in str(text).split(","))
    except ValueError:
        values = ()
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ConfigError(
            f"pbt_perturb = {text!r}: a comma list of positive factors, e.g. 0.8,1.25"
        )
    return values


def check(config: Any, sweep: Mapping[str, Any], lanes: int) -> None:
    """The population-based training settings of ``config`` (a ``TrainConfig``), for a run of
    ``lanes`` lanes sweeping ``sweep``; a :class:`ConfigError` names a wrong one."""
    if not isinstance(config.pbt_every, int) or config.pbt_every < 0:
        raise ConfigError(
            f"pbt_every must be a non-negative number of env steps, got {config.pbt_every!r}"
        )
    if not config.pbt_every:
        return
    if config.pbt_every < config.steps_per_iteration:
        raise ConfigError(
            f"pbt_every = {config.pbt_every} is less than one iteration "
            f"(num_envs × rollout_len = {config.steps_per_iteration} env steps)"
        )
    if not sweep:
        raise ConfigError(
            "pbt_every: population-based training explores swept hyperparameters; sweep at "
            "least one (e.g. --lr 1e-3,3e-4 or --lr loguniform:1e-4:1e-2 --num-lanes 8)"
        )
    if not 0 < config.pbt_quantile <= 0.5:
        raise ConfigError(f"pbt_quantile must be in (0, 0.5], got {config.pbt_quantile!r}")
    if math.floor(lanes * config.pbt_quantile) < 1:
        raise ConfigError(
            f"pbt_quantile = {config.pbt_quantile} of {lanes} lanes is no lane: use more lanes "
            f"(at least {math.ceil(1 / config.pbt_quantile)}) or a larger quantile"
        )
    factors(config.pbt_perturb)
    if not 0 <= config.pbt_resample <= 1:
        raise ConfigError(f"pbt_resample must be in [0, 1], got {config.pbt_resample!r}")
    if not str(config.pbt_metric).lstrip("-"):
        raise ConfigError(f"pbt_metric = {config.pbt_metric!r}: name a metric")


def from_config(
    config: Any, sweep: Mapping[str, Any], copied: tuple[str, ...]
) -> Population | None:
    """The :class:`Population` ``config`` asks for (``None`` without ``pbt_every``): ``sweep``
    maps each swept hyperparameter to its list of values or its range (an object with ``kind``,
    ``low`` and ``high``); ``copied`` names the fragments a lane copies."""
    if not config.pbt_every:
        return None
    ranges = {
        name: Range("choice", tuple(swept))
        if isinstance(swept, tuple)
        else Range(swept.kind, (swept.low, swept.high))
        for name, swept in sweep.items()
    }
    metric = str(config.pbt_metric)
    return Population(
        every=config.pbt_every // config.steps_per_iteration,
        quantile=config.pbt_quantile,
        factors=factors(config.pbt_perturb),
        resample=config.pbt_resample,
        metric=metric.lstrip("-"),
        minimize=metric.startswith("-"),
        ranges=ranges,
        seed=config.seed,
        copied=copied,
    )

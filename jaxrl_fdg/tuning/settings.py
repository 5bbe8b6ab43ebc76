"""The settings of a population across a run's lanes: checked with the configuration, and the
:class:`~jaxrl_fdg.tuning.population.Population` or
:class:`~jaxrl_fdg.tuning.population.Halving` they describe. ``config`` is a run's
``TrainConfig`` (read, never imported: the configuration sits above this package)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.tuning.population import Halving, Population, Range


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
    """The population settings of ``config`` (a ``TrainConfig``) for a run of ``lanes`` lanes
    sweeping ``sweep``; a :class:`ConfigError` names a wrong one."""
    for name in ("pbt_every", "halving_every"):
        every = getattr(config, name)
        if not isinstance(every, int) or isinstance(every, bool) or every < 0:
            raise ConfigError(f"{name} must be a non-negative number of env steps, got {every!r}")
        if every and every < config.steps_per_iteration:
            raise ConfigError(
                f"{name} = {every} is less than one iteration "
                f"(num_envs × rollout_len = {config.steps_per_iteration} env steps)"
            )
    if not (config.pbt_every or config.halving_every):
        return
    if config.pbt_every and config.halving_every:
        raise ConfigError(
            "pbt_every and halving_every: a population either copies its best lanes (PBT) or "
            "restarts its worst (successive halving); choose one"
        )
    name = "pbt_every" if config.pbt_every else "halving_every"
    if not sweep:
        raise ConfigError(
            f"{name}: a population explores swept hyperparameters; sweep at least one (e.g. "
            "--lr 1e-3,3e-4 or --lr loguniform:1e-4:1e-2 --num-lanes 8)"
        )
    if not str(config.rank_metric).lstrip("-"):
        raise ConfigError(f"rank_metric = {config.rank_metric!r}: name a metric")
    if config.pbt_every:
        _check_pbt(config, lanes)
        return
    if config.policy_lag:
        raise ConfigError(
            "halving_every with policy_lag = 1: a restarted lane would learn from the rollout "
            "its predecessor collected; use policy_lag = 0"
        )
    _fraction("halving_drop", config.halving_drop, lanes, 1.0)
    points = config.num_iterations // (config.halving_every // config.steps_per_iteration)
    last = config.seed + lanes + points * math.floor(lanes * config.halving_drop)
    if last > 2**31 - 1:
        raise ConfigError(
            f"seed = {config.seed}: the points successive halving starts take seeds up to "
            f"{last:,}, past 2**31 - 1; use a smaller seed"
        )


def _check_pbt(config: Any, lanes: int) -> None:
    _fraction("pbt_quantile", config.pbt_quantile, lanes, 0.5)
    factors(config.pbt_perturb)
    if not 0 <= config.pbt_resample <= 1:
        raise ConfigError(f"pbt_resample must be in [0, 1], got {config.pbt_resample!r}")


def _fraction(name: str, value: float, lanes: int, most: float) -> None:
    """A fraction of the lanes, in ``(0, most]`` (``(0, 1)`` for ``most = 1``), that is at
    least one lane."""
    inside = 0 < value < 1 if most == 1 else 0 < value <= most
    if not inside:
        interval = "(0, 1)" if most == 1 else f"(0, {most}]"
        raise ConfigError(f"{name} must be in {interval}, got {value!r}")
    if math.floor(lanes * value) < 1:
        raise ConfigError(
            f"{name} = {value} of {lanes} lanes is no lane: use more lanes "
            f"(at least {math.ceil(1 / value)}) or a larger fraction"
        )


def from_config(config: Any, sweep: Mapping[str, Any], lanes: int) -> Population | Halving | None:
    """The population ``config`` asks for (``None`` without ``pbt_every`` or
    ``halving_every``): ``sweep`` maps each swept hyperparameter to its list of values or its
    range (an object with ``kind``, ``low`` and ``high``); ``lanes`` counts the run's lanes.
    The replication says which fragments a PBT lane copies (``Ranked.copying``)."""
    every = config.pbt_every or config.halving_every
    if not every:
        return None
    ranges = {
        name: Range("choice", tuple(swept))
        if isinstance(swept, tuple)
        else Range(swept.kind, (swept.low, swept.high))
        for name, swept in sweep.items()
    }
    metric = str(config.rank_metric)
    ranked = dict(
        every=every // config.steps_per_iteration,
        metric=metric.lstrip("-"),
        minimize=metric.startswith("-"),
        ranges=ranges,
        seed=config.seed,
    )
    if config.halving_every:
        return Halving(**ranked, drop=config.halving_drop, lanes=lanes, until=config.num_iterations)
    return Population(
        **ranked,
        quantile=config.pbt_quantile,
        factors=factors(config.pbt_perturb),
        resample=config.pbt_resample,
    )

"""Aggregate scores over runs with stratified bootstrap confidence intervals.

The statistics of Agarwal et al. 2021, "Deep Reinforcement Learning at the Edge of the Statistical
Precipice" (the ``rliable`` library), computed with ``scipy.stats.bootstrap`` (rliable itself
pins ``arch<8``, whose releases fail to import beside pandas 3):

- IQM, the interquartile mean: the mean of the middle 50% of all run scores (25% trimmed from
  each end, ``scipy.stats.trim_mean``). Robust to an outlier seed, yet uses half the runs.
- mean and median: of the tasks' mean scores (each stratum's mean first, as rliable's
  ``aggregate_mean`` and ``aggregate_median`` do); with one task, both are that task's mean.
- optimality gap: ``γ − mean(min(score, γ))``, how far runs fall short of a target ``γ``
  (1 for scores normalized to ``[0, 1]``); only meaningful for normalized scores.
- performance profile: ``P(score > τ)`` for each threshold ``τ``, the run-score distribution.

Scores come in strata (``[runs]`` each: one task, one environment); the bootstrap resamples runs
within each stratum independently, so each resample keeps every stratum's run count (a stratified
bootstrap). The intervals are percentile intervals, as ``rliable`` computes them; a stratum whose
runs all score alike gives a zero-width interval, not a NaN.

scipy is imported when a statistic is computed, never when the library is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

AGGREGATES = ("median", "iqm", "mean", "optimality_gap")
CONFIDENCE = 0.95
RESAMPLES = 5000


class Interval(NamedTuple):
    """A point estimate and its confidence interval."""

    point: float
    low: float
    high: float


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: 25% of the scores cut from each end, the rest averaged.
    E.g. ``iqm([1, ..., 8]) = mean(3, 4, 5, 6) = 4.5``."""
    from scipy.stats import trim_mean

    return trim_mean(scores, 0.25, axis=axis)


def optimality_gap(scores: np.ndarray, axis: int = -1, gamma: float = 1.0) -> np.ndarray:
    """``γ − mean(min(scores, γ))``: the shortfall from the target ``γ``; scores above it earn
    nothing extra. E.g. ``[0.5, 1.0, 2.0]`` with ``γ = 1``: ``1 − (0.5 + 1 + 1)/3 = 1/6``."""
    return gamma - np.mean(np.minimum(scores, gamma), axis=axis)


_POOLED: dict[str, Callable[..., np.ndarray]] = {
    "iqm": iqm,
    "optimality_gap": optimality_gap,
}
_OF_TASK_MEANS: dict[str, Callable[..., np.ndarray]] = {
    "median": lambda means: np.median(means, axis=-1),
    "mean": lambda means: np.mean(means, axis=-1),
}


def aggregate(strata: Sequence[np.ndarray], names: Sequence[str] = AGGREGATES) -> np.ndarray:
    """``names``' statistics of ``strata`` (each ``[..., runs]``, one per task), stacked:
    ``[len(names), ...]``. IQM and optimality gap pool every run; mean and median are taken
    over the tasks' means, as rliable defines them."""
    data = [np.asarray(s, float) for s in strata]
    pooled = np.concatenate(data, axis=-1)
    means = np.stack([np.mean(s, axis=-1) for s in data], axis=-1)
    return np.stack(
        [
            _POOLED[name](pooled, axis=-1) if name in _POOLED else _OF_TASK_MEANS[name](means)
            for name in names
        ]
    )


def interval_estimates(
    strata: Sequence[np.ndarray],
    names: Sequence[str] = AGGREGATES,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> dict[str, Interval]:
    """Each aggregate in ``names`` of the scores in ``strata`` (``[runs]`` each), with its
    stratified bootstrap percentile interval."""
    points = aggregate(strata, names)
    low, high = _bootstrap(strata, lambda *s: aggregate(s, names), resamples, confidence, seed)
    return {
        name: Interval(float(points[i]), float(low[i]), float(high[i]))
        for i, name in enumerate(names)
    }


def performance_profile(
    strata: Sequence[np.ndarray],
    thresholds: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fraction of runs scoring above each threshold ``τ`` (``[T]``), and its stratified
    bootstrap interval (``low``, ``high``, ``[T]`` each)."""
    thresholds = np.asarray(thresholds, float)

    def statistic(*strata: np.ndarray) -> np.ndarray:  # [..., runs] each -> [T, ...]
        pooled = np.concatenate(strata, axis=-1)
        return np.moveaxis(np.mean(pooled[..., None, :] > thresholds[:, None], axis=-1), -1, 0)

    fraction = statistic(*[np.asarray(s, float) for s in strata])
    low, high = _bootstrap(strata, statistic, resamples, confidence, seed)
    return fraction, low, high


def _bootstrap(strata, statistic, resamples, confidence, seed) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``statistic(*strata)`` (runs on the last axis of each stratum;
    values ``[K, ...]``) under the stratified bootstrap. A stratum of one run is the same in every
    resample, so it is held fixed rather than handed to scipy, which resamples two or more."""
    from scipy.stats import bootstrap

    data = [np.asarray(s, float) for s in strata]
    varying = [i for i, s in enumerate(data) if len(s) > 1]
    if not varying:
        point = statistic(*data)
        return point, point

    def resampled(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        samples = [np.moveaxis(s, axis, -1) for s in samples]
        batch = samples[0].shape[:-1]
        full = [np.broadcast_to(s, (*batch, *s.shape)) for s in data]
        for i, sample in zip(varying, samples, strict=True):
            full[i] = sample
        return statistic(*full)

    result = bootstrap(
        tuple(data[i] for i in varying),
        resampled,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)


def probability_of_improvement(
    x: Sequence[np.ndarray],
    y: Sequence[np.ndarray],
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Interval:
    """``P(X > Y)``: the probability that a run of algorithm X scores above a run of Y on a
    task drawn at random, a tie counting half (the Mann-Whitney U statistic over ``N·K`` pairs,
    averaged over tasks), with its stratified bootstrap interval: X's and Y's runs on each task
    are resampled independently. ``x[m]`` and ``y[m]`` are the runs on task ``m``.
    E.g. ``x = [[2, 3]], y = [[1, 3]]``: pairs 2>1, 2<3, 3>1, 3=3 give ``(1 + 0 + 1 + ½)/4``."""
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} tasks and y {len(y)}")
    tasks = len(x)

    def statistic(*strata: np.ndarray) -> np.ndarray:  # [..., runs] each -> [1, ...]
        per_task = []
        for a, b in zip(strata[:tasks], strata[tasks:], strict=True):
            a, b = np.broadcast_arrays(a[..., :, None], b[..., None, :])
            per_task.append(np.mean((a > b) + 0.5 * (a == b), axis=(-2, -1)))
        return np.mean(per_task, axis=0)[None]

    data = [np.asarray(s, float) for s in (*x, *y)]
    point = float(statistic(*data)[0])
    low, high = _bootstrap(data, statistic, resamples, confidence, seed)
    return Interval(point, float(low[0]), float(high[0]))

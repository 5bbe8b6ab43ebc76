"""Aggregate scores over runs with stratified bootstrap confidence intervals.

The statistics of Agarwal et al. 2021, "Deep Reinforcement Learning at the Edge of the Statistical
Precipice" (the ``rliable`` library), computed with ``scipy.stats.bootstrap`` (rliable itself
pins ``arch<8``, whose releases fail to import beside pandas 3):

- IQM, the interquartile mean: the mean of the middle 50% of all run scores (25% trimmed from
  each end, ``scipy.stats.trim_mean``). Robust to an outlier seed, yet uses half the runs.
- mean and median of all run scores.
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


_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "median": lambda s, axis: np.median(s, axis=axis),
    "iqm": iqm,
    "mean": lambda s, axis: np.mean(s, axis=axis),
    "optimality_gap": optimality_gap,
}


def aggregate(strata: Sequence[np.ndarray], names: Sequence[str] = AGGREGATES) -> np.ndarray:
    """``names``' statistics of the pooled scores of ``strata`` (each ``[..., runs]``), stacked:
    ``[len(names), ...]``."""
    pooled = np.concatenate([np.asarray(s, float) for s in strata], axis=-1)
    return np.stack([_FUNCTIONS[name](pooled, axis=-1) for name in names])


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

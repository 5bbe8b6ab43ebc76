"""The report's statistics agree with rliable's on the same scores.

rliable's point estimates (``rliable.metrics``) are compared exactly. Its intervals come from
``rliable.library``, which imports ``arch`` and fails beside pandas 3 here (docs/decisions.md,
"Comparing across seeds"); its stratified bootstrap is a few lines, written out below as it
resamples (each task's runs with replacement, independently, percentile interval), and ours must
land within the Monte Carlo error of it."""

import numpy as np
import pytest

from jaxrl_fdg import stats

metrics = pytest.importorskip("rliable.metrics")


def _scores(seed=0, runs=5, tasks=4):
    rng = np.random.default_rng(seed)
    return rng.gamma(2.0, 0.4, size=(runs, tasks))  # rliable's layout: [runs, tasks]


def _strata(matrix):
    return [matrix[:, m] for m in range(matrix.shape[1])]


def test_point_estimates_equal_rliables():
    x = _scores()
    ours = stats.aggregate(_strata(x))
    assert ours[stats.AGGREGATES.index("median")] == pytest.approx(metrics.aggregate_median(x))
    assert ours[stats.AGGREGATES.index("iqm")] == pytest.approx(metrics.aggregate_iqm(x))
    assert ours[stats.AGGREGATES.index("mean")] == pytest.approx(metrics.aggregate_mean(x))
    assert ours[stats.AGGREGATES.index("optimality_gap")] == pytest.approx(
        metrics.aggregate_optimality_gap(x)
    )
    tau = np.linspace(0, 2, 9)
    fraction, _, _ = stats.performance_profile(_strata(x), tau, resamples=50)
    assert fraction == pytest.approx([np.mean(x > t) for t in tau])


@pytest.mark.parametrize("seed", [0, 1])
def test_probability_of_improvement_equals_rliables(seed):
    x, y = _scores(seed), _scores(seed + 10) * 0.9
    y[0, 0] = x[0, 0]  # a tie counts half
    ours = stats.probability_of_improvement(_strata(x), _strata(y), resamples=100)
    assert ours.point == pytest.approx(metrics.probability_of_improvement(x, y))


def _rliable_bootstrap(statistic, matrices, resamples, rng):
    """rliable's StratifiedBootstrap: per task, the runs drawn with replacement."""
    values = []
    for _ in range(resamples):
        drawn = []
        for m in matrices:
            index = rng.integers(0, m.shape[0], size=m.shape)
            drawn.append(np.take_along_axis(m, index, axis=0))
        values.append(statistic(*drawn))
    return np.percentile(values, [2.5, 97.5])


def test_intervals_agree_with_rliables_bootstrap():
    x, y = _scores(3, runs=10), _scores(4, runs=10) * 0.8
    rng = np.random.default_rng(7)
    iqm = stats.interval_estimates(_strata(x), ("iqm",), resamples=4000)["iqm"]
    low, high = _rliable_bootstrap(metrics.aggregate_iqm, [x], 4000, rng)
    width = high - low
    assert iqm.low == pytest.approx(low, abs=0.05 * width)
    assert iqm.high == pytest.approx(high, abs=0.05 * width)
    poi = stats.probability_of_improvement(_strata(x), _strata(y), resamples=4000)
    low, high = _rliable_bootstrap(metrics.probability_of_improvement, [x, y], 2000, rng)
    width = high - low
    assert poi.low == pytest.approx(low, abs=0.06 * width)
    assert poi.high == pytest.approx(high, abs=0.06 * width)

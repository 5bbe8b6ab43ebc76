"""Aggregates over runs and their stratified bootstrap intervals: known answers, and scipy's own
numbers for the same data, statistic and random stream."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from jaxrl_fdg import stats

RESAMPLES = 2000


def test_aggregates_known_answers():
    scores = np.arange(1.0, 9.0)  # 1 .. 8
    # IQM: 2 of 8 cut from each end, mean(3, 4, 5, 6) = 4.5; mean 4.5, and the median of one
    # task is its mean (rliable takes it over the tasks' means).
    np.testing.assert_allclose(stats.aggregate([scores], ("iqm", "median", "mean")), 4.5)
    # 1..7 and 100: the outlier moves the mean by 11.5, the IQM not at all.
    outlier = np.array([1, 2, 3, 4, 5, 6, 7, 100.0])
    assert stats.iqm(outlier) == 4.5 and np.mean(outlier) == 16.0
    assert stats.iqm(outlier) == scipy_stats.trim_mean(outlier, 0.25)
    # Optimality gap with γ = 1: 1 − mean(0.5, 1, 1) = 1/6; the 2.0 earns nothing above 1.
    assert stats.optimality_gap(np.array([0.5, 1.0, 2.0])) == pytest.approx(1 / 6)


def test_interval_is_scipys_percentile_bootstrap():
    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.9, 0.2, 0.55, 0.6, 0.95, 0.05])
    ours = stats.interval_estimates([scores], resamples=RESAMPLES, seed=3)
    # With one task, the median (rliable's: over the tasks' means) is that task's mean.
    for name, function in (("iqm", stats.iqm), ("mean", np.mean), ("median", np.mean)):
        theirs = scipy_stats.bootstrap(
            (scores,),
            function,
            n_resamples=RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(3),
        ).confidence_interval
        assert ours[name].point == pytest.approx(function(scores))
        assert (ours[name].low, ours[name].high) == pytest.approx((theirs.low, theirs.high))
        assert ours[name].low < ours[name].point < ours[name].high


def test_bootstrap_is_stratified():
    # Every resample keeps 4 runs of the first stratum and 2 of the second, so the pooled IQM
    # (of 0, 0, 0, 0, 1, 1: the middle four are 0, 0, 0, 1) is 1/4 in all of them: a zero-width
    # interval. Pooling before resampling would vary it. The mean, over the tasks' means, is 1/2.
    strata = [np.zeros(4), np.ones(2)]
    iqm = stats.interval_estimates(strata, ("iqm",), resamples=RESAMPLES)["iqm"]
    assert iqm == pytest.approx((1 / 4, 1 / 4, 1 / 4))
    mean = stats.interval_estimates(strata, ("mean",), resamples=RESAMPLES)["mean"]
    assert mean == pytest.approx((1 / 2, 1 / 2, 1 / 2))
    pooled = stats.interval_estimates([np.concatenate(strata)], ("mean",), resamples=RESAMPLES)[
        "mean"
    ]
    assert pooled.low < 1 / 3 < pooled.high

    # Strata of unequal sizes: scipy's own multi-sample bootstrap of the pooled IQM.
    a, b = np.array([1.0, 5.0, 2.0, 8.0, 3.0]), np.array([10.0, 12.0, 11.0])
    ours = stats.interval_estimates([a, b], ("iqm",), resamples=RESAMPLES, seed=1)["iqm"]
    theirs = scipy_stats.bootstrap(
        (a, b),
        lambda x, y, axis: stats.iqm(np.concatenate([x, y], axis=axis), axis=axis),
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(1),
    ).confidence_interval
    assert (ours.low, ours.high) == pytest.approx((theirs.low, theirs.high))


def test_a_stratum_of_one_run_is_held_fixed():
    a = np.array([1.0, 5.0, 2.0, 8.0])
    ours = stats.interval_estimates([a, np.array([20.0])], ("mean",), seed=2)["mean"]
    theirs = scipy_stats.bootstrap(
        (a,),
        lambda x, axis: (np.mean(x, axis=axis) + 20.0) / 2,  # the mean of the tasks' means
        n_resamples=stats.RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(2),
    ).confidence_interval
    assert ours.point == 12.0 and (ours.low, ours.high) == pytest.approx((theirs.low, theirs.high))
    one = stats.interval_estimates([np.array([3.0])])  # nothing to resample anywhere
    assert all(e == (3.0, 3.0, 3.0) for name, e in one.items() if name != "optimality_gap")


def test_identical_scores_give_a_zero_width_interval():
    estimates = stats.interval_estimates([np.full(5, 500.0)], resamples=RESAMPLES)
    assert estimates["iqm"] == (500.0, 500.0, 500.0)


def test_performance_profile_known_fractions():
    scores = np.array([0.1, 0.5, 0.9, 0.9])
    thresholds = np.array([0.0, 0.5, 0.95])
    fraction, low, high = stats.performance_profile([scores], thresholds, resamples=RESAMPLES)
    # Scores strictly above τ: all 4 at 0; 0.9 and 0.9 at 0.5 (0.5 is not above itself); none.
    np.testing.assert_allclose(fraction, [1.0, 0.5, 0.0])
    assert np.all(low <= fraction) and np.all(fraction <= high)
    np.testing.assert_allclose([low[0], high[0], low[2], high[2]], [1, 1, 0, 0])
    assert low[1] < 0.5 < high[1]

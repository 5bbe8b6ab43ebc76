"""The bound verdict on constructed inputs, and the roofline predictions from known costs."""

import pytest

from jaxrl_fdg.profiling import bound
from jaxrl_fdg.profiling.cost import Cost
from jaxrl_fdg.profiling.peaks import H100, Peak

PEAK = Peak("test", flops_s=100e9, bytes_s=10e9, source="constructed")


def _one(name, *, calls, dispatch_s, device_s=0.0, iterations, **kwargs):
    """:func:`bound.analyse` of one program costing 1 GFLOP and 100 MB a run."""
    programs = {name: {"calls": calls, "dispatch_s": dispatch_s, "device_s": device_s}}
    return bound.analyse(
        programs, {name: Cost(1e9, 1e8)}, iterations=iterations, peak=PEAK, **kwargs
    )


@pytest.mark.parametrize(
    "compute, memory, device_s, host_s, expected",
    [
        (0.60, 0.20, 1e-3, 1e-5, "compute"),  # intensity above the ridge point
        (0.20, 0.60, 1e-3, 1e-5, "memory"),
        (0.30, 0.30, 1e-3, 1e-5, "compute"),  # a tie goes to compute
        (0.60, 0.20, 1e-3, 2e-3, "overhead"),  # dispatch takes longer than the device
        (0.60, 0.20, 1e-3, 1e-3, "overhead"),  # ... or as long
        (0.04, 0.049, 1e-3, 1e-5, "overhead"),  # near neither roof
        (0.0, 0.05, 1e-3, 1e-5, "memory"),  # 5% of one roof is enough
    ],
)
def test_verdict(compute, memory, device_s, host_s, expected):
    assert bound.verdict(compute, memory, device_s, host_s) == expected


def test_roofline_is_the_slower_of_the_two_roofs():
    assert bound.roofline_s(100e9, 1e9, PEAK) == pytest.approx(1.0)  # compute: 1 s vs 0.1 s
    assert bound.roofline_s(1e9, 100e9, PEAK) == pytest.approx(10.0)  # memory: 0.01 s vs 10 s


def test_analyse_sync_run():
    programs = {
        "init": {"calls": 1, "dispatch_s": 0.1, "device_s": 0.001},
        "rollout": {"calls": 10, "dispatch_s": 0.001, "device_s": 0.1},
        "learner": {"calls": 10, "dispatch_s": 0.001, "device_s": 0.2},
    }
    costs = {
        "init": Cost(1e6, 1e6),
        "rollout": Cost(1e8, 5e8),  # 0.01 s a run: 10 GFLOP/s (10%), 50 GB/s (500%)
        "learner": Cost(1e9, 1e8),  # 0.02 s a run: 50 GFLOP/s (50%), 5 GB/s (50%)
    }
    result = bound.analyse(programs, costs, iterations=10, peak=PEAK, sync=True, run_s=1.0)
    rows = result["programs"]
    assert rows["rollout"]["flops_s"] == pytest.approx(10e9)
    assert rows["rollout"]["peak_bytes"] == pytest.approx(5.0)
    assert rows["rollout"]["bound"] == "memory"
    assert rows["learner"]["bound"] == "compute"
    assert rows["init"]["bound"] == "overhead" and rows["init"]["runs_per_iteration"] is None
    # Per iteration: each program once; init is not part of an iteration.
    assert result["iteration_s"] == pytest.approx(0.1)
    here = bound.roofline_s(1e8, 5e8, PEAK) + bound.roofline_s(1e9, 1e8, PEAK)
    assert result["roofline_iteration_s"] == pytest.approx(here)
    h100 = H100.peak("tf32")
    expected = bound.roofline_s(1e8, 5e8, h100) + bound.roofline_s(1e9, 1e8, h100)
    assert result["h100_iteration_s"] == pytest.approx(expected)


def test_a_program_of_several_iterations_a_call_counts_per_iteration():
    # The scan plan: 2 calls ran 10 iterations; XLA's cost is one iteration's. Dispatch,
    # 2 ms in all, is 0.2 ms an iteration.
    row = _one("scan", calls=2, dispatch_s=0.002, device_s=0.5, iterations=10, sync=True,
               per_iteration=frozenset({"scan"}))["programs"]["scan"]  # fmt: skip
    assert row["runs"] == 10 and row["runs_per_iteration"] == 1
    assert row["device_s"] == pytest.approx(0.05) and row["host_s"] == pytest.approx(2e-4)
    assert row["flops_s"] == pytest.approx(20e9) and row["bound"] == "compute"


def test_trace_window_gives_device_time_per_run():
    # Two runs in the window, 20 ms each.
    result = _one("learner", calls=50, dispatch_s=0.005, iterations=50,
                  window={"learner": (0.04, 2)})  # fmt: skip
    row = result["programs"]["learner"]
    assert row["device_s"] == pytest.approx(0.02) and result["measured"] == "trace"


def test_without_device_time_or_peak_there_is_no_verdict():
    programs = {"scan": {"calls": 1, "dispatch_s": 0.001, "device_s": 0.0}}
    result = bound.analyse(programs, {"scan": Cost(1e9, 1e8)}, iterations=1, peak=None)
    row = result["programs"]["scan"]
    assert "bound" not in row and "flops_s" not in row
    assert result["roofline_iteration_s"] is None and result["h100_iteration_s"] > 0

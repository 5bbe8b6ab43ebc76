"""The timing layer inside training runs: outputs, trace attribution, correction, the CLI."""

import gzip
import json

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.profiling import bound, summary_table
from jaxrl_fdg.run.metrics import format_summary


def test_trace_mode_attributes_fused_device_time_to_fragments(tiny, tmp_path):
    config = tiny.replace(total_steps=2 * 8 * 6, profile="trace", out=str(tmp_path), run_name="t")
    result = rl.train(config)
    run = tmp_path / "t"
    profile = json.loads((run / "profile.json").read_text())
    device = profile["device_by_scope"]["device_exclusive_s"]
    # Inside the one fused `scan` program, each fragment's ops are found by its named scope.
    assert {"env", "actor", "learner"} <= set(device) and all(v > 0 for v in device.values())
    assert 0.0 < profile["device_busy"] <= 1.0
    assert profile["profiler_session_s"] > 0 and profile["run_s"] < result.summary["run_s"] + 1e-9
    events = json.load(gzip.open(run / "trace.json.gz"))["traceEvents"]
    scoped = {e["args"]["scope"] for e in events if "scope" in e.get("args", {})}
    assert {"env", "actor", "learner"} <= scoped
    # Our host scopes are in the same trace (TraceAnnotation), on the profiler's clock.
    assert any(e.get("name") == "scan" for e in events)
    assert (run / "profile.png").stat().st_size > 10_000
    # The traced window gives each program's device time, so the bound analysis has verdicts.
    scan = profile["bound"]["programs"]["scan"]
    assert scan["device_s"] > 0 and scan["bound"] in bound.VERDICTS
    assert profile["bound"]["measured"] == "trace"
    # Boundaries moved to carve out the traced window; the results did not.
    plain = rl.train(tiny.replace(total_steps=2 * 8 * 6))
    assert (result.metrics["loss"] == plain.metrics["loss"]).all()


def test_sync_mode_measures_program_device_time(tiny):
    summary = rl.train(tiny.replace(fusion="fragment", profile="sync")).summary
    timing = summary["timing"]
    assert timing["programs"]["learner"]["device_s"] > 0
    assert timing["programs"]["rollout"]["device_s"] > 0
    assert 0 < timing["device_busy"] <= 1
    # Bound analysis: each program's cost, achieved rates, fractions of peak and verdict.
    analysis = timing["bound"]
    assert set(analysis["programs"]) == {"init", "rollout", "learner"}
    for name in ("rollout", "learner"):
        row = analysis["programs"][name]
        assert row["flops"] > 0 and row["bytes"] > 0 and row["loops"] == "trip counts"
        assert row["runs_per_iteration"] == 1 and row["flops_s"] > 0 and row["bytes_s"] > 0
        assert row["bound"] in bound.VERDICTS and row["peak_flops"] > 0
    assert analysis["h100_iteration_s"] > 0 and analysis["iteration_s"] > 0
    text = format_summary(summary)
    for column in ("MFLOP", "GFLOP/s", "GB/s", "% peak", "bound", "H100"):
        assert column in text
    assert "peak here: cpu" in text and "roofline" in text and "on an H100 SXM" in text


def test_host_mode_points_to_the_bound_analysis(tiny):
    timing = rl.train(tiny).summary["timing"]
    assert "bound" not in timing  # no device time per program to divide by
    assert "--profile sync or trace" in summary_table(timing)


def test_off_mode_writes_no_profile(tiny, tmp_path):
    rl.train(tiny.replace(profile="off", out=str(tmp_path), run_name="o"))
    assert not (tmp_path / "o" / "profile.json").exists()
    assert (tmp_path / "o" / "summary.json").exists()


def test_profile_command_compares_fusion_modes(tmp_path, capsys):
    args = [
        "profile",
        "--fusion",
        "fragment,scan",
        "--profile",
        "trace",
        "--total-steps",
        "1024",
        "--num-envs",
        "2",
        "--rollout-len",
        "8",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "fragment" in out and "scan" in out
    for row in ("compile s", "host: dispatch s", "device share: learner", "device busy"):
        assert row in out
    for row in ("compile s (programs, summed)", "bound: learner", "H100 roofline ms/iteration"):
        assert row in out


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["train", "--profile", "loud"],
            "unknown profile mode 'loud' (valid: off, host, sync, trace)",
        ),
        (["profile", "--fusion", "scan,fast"], "unknown fusion mode 'fast'"),
        (["profile", "--profile", "off"], "profile mode 'off' measures nothing"),
    ],
)
def test_profile_bad_input(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err

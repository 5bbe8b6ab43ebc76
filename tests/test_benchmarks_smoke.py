"""The accelerator suite runs every section at its smoke size and merges them into one report."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = set(
    "fusion_modes algorithms mode_pairs envs seeds devices compile_time precision roofline".split()
)


def _positive(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.mark.slow
def test_accelerator_suite_smoke(tmp_path):
    out = tmp_path / "accelerator.json"
    readme = (ROOT / "README.md").read_text()
    proc = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "accelerator.py", "--size", "smoke"]
        + ["--out", str(out), "--no-readme"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (ROOT / "README.md").read_text() == readme  # --no-readme left it alone
    report = json.loads(out.read_text())
    assert report["config"]["size"] == "smoke"
    assert report["machine"]["backend"] and _positive(report["wall_s"])
    sections = report["results"]
    assert set(sections) == SECTIONS

    for name, entry in sections.items():
        assert entry["ok"], (name, entry.get("tail"))
        if "skipped" in entry:  # only the device sweep, and only on one device
            assert name == "devices" and report["config"]["device"]["device_count"] == 1
            assert "one device visible" in entry["skipped"]
            continue
        assert entry["command"].startswith("python benchmarks/"), entry["command"]
        assert _positive(entry["wall_s"]) and _positive(entry["cpu_s"])

    def results(name):
        return sections[name]["report"]["results"]

    assert _positive(results("fusion_modes")["scan"]["steps_per_s"])
    assert _positive(sections["fusion_modes"]["report"]["ratios"]["scan_vs_handwritten"])
    assert set(results("algorithms")) == {"ppo", "dqn"}
    assert all(_positive(r["scan"]["steps_per_s"]) for r in results("algorithms").values())
    pairs = results("mode_pairs")["dqn"]
    assert pairs["same_bits"] and _positive(pairs["scan/step"]["median"])
    assert _positive(results("envs")["CartPole-v1"]["64"]["ours"])
    seeds = results("seeds")["seeds"]["ppo"]
    assert set(seeds) == {"2"} and _positive(seeds["2"]["steps_per_s"])
    assert _positive(results("compile_time")["ppo/scan"]["compile_wall_s"])
    if "skipped" not in sections["devices"]:
        strong = results("devices")["devices"]["shard_map_strong"]
        assert all(_positive(e["steps_per_s"]) for e in strong.values())

    roofline = report["roofline"]["runs"]["ppo/scan"]
    assert _positive(roofline["measured_iteration_s"])
    assert _positive(roofline["predicted_h100_iteration_s"])
    assert _positive(results("roofline")["ppo/scan"]["programs"]["scan"]["flops"])

    precision = results("precision")
    assert math.isfinite(precision["ppo"]["max_abs_diff"])
    assert math.isfinite(precision["ppo"]["final_return_default"])
    in_force = report["precision"]
    assert _positive(in_force["matmul_rel_error_default"])
    if in_force["platform"] == "cpu":  # full float32 at either precision: the same bits
        assert not in_force["tf32_measured"]


def test_a_section_past_its_limit_is_killed_and_the_report_says_so(tmp_path):
    """A section that outlives ``--section-limit`` is killed with its process group, recorded as
    ``timed_out`` with what it printed, and the suite still writes its report (exit status 1)."""
    out = tmp_path / "accelerator.json"
    proc = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "accelerator.py", "--size", "smoke"]
        + ["--sections", "fusion_modes", "--section-limit", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    entry = json.loads(out.read_text())["results"]["fusion_modes"]
    assert entry["timed_out"] and not entry["ok"] and entry["limit_s"] == 1
    assert 1 <= entry["wall_s"] < 30
    assert "killed at its limit** of 1 s" in proc.stdout
    assert "`fusion_modes` printed before its limit of 1 s" in proc.stdout


def test_a_section_limit_must_be_positive():
    proc = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "accelerator.py", "--section-limit", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "--section-limit: 0 is not a positive" in proc.stderr

"""Every example and benchmark script runs, with tiny settings, and says what it should."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, timeout=300):
    proc = subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_reinforce_runs_under_two_fusion_modes_with_the_same_result():
    out = _run(ROOT / "examples" / "reinforce.py", "--total-steps", "4096")
    assert "same state and metrics under both fusion modes" in out


@pytest.mark.slow  # an example's whole run; the quickstart's runs by default
def test_compare_fusion():
    out = _run(
        ROOT / "examples" / "compare_fusion.py", "--total-steps", "1024", "--modes", "step", "scan"
    )
    assert "step vs scan: the same bits, max |Δ parameter| 0.00e+00" in out


def test_quickstart(tmp_path):
    out = _run(ROOT / "examples" / "quickstart.py", "--total-steps", "1024", "--out", tmp_path)
    assert (
        "final return" in out
        and (tmp_path / next(p.name for p in tmp_path.iterdir()) / "summary.json").exists()
    )


@pytest.mark.slow  # an example's whole run; the quickstart's runs by default
def test_profiling_example(tmp_path):
    out = _run(ROOT / "examples" / "profiling.py", "--total-steps", "2048", "--out", tmp_path)
    assert "device time by fragment" in out and "'learner'" in out
    assert "trace.json.gz" in out and "profile.png" in out
    assert "my_host_work host seconds: 0.01" in out


@pytest.mark.slow  # benchmark smoke runs belong to the slow tier, as the accelerator suite does
def test_fusion_benchmark_smoke(tmp_path):
    out_file = tmp_path / "bench.json"
    _run(
        ROOT / "benchmarks" / "fusion_modes.py",
        "--total-steps",
        "2048",
        "--repeats",
        "1",
        "--eager-iterations",
        "0",
        "--modes",
        "step",  # the other modes run the same code path; tests/policies checks them all
        "--out",
        out_file,
    )
    report = json.loads(out_file.read_text())
    assert set(report["results"]) == {"handwritten", "scan", "step"}
    assert report["ratios"]["scan_vs_step"] > 0


@pytest.mark.slow  # benchmark smoke runs belong to the slow tier, as the accelerator suite does
def test_replay_benchmark_smoke(tmp_path):
    out_file = tmp_path / "replay.json"
    _run(
        ROOT / "benchmarks" / "replay.py",
        "--log2-capacity",
        "10",
        "--calls",
        "2",
        "--batches",
        "16",
        "--arities",
        "2,8",
        "--no-flashbax",
        "--out",
        out_file,
    )
    results = json.loads(out_file.read_text())["results"]["16"]
    assert set(results) == {"K=2", "K=8", "uniform"}
    assert results["K=8"]["update_us"] > 0


@pytest.mark.slow  # benchmark smoke runs belong to the slow tier, as the accelerator suite does
def test_scaling_benchmark_smoke(tmp_path):
    out_file = tmp_path / "scaling.json"
    _run(ROOT / "benchmarks" / "scaling.py", "--size", "smoke", "--out", out_file)
    report = json.loads(out_file.read_text())
    assert set(report["results"]) == {
        "ppo_num_envs",
        "ppo_width",
        "dqn_batch_size",
        "dqn_buffer_size",
    }
    for cells in report["results"].values():
        (cell,) = cells
        assert cell["steps_per_s"] > 0 and cell["compile_s"] > 0 and len(cell["runs"]) == 1
    assert out_file.with_suffix(".png").exists()


# The default tier runs examples/rnd.py, the same extension on the parts API, under two modes
# (tests/examples/test_extensions.py).
@pytest.mark.slow
def test_intrinsic_reward_fragment_added_to_ppo_without_touching_the_core():
    out = _run(
        ROOT / "examples" / "intrinsic_reward.py", "--total-steps", "2048", "--fusion", "step,scan"
    )
    # The graph scheduled the new fragment between the rollout and the learner.
    assert "rollout.trajectory           -> novelty.trajectory" in out
    assert "novelty.trajectory           -> learner.trajectory" in out
    assert "└─ every iteration\n        ├─ novelty\n        └─ learner\n" in out
    assert "same state and metrics under every fusion mode" in out


CONFIGS = sorted((ROOT / "examples" / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_tuned_config_files_resolve_to_what_they_are_named(path):
    import jaxrl_fdg as rl
    from jaxrl_fdg.config import files

    config = rl.resolve(files.from_mapping(files.load(path), str(path))).config
    assert path.stem.startswith(f"{config.algo}-")  # ppo-cartpole, pqn-qmix-smax-3m
    env = path.stem.removeprefix(f"{config.algo}-")
    assert env.split("-")[0] in config.env.lower()
    usage = f"jaxrl-fdg train --config examples/configs/{path.name}"
    assert usage in path.read_text()  # the file says how to run it


@pytest.mark.slow  # a short run of each file through the CLI
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_tuned_config_files_train(path, tmp_path):
    from jaxrl_fdg.config import files
    from jaxrl_fdg.core import algorithm as algorithms

    config = files.from_mapping(files.load(path), str(path))
    config = config.with_defaults(algorithms.get(config.algo).defaults)
    steps = max(2048, config.steps_per_iteration)  # at least one iteration
    run = ["-m", "jaxrl_fdg", "train", "--config", path, "--total-steps", str(steps)]
    _run(*run, "--out", tmp_path, "--run-name", "r", "--no-progress")
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["env_steps"] >= steps and summary["final_return"] is not None

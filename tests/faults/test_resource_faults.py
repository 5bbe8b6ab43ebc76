"""Out of memory: a run too large for this machine is refused before its folder is made, in one
line naming the settings to reduce (XLA's memory analysis of the compiled programs, read before
``init`` makes the state); memory that runs out anyway, while starting or training, is one line
too, and a training run's folder says ``failed`` and resumes bit for bit."""

import json
import re
from pathlib import Path

import jax
import pytest
from faultkit import DQN, DQN_FLAGS, assert_same_state, copy_run, one_line_error, rows

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.policies import fusion
from jaxrl_fdg.run import memory

# PPO's default rollout over ten million CartPoles: a scan program of about 720 GB.
TOO_LARGE = ["--num-envs", "10000000", "--total-steps", "1280000000", "--no-progress"]
OOM = "RESOURCE_EXHAUSTED: Out of memory allocating 718280083136 bytes."


def _fail_on_call(monkeypatch, owner, name: str, call: int, only=None) -> None:
    """The ``call``-th call of ``owner.name`` (counting those ``only(args)`` accepts) raises
    XLA's out-of-memory error, as a device allocation that fails does."""
    real, calls = getattr(owner, name), []

    def wrapper(self, *args, **kwargs):
        if only is None or only(args):
            calls.append(1)
            if len(calls) == call:
                raise jax.errors.JaxRuntimeError(OOM)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)


def test_a_run_too_large_for_memory_is_refused_before_its_folder_is_made(tmp_path, capsys):
    assert main(["train", *TOO_LARGE, "--out", str(tmp_path), "--run-name", "r"]) == 2
    err = one_line_error(capsys)
    assert "the run does not fit in memory: its state" in err and "its program 'scan'" in err
    assert err.endswith("reduce num_envs (10,000,000) or rollout_len (128)")
    assert list(tmp_path.iterdir()) == []


def test_networks_too_large_for_memory_are_named_first(tmp_path, capsys):
    # Found by a probe: the refusal advised num_envs and rollout_len.
    argv = ["train", "--hidden-sizes", "100000,100000", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path), "--run-name", "r"]) == 2
    err = one_line_error(capsys)
    assert err.endswith("reduce hidden_sizes (100,000, 100,000), num_envs (4) or rollout_len (128)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_many_seeds_too_large_for_memory_are_refused_before_any_lane_folder(tmp_path, capsys):
    argv = ["train", "--num-seeds", "100000", "--total-steps", "512000", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path), "--run-name", "r"]) == 2
    err = one_line_error(capsys)
    assert "does not fit in memory" in err and re.search(r"use --num-seeds \d+ or fewer$", err)
    assert list(tmp_path.iterdir()) == []


# Two envs × 8 steps of PPO, three iterations: lanes of a few hundred kB each.
SMALL = ["--total-steps", "48", "--num-envs", "2", "--rollout-len", "8", "--no-progress"]
SMALL_CONFIG = rl.TrainConfig(total_steps=48, num_envs=2, rollout_len=8, out=None)


@pytest.mark.slow  # the default tier refuses a run and a sweep too large for memory
def test_too_many_lanes_are_refused_naming_the_most_that_fit(tmp_path, capsys, monkeypatch):
    # The machine has room for three lanes (their state and largest program) and a little.
    room = memory.compiled_need(rl.resolve(SMALL_CONFIG.replace(num_seeds=3))) + 1000
    monkeypatch.setattr(memory, "free_bytes", lambda device: room)
    argv = ["train", *SMALL, "--out", str(tmp_path)]
    assert main([*argv, "--num-seeds", "8", "--run-name", "r"]) == 2
    err = one_line_error(capsys)
    fit = int(re.search(r"it fits at most (\d+) lanes; use --num-seeds (\d+) or fewer$", err)[2])
    assert 1 <= fit <= 3 and "does not fit in memory" in err
    assert list(tmp_path.iterdir()) == []  # nothing written
    # The number it names does fit (the estimate errs on the side of fewer).
    assert main([*argv, "--num-seeds", str(fit), "--run-name", "fits"]) == 0


def test_a_sweep_too_large_for_memory_names_the_seeds_or_points_that_fit():
    sweep = rl.resolve(SMALL_CONFIG.replace(num_seeds=4, hparams={"lr": "1e-3,3e-4"}))
    assert memory.lanes_advice(sweep, 5) == (
        "it fits at most 5 lanes; use --num-seeds 2 or fewer (× the sweep's 2 points)"
    )
    assert memory.lanes_advice(sweep, 1) == (
        "it fits at most 1 lane; sweep at most 1 point with --num-seeds 1"
    )


def test_out_of_memory_while_starting_is_one_line_and_leaves_no_folder(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(memory, "free_bytes", lambda device: None)  # nothing predicted
    _fail_on_call(monkeypatch, fusion.Plan, "_call", 1, only=lambda args: args[0] == "init")
    assert main(["train", *DQN_FLAGS, "--out", str(tmp_path), "--run-name", "r"]) == 2
    err = one_line_error(capsys)
    assert f"out of memory while the run starts ({OOM}); reduce num_envs (4)" in err
    assert list(tmp_path.iterdir()) == []


def test_out_of_memory_while_training_is_one_line_and_the_folder_resumes(
    reference, tmp_path, capsys, monkeypatch
):
    with monkeypatch.context() as patch:
        patch.setattr(memory, "free_bytes", lambda device: None)
        after_6 = lambda args: int(args[0].iteration) >= 6  # noqa: E731
        _fail_on_call(patch, fusion.ScanPlan, "_advance", 1, only=after_6)
        assert main(["train", *DQN_FLAGS, "--out", str(tmp_path), "--run-name", "r"]) == 1
    run = tmp_path / "r"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["iterations"] == rows(run)[-1]["iteration"]
    err = one_line_error(capsys)
    assert f"out of memory at iteration {summary['iterations']} ({OOM}); reduce num_envs" in err
    assert "buffer_size (128)" in err
    resumed = rl.train(DQN.replace(out=str(tmp_path), run_name="r"), resume=run)
    assert_same_state(resumed.state, reference[1])


@pytest.mark.slow
@pytest.mark.skipif(
    Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1",
    reason="with overcommit always on, a 720 GB allocation succeeds and the kernel's "
    "out-of-memory killer ends the process instead",
)
def test_a_real_allocation_that_fails_while_training_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(memory, "free_bytes", lambda device: None)  # let it run out for real
    assert main(["train", *TOO_LARGE, "--out", str(tmp_path), "--run-name", "r"]) == 1
    err = one_line_error(capsys)
    assert "out of memory at iteration 0 (RESOURCE_EXHAUSTED" in err
    assert err.endswith("reduce num_envs (10,000,000) or rollout_len (128)")
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert (summary["status"], summary["iterations"]) == ("failed", 0)


def test_evaluate_with_more_episodes_than_memory_holds_is_one_line(reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    assert main(["evaluate", str(run), "--episodes", "100000000"]) == 2
    err = one_line_error(capsys)
    assert "the evaluation does not fit in memory" in err
    assert err.endswith("reduce --episodes (100,000,000)")
    assert not (run / "evaluation.json").exists()

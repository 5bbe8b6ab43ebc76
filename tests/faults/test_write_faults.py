"""A full disk or a lost permission while a run writes its folder: one line naming the cause,
a summary that says ``failed`` (when it could be written), no stray ``*.tmp`` file or half
checkpoint, and a folder that resumes to the uninterrupted run's result."""

import builtins
import errno
import io
import json
import os
from pathlib import Path

import orbax.checkpoint as ocp
import pytest
from faultkit import DQN, assert_same_state, copy_run, one_line_error

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main

FLAGS = [
    "--algo", "dqn", "--total-steps", "192", "--num-envs", "4", "--rollout-len", "4",
    "--log-every", "2", "--checkpoint-every", "64", "--learning-starts", "32",
    "--batch-size", "16", "--buffer-size", "128", "--no-progress",
]  # fmt: skip


def _fail_writes_to(monkeypatch, name: str, code: int) -> None:
    """Every open for writing of a file whose name starts with ``name`` fails with ``code``;
    ``name = "checkpoint"`` makes orbax's save fail as tensorstore reports it."""
    if name == "checkpoint":

        def save(self, step, *args, **kwargs):
            raise ValueError(f"{errno.errorcode[code]}: Failed writing [os_error_code='{code}']")

        monkeypatch.setattr(ocp.CheckpointManager, "save", save)
        return
    real_open = builtins.open

    def guarded(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and Path(file).name.startswith(name):
            raise OSError(code, os.strerror(code), str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)


def _leftovers(run: Path) -> list[str]:
    return [str(p) for p in run.rglob("*") if p.name.endswith(".tmp") or "-tmp" in p.name]


WRITERS = [
    pytest.param("config.toml", errno.ENOSPC, id="config-ENOSPC"),
    pytest.param("metrics.jsonl", errno.EACCES, id="metrics-EACCES"),
    pytest.param("checkpoint", errno.ENOSPC, id="checkpoint-ENOSPC"),
    pytest.param("summary.json", errno.EACCES, id="summary-EACCES"),
    pytest.param("metrics.csv", errno.ENOSPC, id="csv-ENOSPC", marks=pytest.mark.slow),
    pytest.param("jaxrl_fdg_manifest", errno.ENOSPC, id="manifest-ENOSPC", marks=pytest.mark.slow),
    pytest.param("profile.json", errno.ENOSPC, id="profile-ENOSPC", marks=pytest.mark.slow),
    pytest.param("checkpoint", errno.EACCES, id="checkpoint-EACCES", marks=pytest.mark.slow),
    pytest.param("summary.json", errno.ENOSPC, id="summary-ENOSPC", marks=pytest.mark.slow),
    pytest.param("events.out", errno.ENOSPC, id="events-ENOSPC", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name, code", WRITERS)
def test_a_failing_writer_gives_one_line_and_a_consistent_folder(
    name, code, tmp_path, capsys, monkeypatch
):
    with monkeypatch.context() as patch:
        _fail_writes_to(patch, name, code)
        assert main(["train", *FLAGS, "--out", str(tmp_path), "--run-name", "r"]) == 1
    err = one_line_error(capsys)
    assert os.strerror(code) in err
    run = tmp_path / "r"
    assert _leftovers(run) == []
    summary = run / "summary.json"
    if summary.exists():
        assert json.loads(summary.read_text())["status"] == "failed"


def test_after_a_full_disk_the_run_resumes_to_the_same_result(
    reference, tmp_path, capsys, monkeypatch
):
    calls = []
    real_save = ocp.CheckpointManager.save

    def full_at_second_save(self, step, *args, **kwargs):
        calls.append(step)
        if len(calls) == 2:
            raise ValueError("RESOURCE_EXHAUSTED: Failed writing [os_error_code='28']")
        return real_save(self, step, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(ocp.CheckpointManager, "save", full_at_second_save)
        assert main(["train", *FLAGS, "--out", str(tmp_path), "--run-name", "r"]) == 1
    assert "No space left on device" in one_line_error(capsys)
    run = tmp_path / "r"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["4"]
    resumed = rl.train(DQN.replace(out=str(tmp_path), run_name="r"), resume=run)
    assert_same_state(resumed.state, reference[1])


def test_evaluate_on_a_full_disk_gives_one_line_and_no_stray_file(
    reference, tmp_path, capsys, monkeypatch
):
    run = copy_run(reference[0], tmp_path / "r")
    with monkeypatch.context() as patch:
        _fail_writes_to(patch, "evaluation.json", errno.ENOSPC)
        assert main(["evaluate", str(run), "--episodes", "2"]) == 1
    assert "No space left on device" in one_line_error(capsys)
    assert _leftovers(run) == [] and not (run / "evaluation.json").exists()
    assert main(["evaluate", str(run), "--episodes", "2"]) == 0  # the lock went with it


@pytest.fixture
def tiny_disk(tmp_path):
    """A 32 kB tmpfs, where the run's first checkpoint fills the disk (skipped where this
    process may not mount one)."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip("this process cannot mount a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.parametrize("logger", ["none", "tensorboard"])
def test_a_real_full_disk_is_one_line_and_a_quiet_exit(tiny_disk, logger):
    # Found by a probe: on a 12-32 kB disk, the line was followed by tensorboardX's exit handler
    # or up to 42 of orbax's "Event loop is closed" tracebacks, also with --logger none.
    import subprocess
    import sys

    argv = [sys.executable, "-m", "jaxrl_fdg", "train", "--total-steps", "4096", "--num-envs"]
    argv += ["4", "--rollout-len", "32", "--checkpoint-every", "512", "--no-progress"]
    argv += ["--logger", logger, "--out", str(tiny_disk)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]  # one line, and nothing after it
    assert lines[0].startswith("jaxrl-fdg: error: ") and "No space left on device" in lines[0]

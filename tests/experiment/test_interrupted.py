"""An experiment killed with ``kill -9`` and run again gives the report an uninterrupted one gives;
the submitit executor runs the same cells (full tier)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jaxrl_fdg.experiment import folder as folders
from jaxrl_fdg.experiment import report

FILE = """
algos = ["ppo", "a2c"]
envs = ["CartPole-v1"]
seeds = 2
total_steps = 204800
checkpoints = 40

[run]
num_envs = 4
rollout_len = 16
"""


def _experiment(path, out, *extra):
    return [sys.executable, "-m", "jaxrl_fdg", "experiment", str(path), "--out", str(out), *extra]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _numbers(result):
    """What the report computed, less when and with what code it was made."""
    return {k: v for k, v in result.items() if k not in ("stamp", "figures")}


def test_kill_9_in_the_middle_then_again_gives_the_uninterrupted_report(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(FILE)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    # Uninterrupted, two cells at once: the cells' bits do not depend on what runs beside them.
    subprocess.run(
        _experiment(path, whole, "--jobs", "2"), check=True, capture_output=True, timeout=600
    )

    driver = subprocess.Popen(
        _experiment(path, cut), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    first = cut / "cells" / "ppo-CartPole-v1"
    deadline = time.monotonic() + 300
    while not folders.checkpoints(first):  # the first cell is part way through
        assert driver.poll() is None and time.monotonic() < deadline, "no checkpoint came"
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    child = folders.ExperimentFolder(cut).attempts()[-1]
    deadline = time.monotonic() + 120
    while _alive(child["pid"]):  # told by the kernel its parent died: it stops, with a checkpoint
        assert time.monotonic() < deadline, "the cell outlived its experiment"
        time.sleep(0.1)
    state = folders.ExperimentFolder(cut).state("ppo-CartPole-v1")
    assert state == "resumable"

    again = subprocess.run(_experiment(path, cut), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "1 to resume, 1 to start" in again.stdout
    ours = _numbers(report.report([cut], resamples=500))
    theirs = _numbers(report.report([whole], resamples=500))
    assert ours == theirs


def test_sigterm_stops_the_experiment_and_its_cells_with_checkpoints(tmp_path):
    path = tmp_path / "exp.toml"
    # Long enough that the signal lands while the cells train: the first checkpoint comes
    # after 40,960 steps, the cells would take minutes.
    long = FILE.replace("total_steps = 204800", "total_steps = 4096000")
    path.write_text(long.replace("checkpoints = 40", "checkpoints = 100"))
    out = tmp_path / "out"
    driver = subprocess.Popen(
        _experiment(path, out, "--jobs", "2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not folders.checkpoints(out / "cells" / "ppo-CartPole-v1"):
        assert driver.poll() is None and time.monotonic() < deadline, "no checkpoint came"
        time.sleep(0.05)
    second = subprocess.run(_experiment(path, out), capture_output=True, text=True, timeout=120)
    assert second.returncode == 2 and "is in use by pid" in second.stderr  # one command a folder
    driver.send_signal(signal.SIGTERM)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    experiment = folders.ExperimentFolder(out)
    assert not any(_alive(a["pid"]) for a in experiment.attempts())
    assert {r["state"] for r in experiment.status()} <= {"resumable", "done"}
    ends = [a for a in experiment.attempts() if "exit" in a]
    assert len(ends) == 2  # each cell's end recorded: stopped by the signal (or done before it)
    assert all(a["signal"] == signal.SIGTERM or a["exit"] == 0 for a in ends)
    assert any(a["signal"] == signal.SIGTERM for a in ends)


def test_the_submitit_executor_runs_each_cell_as_a_job(tmp_path):
    pytest.importorskip("submitit")
    path = tmp_path / "exp.toml"
    path.write_text(FILE.replace("total_steps = 204800", "total_steps = 2048"))
    done = subprocess.run(
        _experiment(path, tmp_path / "out", "--executor", "submitit-local", "--jobs", "2"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    attempts = folders.ExperimentFolder(tmp_path / "out").attempts()
    assert {a["executor"] for a in attempts} == {"submitit-local"}
    assert all(a.get("job") for a in attempts)
    states = [r["state"] for r in folders.ExperimentFolder(tmp_path / "out").status()]
    assert states == ["done", "done"]
    record = json.loads((tmp_path / "out" / "experiment.json").read_text())
    assert list(record["cells"]) == ["ppo-CartPole-v1", "a2c-CartPole-v1"]

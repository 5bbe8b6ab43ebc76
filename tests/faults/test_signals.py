"""SIGINT, SIGTERM and SIGHUP at every stage of a run: the process ends within seconds with
``128 + signal`` (0 where the run had already completed), the summary says ``interrupted`` and
names the signal, and the folder resumes to the uninterrupted run bit for bit. The sweep of
every signal at every stage runs in fresh processes (slow tier); the default tier sends one
signal at each kind of stage in this process."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultkit import DQN, DQN_FLAGS, assert_same_state, copy_run, final_checkpoint, rows

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.cli import train as train_command
from jaxrl_fdg.policies import fusion
from jaxrl_fdg.run import session as sessions
from jaxrl_fdg.run.checkpoint import Checkpointer
from jaxrl_fdg.run.run_folder import RunFolder

VICTIM = Path(__file__).with_name("signal_victim.py")
STAGES = ["parse", "folder", "compile", "chunk", "evaluation", "checkpoint", "summary"]


def _send_on_call(monkeypatch, owner, name: str, signum: int, call: int = 1) -> list[float]:
    """Make the ``call``-th call of ``owner.name`` send this process ``signum`` first; the
    returned list gets the time it was sent."""
    real, calls, sent = getattr(owner, name), [], []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            sent.append(time.monotonic())
            os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return sent


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _resume_equals_reference(run: Path, reference) -> None:
    resumed = rl.train(DQN.replace(out=str(run.parent), run_name=run.name), resume=run)
    assert_same_state(resumed.state, reference[1])
    assert [r["iteration"] for r in rows(run)][-1] == 12


def test_a_signal_while_parsing_arguments_exits_at_once_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    _send_on_call(monkeypatch, train_command, "parser", signal.SIGHUP)
    assert main(["train", *DQN_FLAGS, "--out", str(tmp_path), "--run-name", "r"]) == 129
    assert capsys.readouterr().err.strip() == "jaxrl-fdg: interrupted (SIGHUP)"
    assert list(tmp_path.iterdir()) == []


def test_a_signal_while_compiling_leaves_a_folder_that_says_interrupted(
    reference, tmp_path, monkeypatch, capsys
):
    with monkeypatch.context() as patch:
        _send_on_call(patch, fusion.Plan, "start", signal.SIGTERM)
        assert main(["train", *DQN_FLAGS, "--out", str(tmp_path), "--run-name", "r"]) == 143
    assert capsys.readouterr().err.strip() == "jaxrl-fdg: interrupted (SIGTERM)"
    run = tmp_path / "r"
    summary = _summary(run)
    assert (summary["status"], summary["signal"], summary["iterations"]) == (
        "interrupted",
        "SIGTERM",
        0,
    )
    _resume_equals_reference(run, reference)  # from iteration 0: nothing was checkpointed


def test_a_signal_in_the_first_piece_stops_after_it_with_its_row_and_checkpoint(
    reference, tmp_path, monkeypatch, capsys
):
    # Found by the soak: the first piece, read back before the next is sized, had no row to end.
    with monkeypatch.context() as patch:
        _send_on_call(patch, fusion.Plan, "advance", signal.SIGINT)
        assert main(["train", *DQN_FLAGS, "--out", str(tmp_path), "--run-name", "r"]) == 130
    run = tmp_path / "r"
    assert [r["iteration"] for r in rows(run)] == [_summary(run)["iterations"]] == [1]
    assert final_checkpoint(run, reference[1]).iteration == 1
    _resume_equals_reference(run, reference)


def test_a_signal_in_a_long_chunk_stops_within_seconds_and_resumes_bit_for_bit(
    tmp_path, monkeypatch, capsys
):
    # One metrics row and one checkpoint for the whole run: the only safe points inside it are
    # between the pieces a chunk is dispatched in, made short here so that the run has many.
    config = DQN.replace(total_steps=16 * 160, log_every=160, checkpoint_every=16 * 160)
    flags = ["--total-steps", "2560", "--log-every", "160", "--checkpoint-every", "2560"]
    full = rl.train(config.replace(out=str(tmp_path), run_name="full"))
    monkeypatch.setattr(sessions, "STOP_WITHIN_S", 0.01, raising=False)
    sent = _send_on_call(monkeypatch, sessions.Session, "record", signal.SIGTERM, call=3)
    argv = ["train", *DQN_FLAGS, *flags, "--out", str(tmp_path), "--run-name", "r"]
    assert main(argv) == 143
    stopped = time.monotonic() - sent[0]
    assert "SIGTERM: stopping within seconds" in capsys.readouterr().err
    assert stopped < 10, stopped
    run = tmp_path / "r"
    summary, logged = _summary(run), rows(run)
    assert (summary["status"], summary["signal"]) == ("interrupted", "SIGTERM")
    # A row for the iterations done, and the checkpoint of their state.
    assert 2 < summary["iterations"] == logged[-1]["iteration"] < 160
    checkpointer = Checkpointer(run / "checkpoints")
    assert checkpointer.steps() == [summary["iterations"]]
    checkpointer.close()
    monkeypatch.undo()
    resumed = rl.train(config.replace(out=str(tmp_path), run_name="r"), resume=run)
    assert_same_state(resumed.state, full.state)
    assert [r["iteration"] for r in rows(run)] == [summary["iterations"], 160]  # on the grid


PROFILE = ["profile", "--algo", "dqn", "--total-steps", "192", "--num-envs", "4"]
PROFILE += ["--rollout-len", "4", "--profile", "host", "--fusion", "step,scan"]


def test_profile_stops_on_a_signal_and_leaves_the_cut_run_out_of_the_table(
    tmp_path, monkeypatch, capsys
):
    # Found by a probe: profile went on to the next mode and printed the cut run as measured.
    _send_on_call(monkeypatch, fusion.Plan, "advance", signal.SIGINT)
    assert main([*PROFILE, "--out", str(tmp_path)]) == 130
    out, err = capsys.readouterr()
    assert "jaxrl-fdg: profile: SIGINT: fusion step was cut short and is left out of the " in err
    assert err.rstrip().endswith("; not run: scan")
    assert "running scan" not in err and out == ""  # no table: no mode completed
    (run,) = tmp_path.iterdir()
    assert _summary(run)["status"] == "interrupted"


def test_profile_stops_on_a_signal_that_lands_as_a_run_writes_its_summary(
    tmp_path, monkeypatch, capsys
):
    # The run absorbs it (it has completed), but the user asked to stop: no further mode runs.
    _send_on_call(monkeypatch, RunFolder, "write_summary", signal.SIGTERM)
    assert main([*PROFILE, "--out", str(tmp_path)]) == 143
    out, err = capsys.readouterr()
    assert "profile: SIGTERM: fusion step completed; not run: scan" in err
    header = out.splitlines()[0].split()
    assert header == ["step"]  # the table has the completed mode alone
    (run,) = tmp_path.iterdir()
    assert _summary(run)["status"] == "completed"


# A function each command calls once it is at work (after parsing), and its arguments.
AT_WORK = {
    "evaluate": ("jaxrl_fdg.run.evaluation", "evaluation_program", ["evaluate", "{run}"]),
    "check-env": ("jaxrl_fdg.envs.check", "check_env", ["check-env", "CartPole-v1"]),
    "graph": ("jaxrl_fdg.cli.graph", "build_loop", ["graph", "dqn"]),
    "plot": ("jaxrl_fdg.plots", "_draw", ["plot", "{run}", "--out", "{out}/c.png"]),
    "compare": (
        "jaxrl_fdg.compare",
        "draw",
        ["compare", "{run}", "--metric", "episode_return", "--out", "{out}/c.png"],
    ),
    "list": ("jaxrl_fdg.cli.listing", "_algorithms", ["list"]),
}


@pytest.mark.parametrize("command", sorted(AT_WORK))
def test_a_signal_to_any_command_at_work_ends_it_in_one_line(
    command, reference, tmp_path, monkeypatch, capsys
):
    import importlib

    module, name, argv = AT_WORK[command]
    run = copy_run(reference[0], tmp_path / "r")
    _send_on_call(monkeypatch, importlib.import_module(module), name, signal.SIGTERM)
    argv = [a.format(run=run, out=tmp_path) for a in argv]
    assert main(argv) == 143
    assert capsys.readouterr().err.strip() == "jaxrl-fdg: interrupted (SIGTERM)"
    assert not (run / ".lock").exists() and not (run / "evaluation.json").exists()
    assert not (tmp_path / "c.png").exists()


# A child that sends itself a signal as the command's modules begin to import numpy (which turns
# an exception raised inside its import into an ImportError).
_WHILE_IMPORTING = """
import builtins, os, signal, sys
from jaxrl_fdg.cli import main
assert "jax" not in sys.modules, "importing the command imported JAX before its handler"
real, sent = builtins.__import__, signal.Signals[sys.argv[1]]
def send_at_numpy(name, *args, **kwargs):
    if name.partition(".")[0] == "numpy" and "numpy" not in sys.modules:
        os.kill(os.getpid(), sent)
    return real(name, *args, **kwargs)
builtins.__import__ = send_at_numpy
sys.argv = ["jaxrl-fdg", "train", "--total-steps", "2048", "--out", sys.argv[2]]
main()
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_while_the_command_imports_its_modules_ends_it_in_one_line(name, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _WHILE_IMPORTING, name, str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 128 + signal.Signals[name], proc.stderr
    assert proc.stderr.strip() == f"jaxrl-fdg: interrupted ({name})"
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_each_signal_at_each_stage_ends_within_seconds_and_the_folder_resumes(
    name, stage, reference, tmp_path
):
    flags = ["--eval-every", "32", "--eval-episodes", "2"] if stage == "evaluation" else []
    proc = subprocess.run(
        [sys.executable, str(VICTIM), str(tmp_path), name, stage, *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    ended = time.time()
    assert ended - float((tmp_path / "sent").read_text()) < 20  # loaded CI machines: generous
    assert "Traceback" not in proc.stderr, proc.stderr
    run = tmp_path / "run"
    if stage == "summary":  # the run had completed: the signal came too late to stop it
        assert proc.returncode == 0, proc.stderr
        assert _summary(run)["status"] == "completed"
        return
    assert proc.returncode == 128 + signal.Signals[name], proc.stderr
    if stage in ("parse", "folder"):  # stopped before the run had a folder to keep
        assert not run.exists()
        return
    summary = _summary(run)
    assert (summary["status"], summary["signal"]) == ("interrupted", name)
    if stage in ("chunk", "evaluation", "checkpoint"):  # a safe point: its checkpoint
        assert final_checkpoint(run, reference[1]).iteration == summary["iterations"] > 0
    _resume_equals_reference(run, reference)

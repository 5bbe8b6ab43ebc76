"""A run's start (``jaxrl_fdg.run.startup``): its folder made whole or not at all, opened and
locked to resume; its first state from the plan, checked for memory; a resume without a
checkpoint yet starting again; start-up's errors said in one line; what a run that stops before
it trains leaves in its folder. With stand-ins for the plan and the checkpointer where a real one
would compile (whole runs: tests/run/test_runner.py, tests/faults/)."""

import json
import signal
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.profiling import Timings
from jaxrl_fdg.run import startup, versions
from jaxrl_fdg.run.lock import FolderLock
from jaxrl_fdg.run.run_folder import RunFolder
from jaxrl_fdg.run.signals import Interrupted, Signals

OOM = jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 8 bytes")


def _resolved(tmp_path, **changes):
    return resolve(testing.tiny("ppo", out=str(tmp_path), run_name="run", **changes))


def test_a_fresh_folder_is_made_whole_and_locked(tmp_path):
    assert startup.open_folder(resolve(testing.tiny("ppo")), None) is None  # out = None
    folder = startup.open_folder(_resolved(tmp_path), None)
    try:
        assert folder.path == tmp_path / "run" and (folder.path / "config.toml").is_file()
        assert versions.read(folder.path)[0]["from_iteration"] == 0
        with pytest.raises(ConfigError, match="is in use by"):
            FolderLock.acquire(folder.path, "train")
    finally:
        folder.release()
    resumed, path = startup.folder_of_every_process(_resolved(tmp_path), folder.path)
    resumed.release()
    assert resumed.path == path == folder.path  # one process: its folder is the run's


def test_a_fresh_folder_that_cannot_be_completed_is_removed(tmp_path, monkeypatch):
    def full_disk(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RunFolder, "write_config", full_disk)
    with pytest.raises(OSError, match="No space left"):
        startup.open_folder(_resolved(tmp_path), None)
    assert list(tmp_path.iterdir()) == []


def test_a_resume_opens_a_folder_whose_metrics_read(tmp_path):
    folder = startup.open_folder(_resolved(tmp_path), None)
    folder.release()
    (folder.path / "metrics.jsonl").write_text('{"iteration": "two"}\n')
    with pytest.raises(ConfigError, match="metrics"):
        startup.open_folder(_resolved(tmp_path), folder.path)
    assert (folder.path / "config.toml").is_file()  # a resumed folder is never removed


def _plan(start):
    """A plan whose ``start`` is ``start(key, extra, before_init)``."""
    return SimpleNamespace(start=start, timings=Timings("off"), compiled_so_far={})


def _state():
    return LoopState({"learner": jnp.zeros(2)}, jax.random.key(0), jnp.zeros((), jnp.int32))


def test_the_first_state_is_the_plans_after_the_memory_check():
    checked = []

    def start(key, extra, before_init, cache=None):
        testing.assert_same_bits(key(), jax.random.key(0))  # the run's seed, made when asked
        before_init({})  # the memory check sees the compiled programs before init runs
        checked.append(extra)
        return _state()

    state, rows = startup.start(
        resolve(testing.tiny("ppo")), _plan(start), {"e": 1}, None, None, None
    )
    assert checked == [{"e": 1}] and rows == []
    testing.assert_same_bits(state, _state())


def test_a_resume_without_a_checkpoint_yet_starts_again(tmp_path, capsys):
    resolved = _resolved(tmp_path)
    folder = startup.open_folder(resolved, None)
    folder.release()
    stand_in = SimpleNamespace(steps=lambda: [], directory=folder.path / "checkpoints", versions={})
    state, rows = startup.start(resolved, _plan(lambda *a: _state()), {}, stand_in, folder, "r")
    assert int(state.iteration) == 0 and rows == []
    assert "has no checkpoint yet; the run starts again from iteration 0" in capsys.readouterr().err


def test_memory_that_runs_out_while_starting_is_one_line():
    def start(key, extra, before_init, cache=None):
        raise OOM

    with pytest.raises(ConfigError) as refused:
        startup.start(resolve(testing.tiny("ppo")), _plan(start), {}, None, None, None)
    assert str(refused.value) == (
        "out of memory while the run starts (RESOURCE_EXHAUSTED: Out of memory allocating 8 "
        "bytes); reduce num_envs (2) or rollout_len (8)"
    )
    with pytest.raises(jax.errors.JaxRuntimeError, match="INTERNAL"):
        with startup.memory_errors(resolve(testing.tiny("ppo"))):
            raise jax.errors.JaxRuntimeError("INTERNAL: something else")


def test_a_swept_value_that_decides_the_programs_structure_is_one_line():
    def structure(x):
        return jnp.zeros(int(x))  # a size from a traced value

    swept = resolve(testing.tiny("ppo", hparams={"lr": "1e-3,3e-4"}))
    with pytest.raises(ConfigError, match=r"ppo cannot sweep lr in one program: it decides the"):
        with startup.sweep_errors(swept):
            jax.jit(structure)(3)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        with startup.sweep_errors(resolve(testing.tiny("ppo"))):  # no sweep: JAX's own error
            jax.jit(structure)(3)


def _stopped(tmp_path, error, resume=None):
    resolved = _resolved(tmp_path)
    folder = startup.open_folder(resolved, None)
    folder.release()
    with Signals() as signals:
        startup.stopped_before_training(resolved, _plan(None), folder, resume, [], error, signals)
    return folder.path


def test_bad_input_before_training_leaves_no_fresh_folder(tmp_path):
    assert not _stopped(tmp_path, ConfigError("bad")).exists()
    assert _stopped(tmp_path, ConfigError("bad"), resume="r").exists()  # a resumed one stays


def test_a_stop_or_a_failure_before_training_is_said_in_the_summary(tmp_path):
    for error, status, name in [
        (Interrupted(signal.SIGTERM), "interrupted", "SIGTERM"),
        (KeyboardInterrupt(), "interrupted", "SIGINT"),
        (RuntimeError("compile failed"), "failed", None),
    ]:
        path = _stopped(tmp_path / status / str(name), error)
        summary = json.loads((path / "summary.json").read_text())
        assert (summary["status"], summary.get("signal"), summary["iterations"]) == (
            status,
            name,
            0,
        )

"""Concurrent and dying writers, Ctrl-C at start-up, and NaNs under ``--debug-nans``."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from faultkit import one_line_error

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.core import algorithm
from jaxrl_fdg.run import startup
from jaxrl_fdg.run.lock import FolderLock
from jaxrl_fdg.run.run_folder import RunFolder

# -- concurrent writers ----------------------------------------------------------------------


def test_runs_created_at_once_under_one_name_get_a_folder_each(tmp_path, monkeypatch):
    config = rl.TrainConfig(out=str(tmp_path), run_name="same")
    # A competitor that creates the folder between a look and a mkdir, every time it can.
    real_exists = Path.exists

    def competitor_first(self, *args, **kwargs):
        if self.parent == tmp_path and self.name.startswith("same"):
            self.mkdir(exist_ok=True)
            return False
        return real_exists(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", competitor_first)
    folders, barrier = [], threading.Barrier(8)

    def create():
        barrier.wait()
        folders.append(RunFolder.create(config))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    paths = [f.path for f in folders]
    assert len(paths) == 8 and len(set(paths)) == 8
    for folder in folders:
        folder.release()


def test_a_default_name_is_one_folder_inside_out(tmp_path):
    folder = RunFolder.create(rl.TrainConfig(env="brax/ant", out=str(tmp_path)))
    folder.release()
    assert folder.path.parent == tmp_path and folder.path.name.startswith("ppo-brax_ant-scan-s0-")


_HOLDER = """
import sys, time
from pathlib import Path
from jaxrl_fdg.run.lock import FolderLock
FolderLock.acquire(Path(sys.argv[1]), "train")
print("locked", flush=True)
time.sleep(600)
"""


def test_a_holder_that_dies_never_blocks_the_next_writer(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(rl.ConfigError, match=f"in use by pid {proc.pid} on .*train, since"):
            FolderLock.acquire(tmp_path, "train")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    FolderLock.acquire(tmp_path, "train").release()  # the kernel dropped the dead one's lock


# -- Ctrl-C during start-up ----------------------------------------------------------------


def test_ctrl_c_during_start_up_is_never_swallowed(tiny, monkeypatch):
    real_start = startup.start

    def start_with_a_swallowed_interrupt(*args, **kwargs):
        try:  # as a garbage-collector callback would: the interrupt is printed and dropped
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass
        return real_start(*args, **kwargs)

    monkeypatch.setattr(startup, "start", start_with_a_swallowed_interrupt)
    # Python's own handler, or SIG_IGN in a process started as a background job of a
    # non-interactive shell (CI launched with `&`): the run must put back whichever it found.
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        rl.train(tiny)
    assert signal.getsignal(signal.SIGINT) is before  # restored


# -- --debug-nans --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Hyper:
    poison_at: int = 2


def _build(ctx):
    def act(state, inputs, key):
        return state, {"action": jax.random.randint(key, (ctx.num_envs,), 0, 2)}

    def learn(state, inputs, key):
        calls = state + 1
        loss = jnp.log(jnp.where(calls >= ctx.hparams.poison_at, -1.0, 1.0))  # NaN at call 2
        return calls, {"metrics": {"loss": loss}}

    actor = rl.fragment("actor", "actor", act, outputs=("action",))
    learner = rl.fragment(
        "learner",
        "learner",
        learn,
        init=lambda key: jnp.zeros((), jnp.int32),
        inputs=("trajectory",),
        outputs=("metrics",),
    )
    return rl.Algorithm("nan-test", actor, learner)


_NAN = rl.AlgorithmSpec("nan-test", _Hyper, _build, lambda ctx: None, "makes a NaN")


def test_debug_nans_names_op_fragment_and_line_and_the_summary_says_non_finite(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(algorithm._REGISTRY, "nan-test", _NAN)
    argv = ["train", "--algo", "nan-test", "--total-steps", "32", "--num-envs", "2"]
    argv += ["--rollout-len", "4", "--log-every", "1", "--debug-nans", "--no-progress"]
    argv += ["--fusion", "fragment", "--profile", "off"]
    assert main([*argv, "--out", str(tmp_path), "--run-name", "r"]) == 1
    err = one_line_error(capsys)
    assert "non-finite value: invalid value (nan) encountered in log" in err
    assert "fragment 'learner'" in err and "test_process_faults.py:" in err
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["status"] == "non-finite"


# A real NaN in a stock algorithm: PPO's rewards scaled to 1e38 overflow the return normalisation.
_OVERFLOW = ["--reward-scaling", "1e38", "--debug-nans", "--total-steps", "64", "--num-envs", "2"]
_OVERFLOW += ["--rollout-len", "8", "--num-minibatches", "2", "--update-epochs", "1"]
_OVERFLOW += ["--log-every", "2", "--no-progress"]


# A stock algorithm's real NaN, op by op afterwards, in every compiled mode: the slow tier (the
# default tier's test_checkpoint.py::test_debug_nans_raises_at_the_op_that_made_the_nan holds
# the same path in scan mode).
@pytest.mark.slow
@pytest.mark.parametrize("fusion", ["scan", "fragment", "iteration"])
def test_debug_nans_on_a_real_nan_names_the_op_in_every_compiled_mode(fusion, tmp_path, capsys):
    argv = ["train", *_OVERFLOW, "--fusion", fusion, "--out", str(tmp_path), "--run-name", "r"]
    assert main(argv) == 1
    err = one_line_error(capsys)
    assert "non-finite value: invalid value (nan) encountered in" in err
    assert "fragment 'learner'" in err and "losses.py:" in err
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["status"] == "non-finite"


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_process_waiting_for_its_peers_stops_on_a_signal_within_seconds(signum, tmp_path):
    # Found by a probe: process 0 of two, its peer never started, ignored INT, TERM and HUP for
    # the five minutes JAX waits for peers, then aborted with a C++ stack.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "jaxrl_fdg", "train", "--placement", "data_parallel"]
    argv += ["--devices", "4", "--num-processes", "2", "--process-id", "0", "--coordinator"]
    argv += [f"127.0.0.1:{port}", "--num-envs", "8", "--rollout-len", "8", "--no-progress"]
    argv += ["--out", str(tmp_path / "runs")]
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):  # process 0 hosts the coordinator: it is waiting now
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        stopped = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err.decode()[-2000:]
    assert stopped < 10, stopped
    assert f"jaxrl-fdg: interrupted ({signal.Signals(signum).name})" in err.decode()
    assert not (tmp_path / "runs").exists()


def test_a_platform_jax_cannot_start_is_one_line(tmp_path):
    # Found by a probe: JAX_PLATFORMS=cuda on a machine without CUDA was a bare AssertionError.
    argv = [sys.executable, "-m", "jaxrl_fdg", "train", "--total-steps", "512", "--no-progress"]
    argv += ["--out", str(tmp_path / "runs")]
    env = {**os.environ, "JAX_PLATFORMS": "cuda"}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:  # a machine with CUDA: nothing to refuse
        pytest.skip("this machine has CUDA")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("jaxrl-fdg: error: JAX cannot start its backend for ")
    assert "JAX_PLATFORMS='cuda'" in proc.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("flags", ["garbage", "--garbage_flag", "--xla_ok=1 -x"])
def test_xla_flags_that_are_no_flags_are_one_line(flags, tmp_path):
    # Found by a probe: XLA stopped the process on them with up to 94 lines of C++ stack.
    argv = [sys.executable, "-m", "jaxrl_fdg", "train", "--total-steps", "512", "--no-progress"]
    argv += ["--out", str(tmp_path / "runs")]
    env = {**os.environ, "XLA_FLAGS": flags}
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    bad = flags.split()[-1]
    assert proc.returncode == 2 and proc.stderr == (
        f"jaxrl-fdg: error: XLA_FLAGS holds {bad!r}, which is no XLA flag (each is --xla_NAME "
        "or --xla_NAME=VALUE); XLA would stop the process on it\n"
    )
    assert not (tmp_path / "runs").exists()

"""Checkpoints, resume, interruption and non-finite values."""

import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.run.checkpoint import Checkpointer, NonFiniteError, find_non_finite

# Off-policy on purpose: the checkpoint must carry the replay buffer, priorities, target network,
# optimizer moments, the actor's step counter, env state and the key stream for an exact resume.
DQN = rl.TrainConfig(
    algo="dqn",
    total_steps=16 * 12,
    num_envs=4,
    rollout_len=4,
    progress=False,
    log_every=2,
    checkpoint_every=64,  # every 4 iterations
    hparams={"learning_starts": 32, "batch_size": 16, "buffer_size": 128, "replay": "prioritized"},
)


def test_resumed_run_equals_uninterrupted_bit_for_bit(tmp_path):
    full = rl.train(DQN.replace(out=str(tmp_path), run_name="full"))
    rl.train(DQN.replace(out=str(tmp_path), run_name="part"))
    checkpoints = tmp_path / "part" / "checkpoints"
    assert sorted(int(p.name) for p in checkpoints.iterdir() if p.name.isdigit()) == [4, 8, 12]
    # As if the run had died after the checkpoint at iteration 4.
    for late in ("8", "12"):
        shutil.rmtree(checkpoints / late)
    resumed = rl.train(DQN.replace(out=str(tmp_path), run_name="part"), resume=tmp_path / "part")
    testing.assert_same_bits(resumed.state, full.state)
    assert int(resumed.state.iteration) == 12 and len(resumed.metrics["loss"]) == 8
    # The rows logged after iteration 4 were replaced, not duplicated.
    rows = [json.loads(line) for line in (tmp_path / "part" / "metrics.jsonl").open()]
    assert [r["iteration"] for r in rows] == [2, 4, 6, 8, 10, 12]
    full_rows = [json.loads(line) for line in (tmp_path / "full" / "metrics.jsonl").open()]
    assert [r["loss"] for r in rows] == [r["loss"] for r in full_rows]
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["status"] == "completed"


@pytest.mark.parametrize(
    "fusion",
    [
        "scan",
        # Slow tier: the scan case holds the contract; these donate their own programs.
        pytest.param("iteration", marks=pytest.mark.slow),
        pytest.param("fragment", marks=pytest.mark.slow),
    ],
)
def test_a_donated_state_computes_the_same_and_resumes(tmp_path, monkeypatch, fusion):
    # A large state is donated to the programs that replace it (updated in place): lower the
    # threshold so this small one is, and check the run, its checkpoints and a resume.
    from jaxrl_fdg.config import resolve
    from jaxrl_fdg.policies import fusion as plans
    from jaxrl_fdg.policies import plan

    config = DQN.replace(fusion=fusion, out=str(tmp_path))
    kept = rl.train(config.replace(run_name="kept"))
    monkeypatch.setattr(plan, "DONATE_BYTES", 0)
    plan = plans.make_plan(fusion, rl.build_loop(resolve(DQN)), chunk=2)
    state = plan.init(jax.random.key(0))
    plan.advance(state, 1)
    assert all(x.is_deleted() for x in jax.tree.leaves(state.fragments["replay"]))
    donated = rl.train(config.replace(run_name="donated"))
    testing.assert_same_bits(donated.state.fragments, kept.state.fragments)
    checkpoints = tmp_path / "donated" / "checkpoints"
    for late in ("8", "12"):
        shutil.rmtree(checkpoints / late)
    resumed = rl.train(config.replace(run_name="donated"), resume=tmp_path / "donated")
    testing.assert_same_bits(resumed.state.fragments, kept.state.fragments)


# Slow tier: recurrent PPO × resume (the default tier resumes feed-forward runs bit for bit, and
# tests/fragments/test_recurrent.py covers the memory).
@pytest.mark.slow
def test_recurrent_resume_equals_uninterrupted(tmp_path):
    # The actor's memory of each environment is part of the state a resume must restore. The
    # sizes are those of the recurrent PPO of tests/policies/conftest.py.
    config = rl.TrainConfig(
        total_steps=2 * 8 * 3,
        num_envs=2,
        rollout_len=8,
        progress=False,
        log_every=2,
        checkpoint_every=16,  # every iteration
        hparams={
            "num_minibatches": 2,
            "update_epochs": 2,
            "hidden_sizes": (16,),
            "memory": "gru",
            "memory_size": 8,
        },
    )
    full = rl.train(config.replace(out=str(tmp_path), run_name="full"))
    rl.train(config.replace(out=str(tmp_path), run_name="part"))
    for late in ("2", "3"):
        shutil.rmtree(tmp_path / "part" / "checkpoints" / late)
    resumed = rl.train(config.replace(out=str(tmp_path), run_name="part"), resume=tmp_path / "part")
    assert float(np.abs(full.state.fragments["actor"].memory).max()) > 0
    testing.assert_same_bits(resumed.state, full.state)


def test_keep_bounds_the_number_of_checkpoints(tmp_path):
    rl.train(DQN.replace(out=str(tmp_path), run_name="r", checkpoint_every=16, keep=2))
    kept = sorted(int(p.name) for p in (tmp_path / "r" / "checkpoints").iterdir())
    assert kept == [10, 12]


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(rl.ConfigError, match="is not a run folder"):
        rl.train(DQN, resume=folder)


# -- interruption ----------------------------------------------------------------------------

_SCRIPT = """
import sys
import threading
import time
import jaxrl_fdg as rl
from jaxrl_fdg.run.session import Session

if sys.argv[2:] == ["hold-at-boundary"]:
    # Once a stop is requested, the boundary's checkpoint waits (up to a minute): a second Ctrl-C
    # always finds the run between the first request and its end, however loaded the machine.
    checkpoint = Session.checkpoint

    def held(self, state):
        if self.stop_requested:
            time.sleep(60)
        return checkpoint(self, state)

    Session.checkpoint = held
config = rl.TrainConfig(
    algo="dqn", total_steps=16 * 4000, num_envs=4, rollout_len=4, progress=False, log_every=5,
    out=sys.argv[1], run_name="run", hparams={"learning_starts": 32, "batch_size": 16,
    "buffer_size": 128},
)
result = rl.train(config)
print("status", result.summary["status"], flush=True)
"""


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(tmp_path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    metrics = tmp_path / "run" / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while not (metrics.exists() and metrics.read_text().count("\n") >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never logged"
        time.sleep(0.05)
    return proc, tmp_path / "run"


def test_sigterm_stops_at_a_boundary_with_a_checkpoint_and_resume_completes(tmp_path):
    proc, run = _start(tmp_path)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "status interrupted" in out and "stopping within seconds, at the next safe point" in err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    saved = Checkpointer(run / "checkpoints").latest()
    # The checkpoint holds the state after the last logged row: nothing is lost or repeated.
    assert saved == rows[-1]["iteration"] == summary["iterations"] < 4000


def test_second_ctrl_c_stops_at_once(tmp_path):
    proc, run = _start(tmp_path, "hold-at-boundary")
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    proc.send_signal(signal.SIGINT)
    # Signals sent before the first is handled would merge into one: wait for its message.
    deadline = time.monotonic() + 60
    while not any("stopping within seconds, at the next safe point" in line for line in lines):
        assert time.monotonic() < deadline and proc.poll() is None, lines
        time.sleep(0.01)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    reader.join(timeout=10)
    assert proc.returncode != 0 and any("KeyboardInterrupt" in line for line in lines)
    assert time.monotonic() - sent < 50  # at once, not after the held checkpoint's minute
    # Even so the folder is consistent: its summary is written and says so.
    assert json.loads((run / "summary.json").read_text())["status"] == "interrupted"


# -- non-finite values ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Hyper:
    poison_at: int = 3  # the learner call (1-based) whose output turns NaN
    poison: str = "metric"  # "metric" or "params"


def _build(ctx):
    def act(state, inputs, key):
        del inputs
        return state, {"action": jax.random.randint(key, (ctx.num_envs,), 0, 2)}

    def learn(state, inputs, key):
        del inputs, key
        calls = state["calls"] + 1
        bad = calls >= ctx.hparams.poison_at
        nan = jnp.where(bad, jnp.nan, 0.0)
        w = state["w"] + (nan if ctx.hparams.poison == "params" else 0.0)
        metric = nan if ctx.hparams.poison == "metric" else jnp.float32(0)
        return {"w": w, "calls": calls}, {"metrics": {"loss": metric}}

    actor = rl.fragment("actor", "actor", act, outputs=("action",))
    learner = rl.fragment(
        "learner",
        "learner",
        learn,
        init=lambda key: {"w": jnp.zeros(3), "calls": jnp.zeros((), jnp.int32)},
        inputs=("trajectory",),
        outputs=("metrics",),
    )
    return rl.Algorithm("poisoned", actor, learner)


_POISONED = rl.AlgorithmSpec("poisoned", _Hyper, _build, lambda ctx: None, "test algorithm")
_SMALL = rl.TrainConfig(
    algo="poisoned", total_steps=8 * 6, num_envs=2, rollout_len=4, progress=False, log_every=1
)


def test_non_finite_metric_names_fragment_and_iteration(tmp_path):
    config = _SMALL.replace(out=str(tmp_path), run_name="r", checkpoint_every=8)
    with pytest.raises(NonFiniteError, match="non-finite loss .* 'learner' at iteration 3"):
        rl.train(config, _POISONED)
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["status"] == "non-finite"
    # The checkpoints written before are intact and finite.
    checkpointer = Checkpointer(tmp_path / "r" / "checkpoints")
    assert checkpointer.latest() <= 2


def test_non_finite_parameters_never_reach_a_checkpoint(tmp_path):
    config = _SMALL.replace(
        out=str(tmp_path), run_name="r", checkpoint_every=16, hparams={"poison": "params"}
    )
    with pytest.raises(NonFiniteError, match=r"learner\['w'\] at iteration 4"):
        rl.train(config, _POISONED)
    assert Checkpointer(tmp_path / "r" / "checkpoints").latest() == 2


@pytest.mark.parametrize("on_host", [True, False], ids=["numpy", "compiled"])
def test_both_checks_name_the_first_non_finite_leaf(monkeypatch, on_host):
    # A CPU state is read with numpy; an accelerator's goes through one compiled check. Both
    # name the first fragment and leaf holding a NaN or inf, and pass a finite state.
    monkeypatch.setattr("jaxrl_fdg.run.checkpoint._in_host_memory", lambda x: on_host)
    fragments = {
        "env": {"obs": jnp.ones((2, 3)), "t": jnp.zeros(2, jnp.int32)},
        "learner": {"b": jnp.zeros(2), "w": jnp.array([0.0, jnp.inf])},
        "late": {"v": jnp.array([jnp.nan])},
    }
    state = types.SimpleNamespace(fragments=fragments)
    assert find_non_finite(state) == "learner['w']"
    fragments["learner"]["w"] = jnp.zeros(2)
    assert find_non_finite(state) == "late['v']"
    fragments["late"]["v"] = jnp.zeros(1)
    assert find_non_finite(state) is None


_SPLIT_DEVICES_SCRIPT = """
import json, types
import jax, jax.numpy as jnp
from jaxrl_fdg.run import checkpoint

checkpoint._in_host_memory = lambda x: False  # the compiled check, as on an accelerator
first, second = jax.devices()
fragments = {
    "rollout": {"obs": jax.device_put(jnp.ones(3), first)},
    "learner": {"w": jax.device_put(jnp.array([0.0, jnp.nan]), second)},
}
found = checkpoint.find_non_finite(types.SimpleNamespace(fragments=fragments))
fragments["learner"]["w"] = jax.device_put(jnp.zeros(2), second)
clean = checkpoint.find_non_finite(types.SimpleNamespace(fragments=fragments))
print("REPORT", json.dumps({"found": found, "clean": clean}))
"""


def test_compiled_check_takes_fragments_on_different_devices(report_on_devices):
    # The actor/learner split keeps the rollout and the learner on devices of their own; one
    # compiled program over both fragments' leaves would refuse arguments from two devices.
    report = report_on_devices(_SPLIT_DEVICES_SCRIPT, devices=2, timeout=120)
    assert report == {"found": "learner['w']", "clean": None}


@pytest.mark.parametrize("fusion", [pytest.param("scan", marks=pytest.mark.slow), "step"])
def test_debug_nans_raises_at_the_op_that_made_the_nan(fusion):
    config = _SMALL.replace(out=None, debug_nans=True, fusion=fusion)
    with pytest.raises(FloatingPointError, match="invalid value \\(nan\\)"):
        rl.train(config, _POISONED)
    assert not jax.config.jax_debug_nans  # restored after the run

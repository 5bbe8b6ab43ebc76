"""Brax environment states through checkpoints: a save and restore returns every leaf bit for bit,
zero-size leaves included, and a PPO run on Brax resumed from a checkpoint equals the
uninterrupted run."""

import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.core.env_fragment import env_fragment
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.envs import make
from jaxrl_fdg.envs.brax_adapter import BACKENDS
from jaxrl_fdg.run.checkpoint import Checkpointer

pytest.importorskip("brax")

ENV = "brax/inverted_pendulum"


def _env_state(backend: str, **options):
    """``init(key) -> LoopState`` holding the env fragment's state for 2 environments, jitted."""
    env, params = make(f"{ENV}:{backend}", **options)
    init = jax.jit(env_fragment(env, params, 2).init)

    def loop_state(seed: int) -> LoopState:
        state = init(jax.random.key(seed))
        return LoopState({"env": state}, jax.random.key(seed), jnp.zeros((), jnp.int32))

    return loop_state


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes: bit for bit, NaN payloads and signed zeros included."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(
    "backend, options",
    # MJX (the default backend) and spring by default; the other pipelines in the slow tier.
    [
        pytest.param(b, {}, marks=() if b in ("mjx", "spring") else pytest.mark.slow)
        for b in BACKENDS
    ]
    # The state restarts copy from: a second Brax state per environment.
    + [pytest.param("mjx", {"auto_reset": "first_state"}, marks=pytest.mark.slow)],
)
def test_restore_returns_every_leaf_of_a_brax_state_bit_for_bit(tmp_path, backend, options):
    loop_state = _env_state(backend, **options)
    saved, like = loop_state(1), loop_state(2)
    checkpointer = Checkpointer(tmp_path)
    assert checkpointer.save(saved) == 0
    restored = checkpointer.restore(like)
    # Shapes alone are enough to restore into (what `evaluate` does, compiling nothing).
    from_shapes = checkpointer.restore(jax.eval_shape(lambda state: state, like))
    checkpointer.close()

    assert jax.tree.structure(restored) == jax.tree.structure(saved)
    got, want, other = testing.leaves(restored), testing.leaves(saved), testing.leaves(like)
    for (path, x), (_, y), (_, z) in zip(got, want, testing.leaves(from_shapes), strict=True):
        assert _identical(x, y), f"{backend}: leaf {path} differs after restore"
        assert _identical(z, y), f"{backend}: leaf {path} differs after a restore from shapes"
    # The state from the other key differs, so the equality above came from the checkpoint.
    assert not all(_identical(x, y) for (_, x), (_, y) in zip(other, want, strict=True))


def test_some_brax_state_holds_zero_size_leaves():
    # The checkpoint writes zero-size arrays not at all and takes them from ``like``; this makes
    # sure the round trip above really meets them (MJX's data has empty fields such as ``act``).
    def zero_size(backend: str) -> list[str]:
        env, params = make(f"{ENV}:{backend}")
        shapes = jax.eval_shape(env_fragment(env, params, 2).init, jax.random.key(0))
        leaves = jax.tree_util.tree_leaves_with_path(shapes)
        return [jax.tree_util.keystr(p) for p, x in leaves if np.prod(x.shape) == 0]

    assert any(zero_size(backend) for backend in BACKENDS)


# -- a whole run --------------------------------------------------------------------------------

# Four iterations of 4 envs × 8 steps, checkpointed every two: at iterations 2 and 4.
# spring is the backend whose PPO run compiles fastest for inverted_pendulum (cold cache, 2 CPU
# cores: spring about 24 s, positional 33 s, generalized 34 s, mjx 42 s).
PPO = rl.TrainConfig(
    algo="ppo",
    env=f"{ENV}:spring",
    num_envs=4,
    rollout_len=8,
    total_steps=4 * 8 * 4,
    log_every=1,
    checkpoint_every=4 * 8 * 2,
    progress=False,
    hparams={"num_minibatches": 2, "update_epochs": 1},
)


@pytest.mark.slow  # 40 s cold; the default tier restores every backend's state bit for bit
def test_resumed_brax_run_equals_uninterrupted_bit_for_bit(tmp_path):
    full = rl.train(PPO.replace(out=str(tmp_path), run_name="full"))
    rl.train(PPO.replace(out=str(tmp_path), run_name="part"))
    checkpoints = tmp_path / "part" / "checkpoints"
    assert sorted(int(p.name) for p in checkpoints.iterdir() if p.name.isdigit()) == [2, 4]
    # As if the run had died after the checkpoint at iteration 2.
    shutil.rmtree(checkpoints / "4")
    part = PPO.replace(out=str(tmp_path), run_name="part")
    resumed = rl.train(part, resume=tmp_path / "part")

    assert int(resumed.state.iteration) == 4 and len(resumed.metrics["loss"]) == 2
    got, want = testing.leaves(resumed.state), testing.leaves(full.state)
    assert [p for p, _ in got] == [p for p, _ in want]
    for (path, x), (_, y) in zip(got, want, strict=True):
        assert _identical(x, y), f"leaf {path} differs from the uninterrupted run"
    rows = [json.loads(line) for line in (tmp_path / "part" / "metrics.jsonl").open()]
    full_rows = [json.loads(line) for line in (tmp_path / "full" / "metrics.jsonl").open()]
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    assert [r["loss"] for r in rows] == [r["loss"] for r in full_rows]

"""Whole runs on a gymnax environment (``gymnax/<id>``): ``step`` and ``scan`` give the same run,
and a run resumed from a checkpoint equals the uninterrupted one, leaf for leaf (slow tier: four
runs, 15 s)."""

import json
import shutil

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl

pytest.importorskip("gymnax")

# Four iterations of 4 envs × 8 steps on gymnax's Catch, checkpointed every two: at 2 and 4.
PPO = rl.TrainConfig(
    algo="ppo",
    env="gymnax/Catch-bsuite",
    num_envs=4,
    rollout_len=8,
    total_steps=4 * 8 * 4,
    log_every=1,
    checkpoint_every=4 * 8 * 2,
    progress=False,
    hparams={"num_minibatches": 2, "update_epochs": 1, "hidden_sizes": (16,)},
)


def _leaves(state):
    raw = state._replace(key=jax.random.key_data(state.key))
    return [
        (jax.tree_util.keystr(p), np.asarray(x))
        for p, x in jax.tree_util.tree_leaves_with_path(raw)
    ]


@pytest.mark.slow
def test_fusion_modes_and_resume_give_the_same_run(tmp_path):
    full = rl.train(PPO.replace(out=str(tmp_path), run_name="full"))
    step = rl.train(PPO.replace(out=None, fusion="step"))
    for (path, x), (_, y) in zip(_leaves(step.state), _leaves(full.state), strict=True):
        np.testing.assert_array_equal(x, y, err_msg=f"step mode differs at {path}")

    rl.train(PPO.replace(out=str(tmp_path), run_name="part"))
    checkpoints = tmp_path / "part" / "checkpoints"
    shutil.rmtree(checkpoints / "4")  # as if the run had died after the checkpoint at 2
    resumed = rl.train(PPO.replace(out=str(tmp_path), run_name="part"), resume=tmp_path / "part")
    assert int(resumed.state.iteration) == 4
    for (path, x), (_, y) in zip(_leaves(resumed.state), _leaves(full.state), strict=True):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f"leaf {path} differs"
    rows = [json.loads(line) for line in (tmp_path / "part" / "metrics.jsonl").open()]
    full_rows = [json.loads(line) for line in (tmp_path / "full" / "metrics.jsonl").open()]
    assert [r["loss"] for r in rows] == [r["loss"] for r in full_rows]

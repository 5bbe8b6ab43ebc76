"""Whole runs on a gymnax environment (``gymnax/<id>``): ``step`` and ``scan`` give the same run,
and a run resumed from a checkpoint equals the uninterrupted one, leaf for leaf (slow tier: four
runs, 15 s)."""

import json
import shutil

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing

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


@pytest.mark.slow
def test_fusion_modes_and_resume_give_the_same_run(tmp_path):
    full = rl.train(PPO.replace(out=str(tmp_path), run_name="full"))
    step = rl.train(PPO.replace(out=None, fusion="step"))
    testing.assert_same_bits(step.state, full.state, "step mode")

    rl.train(PPO.replace(out=str(tmp_path), run_name="part"))
    checkpoints = tmp_path / "part" / "checkpoints"
    shutil.rmtree(checkpoints / "4")  # as if the run had died after the checkpoint at 2
    resumed = rl.train(PPO.replace(out=str(tmp_path), run_name="part"), resume=tmp_path / "part")
    assert int(resumed.state.iteration) == 4
    pairs = zip(testing.leaves(resumed.state), testing.leaves(full.state), strict=True)
    for (path, x), (_, y) in pairs:
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f"leaf {path} differs"
    rows = [json.loads(line) for line in (tmp_path / "part" / "metrics.jsonl").open()]
    full_rows = [json.loads(line) for line in (tmp_path / "full" / "metrics.jsonl").open()]
    assert [r["loss"] for r in rows] == [r["loss"] for r in full_rows]

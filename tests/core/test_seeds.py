"""Several seeds in one program: each lane is the run with its seed alone."""

import json

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import plots

BASE = rl.TrainConfig(
    total_steps=2 * 8 * 4,
    num_envs=2,
    rollout_len=8,
    progress=False,
    log_every=2,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)
# Batched matrix products may round differently from unbatched ones: lanes agree with the
# single-seed runs to float32 rounding, not bit for bit.
TOL = dict(rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fusion", ["scan", "step"])
@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_each_seed_equals_its_run_alone(algo, fusion):
    hparams = BASE.hparams if algo == "ppo" else {"learning_starts": 16, "batch_size": 8}
    config = BASE.replace(algo=algo, fusion=fusion, out=None, seed=3, hparams=hparams)
    many = rl.train(config.replace(num_seeds=3))
    for lane in range(3):
        alone = rl.train(config.replace(seed=3 + lane))
        lane_state = jax.tree.map(lambda x, i=lane: x[i], many.state.fragments)
        jax.tree.map(
            lambda a, b: np.testing.assert_allclose(a, b, **TOL), lane_state, alone.state.fragments
        )
        for key, values in alone.metrics.items():
            np.testing.assert_allclose(many.metrics[key][:, lane], values, **TOL, err_msg=key)


def test_per_seed_folders_plot_as_replicates(tmp_path):
    hparams = {"learning_starts": 16, "batch_size": 8}
    config = BASE.replace(
        algo="dqn", out=str(tmp_path), run_name="r", num_seeds=2, eval_every=32, hparams=hparams
    )
    rl.train(config)
    run = tmp_path / "r"
    for seed in (0, 1):
        rows = [json.loads(line) for line in (run / f"seed-{seed}" / "metrics.jsonl").open()]
        assert [r["iteration"] for r in rows] == [2, 4]
        assert rows[-1]["eval_return"] is not None
    seeds = [plots.load_run(run / f"seed-{s}") for s in (0, 1)]
    assert [r.config["seed"] for r in seeds] == [0, 1]
    (group,) = plots.group_runs(seeds)
    assert len(group.runs) == 2
    result = rl.evaluate(run)
    assert len(result["per_seed"]["eval_return"]) == 2
    assert result["eval_return"] == pytest.approx(np.mean(result["per_seed"]["eval_return"]))


def test_host_simulators_take_one_seed():
    with pytest.raises(rl.ConfigError, match="num_seeds = 2 needs a JAX environment"):
        rl.resolve(BASE.replace(env="gym/CartPole-v1", num_seeds=2, out=None))

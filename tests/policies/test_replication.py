"""Several seeds in one program: each lane is the run with its seed alone."""

import json
import subprocess
import sys

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


_EQUALITY = """
import sys
import jax, numpy as np
import jaxrl_fdg as rl
algo, fusion = sys.argv[1], sys.argv[2]
hparams = (
    {"num_minibatches": 2, "update_epochs": 2}
    if algo.startswith("ppo")
    else {"learning_starts": 16, "batch_size": 8}
)
if algo == "ppo_gru":  # recurrent: each lane's actor keeps its own memory
    algo = "ppo"
    hparams.update(memory="gru", memory_size=8, hidden_sizes=(16,))
config = rl.TrainConfig(
    algo=algo, fusion=fusion, total_steps=64, num_envs=2, rollout_len=8, out=None,
    progress=False, log_every=2, seed=3, hparams=hparams,
)
many = rl.train(config.replace(num_seeds=3))
for lane in range(3):
    alone = rl.train(config.replace(seed=3 + lane))
    lane_state = jax.tree.map(lambda x: x[lane], many.state.fragments)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
        lane_state,
        alone.state.fragments,
    )
    for key, values in alone.metrics.items():
        np.testing.assert_allclose(
            many.metrics[key][:, lane], values, rtol=1e-4, atol=1e-5, err_msg=key
        )
print("EQUAL")
"""


@pytest.mark.parametrize(
    "algo, fusion",
    [
        ("ppo", "scan"),
        # The same vmap over seeds on an off-policy graph in step mode: slow tier.
        pytest.param("dqn", "step", marks=pytest.mark.slow),
        pytest.param("ppo_gru", "scan", marks=pytest.mark.slow),
    ],
)
def test_each_seed_equals_its_run_alone(algo, fusion):
    # In a subprocess with a deadline, so that a hang fails this test instead of stalling the
    # suite. Vmapped init programs used to hang here now and then: batched QRs of the orthogonal
    # initializer waiting on a full XLA:CPU pool (docs/decisions.md); the initializer now keeps
    # its QRs unbatched.
    out = subprocess.run(
        [sys.executable, "-c", _EQUALITY, algo, fusion],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0 and "EQUAL" in out.stdout, out.stderr[-3000:]


@pytest.mark.slow
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
    assert len(result["per_run"]["eval_return"]) == 2
    assert result["eval_return"] == pytest.approx(np.mean(result["per_run"]["eval_return"]))


def test_host_simulators_take_one_seed():
    with pytest.raises(
        rl.ConfigError,
        match=r"2 runs \(num_seeds = 2 × the hyperparameter sweep\) cannot step a host simulator"
        r".*run one process per seed instead",
    ):
        rl.resolve(BASE.replace(env="gym/CartPole-v1", num_seeds=2, out=None))

"""Hyperparameter sweeps in one program: each lane is the run with its values alone."""

import subprocess
import sys
import tomllib

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve, split_sweep
from jaxrl_fdg.errors import ConfigError

_EQUALITY = """
import jax, numpy as np
import jaxrl_fdg as rl
config = rl.TrainConfig(
    fusion="scan", total_steps=4 * 16 * 4, num_envs=4, rollout_len=16, out=None,
    progress=False, log_every=2, num_seeds=2,
    hparams={"num_minibatches": 2, "update_epochs": 2, "lr": "1e-3,3e-4", "ent_coef": [0.0, 0.05]},
)
swept = rl.train(config)
runs = rl.resolve(config).lanes
assert len(runs) == 8 and swept.metrics["loss"].shape[1] == 8
worst = 0.0
for i, lane in enumerate(runs):
    alone = rl.train(config.replace(
        seed=lane.seed, num_seeds=1, hparams={**config.hparams, **lane.point}
    ))
    lane_state = jax.tree.map(lambda x: x[i], swept.state.fragments)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
        lane_state, alone.state.fragments,
    )
    for key, values in alone.metrics.items():
        np.testing.assert_allclose(swept.metrics[key][:, i], values, rtol=1e-4, atol=1e-5)
# The lanes differ: the sweep is not one run repeated.
learner = swept.state.fragments["learner"]
a, b = (jax.tree.map(lambda x: x[i], learner) for i in (0, 4))
assert any(not np.allclose(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
print("EQUAL")
"""


@pytest.mark.slow  # the default tier: a random search's lane equals its point alone
def test_each_lane_of_a_sweep_equals_its_run_alone():
    # A subprocess with a deadline, as in test_replication.py: a hang fails the test.
    out = subprocess.run(
        [sys.executable, "-c", _EQUALITY], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and "EQUAL" in out.stdout, out.stderr[-3000:]


BASE = rl.TrainConfig(
    total_steps=2 * 8 * 2,
    num_envs=2,
    rollout_len=8,
    progress=False,
    log_every=1,
    hparams={"num_minibatches": 2, "update_epochs": 1},
)


def test_lanes_are_every_combination_then_every_seed():
    config = BASE.replace(num_seeds=2, hparams={"lr": [1e-3, 3e-4], "gamma": "0.9,0.9000001"})
    names = [lane.name for lane in resolve(config).lanes]
    assert names[:3] == [
        "lr=0.001-gamma=0.9-seed-0",
        "lr=0.001-gamma=0.9-seed-1",
        "lr=0.001-gamma=0.9000001-seed-0",
    ]
    assert len(names) == 8 and len(set(names)) == 8  # close values still get their own folders


def test_tuple_hyperparameters_are_values_not_sweeps():
    spec = rl.algorithm.get("ppo")
    fixed, sweep = split_sweep(spec, {"hidden_sizes": "32,32", "lr": "1e-3,3e-4"})
    assert fixed == {"hidden_sizes": "32,32"} and sweep == {"lr": (1e-3, 3e-4)}


@pytest.mark.parametrize(
    "hparams, message",
    [
        ({"update_epochs": "1,2"}, "only float hyperparameters can be swept"),
        ({"lr": "1e-3,1e-3"}, "distinct values"),
        ({"lr": "1e-3,fast"}, "lr must be of type float"),
        ({"lr": "1e-3,-1"}, "lr"),
    ],
)
def test_bad_sweeps_are_rejected_before_compiling(hparams, message):
    with pytest.raises(ConfigError, match=message):
        rl.resolve(BASE.replace(hparams=hparams))


def test_a_sweep_of_a_value_that_shapes_the_program_is_rejected_while_tracing():
    # TD3 decides from target_noise > 0 whether to smooth the target policy: a Python branch.
    config = rl.TrainConfig(
        algo="td3",
        env="Pendulum-v1",
        total_steps=64,
        num_envs=2,
        rollout_len=8,
        out=None,
        progress=False,
        hparams={"target_noise": "0.0,0.2", "batch_size": 8, "learning_starts": 16},
    )
    with pytest.raises(ConfigError, match="cannot sweep target_noise in one program"):
        rl.train(config)


def test_sweep_run_folder_has_one_folder_per_lane(tmp_path):
    config = BASE.replace(out=str(tmp_path), run_name="sweep", hparams={"lr": "1e-3,3e-4"})
    result = rl.train(config)
    saved = tomllib.loads((result.run_dir / "config.toml").read_text())
    assert saved["hparams"]["lr"] == [1e-3, 3e-4]  # the sweep re-runs from its config file
    for lane, lr in (("lr=0.001-seed-0", 1e-3), ("lr=0.0003-seed-0", 3e-4)):
        lane_config = tomllib.loads((result.run_dir / lane / "config.toml").read_text())
        assert lane_config["hparams"]["lr"] == lr and lane_config["num_seeds"] == 1
        rows = (result.run_dir / lane / "metrics.jsonl").read_text().splitlines()
        assert len(rows) == 2

"""PPO with the ``cnn`` torso learns MinAtar Breakout through the gymnax adapter (slow tier).

Settings: PureJaxRL's PPO configuration for MinAtar (64 environments × 128 steps, learning rate
5e-4 annealed, 4 epochs of 8 minibatches, γ 0.99, λ 0.95, clip 0.2, entropy 0.01), on a budget of
200k steps instead of its 10M. A random policy breaks about 0.5 bricks per episode; PureJaxRL's
agent passes 20 over its 10M steps. Here the return climbs past 3 within the 200k steps
(``python benchmarks/simulator_curves.py --task minatar`` draws the longer curve).
"""

import numpy as np
import pytest

import jaxrl_fdg as rl

MINATAR = rl.TrainConfig(
    algo="ppo",
    env="gymnax/Breakout-MinAtar",
    total_steps=200_000,
    num_envs=64,
    rollout_len=128,
    log_every=2,
    out=None,
    progress=False,
    hparams={
        "torso": "cnn",
        "activation": "relu",
        "lr": 5e-4,
        "num_minibatches": 8,
        "update_epochs": 4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_eps": 0.2,
        "ent_coef": 0.01,
    },
)


@pytest.mark.slow
def test_ppo_learns_breakout_minatar():
    pytest.importorskip("gymnax")
    # About 10 s of compiling and 45 s of training at ~4.5k env-steps/s on 2 CPU cores.
    metrics = rl.train(MINATAR).metrics
    returns = metrics["episode_return_sum"] / np.maximum(metrics["episodes"], 1)
    assert returns[0] < 1.0  # random play to start with
    assert returns[-3:].mean() >= 3.0, np.round(returns, 2)

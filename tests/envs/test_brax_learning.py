"""Continuous PPO and SAC learn a Brax task: inverted_pendulum on MJX, at CPU size (slow tier).

PPO:

The settings follow Brax's own PPO configuration for this task (its training notebook and
``brax/training`` configs: ``num_timesteps=2_000_000, reward_scaling=10, episode_length=1000,
normalize_observations=True, discounting=0.97, learning_rate=3e-4, entropy_cost=1e-2``, a PPO
clip of 0.3, no value clipping, no gradient clipping, a constant learning rate), with 256
environments instead of 2048 and batches sized for a 2-core CPU. Brax trains this task to its
ceiling, an episode return of 1000 (a pole kept up for the whole 1000-step episode); the test asks
for a 40,960-step window averaging 250 within 1M steps, half of Brax's budget (see the test).

SAC: the SAC settings Brax's training notebook gives this task (``num_timesteps=300_000,
reward_scaling=10, discounting=0.97, learning_rate=3e-4, num_envs=64, batch_size=64,
grad_updates_per_step=32, max_replay_size=2**14, min_replay_size=2**9,
normalize_observations=True``: 32 updates per 64 env steps, an update-to-data ratio of 0.5), with
64 × 64 networks, as ``benchmarks/brax_training.py --setup sac`` trains it on both sides. The
test evaluates the deterministic policy every 8k steps over 8 episodes and asks for a first
evaluation below 200, one averaging 900 of the 1000 steps within 100k steps (a third of that
budget), and a last one as high. Measured: 97 at 12.8k steps, 1000 at 51k, then a dip (485,
231), and 1000 at every evaluation from 77k on.
"""

import json

import numpy as np
import pytest

import jaxrl_fdg as rl

BRAX_LIKE = rl.TrainConfig(
    algo="ppo",
    env="brax/inverted_pendulum",
    total_steps=1_000_000,
    num_envs=256,
    rollout_len=16,
    out=None,
    progress=False,
    hparams={
        "gamma": 0.97,
        "lr": 3e-4,
        "anneal_lr": False,
        "ent_coef": 0.01,
        "clip_eps": 0.3,
        "vf_clip": float("inf"),
        "max_grad_norm": 1e9,
        "update_epochs": 4,
        "num_minibatches": 4,
        "normalize_observations": True,
        "reward_scaling": 10.0,
    },
)


@pytest.mark.slow
def test_ppo_keeps_the_pendulum_up():
    # About 40 s of compiling and 35 s of training at 30k env-steps/s on 2 CPU cores.
    metrics = rl.train(BRAX_LIKE).metrics
    # Mean return of the episodes that ended in each window of 10 iterations (40,960 steps).
    window = 10
    sums = np.add.reduceat(
        metrics["episode_return_sum"], np.arange(0, len(metrics["episodes"]), window)
    )
    counts = np.add.reduceat(metrics["episodes"], np.arange(0, len(metrics["episodes"]), window))
    means = sums / np.maximum(counts, 1)
    assert means[0] < 100  # it starts by dropping the pole within a few dozen steps
    # Brax's own trainer reaches the ceiling with these settings at 2048 envs and 2M steps. At
    # this CPU size ours learns, but how far within 1M steps depends on the seed and on the float
    # arithmetic: seed 0 passed 900 in an earlier install and peaks at 391 in a fresh one, with
    # the code of that earlier run as with today's (mujoco 3.17 and 4.0 alike); the benchmark's
    # seeds end between 286 and 916. The test asks for a window averaging a quarter of the episode.
    assert means.max() >= 250, np.round(means)


SAC_BRAX_LIKE = rl.TrainConfig(
    algo="sac",
    env="brax/inverted_pendulum",
    total_steps=100_000,
    num_envs=64,
    rollout_len=1,
    log_every=100,
    progress=False,
    hparams={
        "gamma": 0.97,
        "actor_lr": 3e-4,
        "critic_lr": 3e-4,
        "alpha_lr": 3e-4,
        "reward_scaling": 10.0,
        "batch_size": 64,
        "utd_ratio": 0.5,
        "buffer_size": 2**14,
        "learning_starts": 2**9,
        "hidden_sizes": (64, 64),
        "normalize_observations": True,
    },
)


@pytest.mark.slow
def test_sac_keeps_the_pendulum_up(tmp_path):
    # About 30 s on 2 CPU cores with a warm compilation cache, and about 15 s more cold.
    config = SAC_BRAX_LIKE.replace(out=str(tmp_path), run_name="sac", eval_every=8_000)
    rl.train(config.replace(eval_episodes=8))
    rows = [json.loads(line) for line in (tmp_path / "sac" / "metrics.jsonl").open()]
    evaluations = [r["eval_return"] for r in rows if r["eval_return"] is not None]
    assert len(evaluations) >= 12 and evaluations[0] < 200
    assert max(evaluations) >= 900 and evaluations[-1] >= 900, evaluations

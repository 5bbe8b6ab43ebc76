"""MuJoCo Playground tasks (``playground/<name>``) behind our Environment API (slow tier: MJX
programs take 10-40 s to compile here).

Our reset and step are Playground's own, bit for bit; the time limit is ours; a PPO run resumed
from a checkpoint equals the uninterrupted run; and PPO learns CartpoleBalance.
"""

import json
import shutil

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing

pytest.importorskip("mujoco_playground")

pytestmark = pytest.mark.slow


def test_steps_equal_playground_own_and_episodes_end_at_max_steps():
    env, params = envs.make("playground/CartpoleBalance", max_steps=20)
    theirs = env.playground_env
    steps = 30
    actions = jax.random.uniform(jax.random.key(1), (steps, 1), minval=-1.0, maxval=1.0)

    @jax.jit
    def side_by_side(key):
        state, ts = env.reset(key, params)
        their_state = theirs.reset(key)

        def body(carry, action):
            state, their_state = carry
            state, ts = env.step(jax.random.key(0), state, action, params)
            their_state = theirs.step(their_state, action)
            return (state, their_state), (ts, their_state.obs, their_state.reward)

        _, out = jax.lax.scan(body, (state, their_state), actions)
        return ts.observation, their_state.obs, out

    first, their_first, (ts, their_obs, their_reward) = side_by_side(jax.random.key(0))
    np.testing.assert_array_equal(first, their_first)
    # Before our time limit ends the episode at step 20, every step is Playground's own.
    np.testing.assert_array_equal(ts.observation[:19], their_obs[:19])
    np.testing.assert_array_equal(ts.reward[:20], their_reward[:20])
    assert not ts.terminated.any()  # the DM Control suite never ends an episode itself
    assert ts.truncated.tolist() == [False] * 19 + [True] + [False] * 10
    np.testing.assert_array_equal(ts.final_observation[19], their_obs[19])


PPO = rl.TrainConfig(
    algo="ppo",
    env="playground/CartpoleBalance",
    num_envs=4,
    rollout_len=8,
    total_steps=4 * 8 * 4,
    log_every=1,
    checkpoint_every=4 * 8 * 2,
    progress=False,
    hparams={"num_minibatches": 2, "update_epochs": 1},
)


def test_resumed_run_equals_uninterrupted_bit_for_bit(tmp_path):
    full = rl.train(PPO.replace(out=str(tmp_path), run_name="full"))
    rl.train(PPO.replace(out=str(tmp_path), run_name="part"))
    shutil.rmtree(tmp_path / "part" / "checkpoints" / "4")  # as if it died after iteration 2
    resumed = rl.train(PPO.replace(out=str(tmp_path), run_name="part"), resume=tmp_path / "part")
    assert int(resumed.state.iteration) == 4
    # Every leaf, PRNG keys (ours, and the rng Playground's state carries) by their key data.
    testing.assert_same_bits(resumed.state, full.state, "resumed against uninterrupted")


# Settings after MuJoCo Playground's PPO configuration for the DM Control suite (reward scaling
# 10, observation normalisation, γ 0.995, learning rate 1e-3, entropy 0.01, 16 epochs of 32
# minibatches per batch), at 256 envs × 32 steps instead of 2048 × 30.
LEARN = rl.TrainConfig(
    algo="ppo",
    env="playground/CartpoleBalance",
    total_steps=1_000_000,
    num_envs=256,
    rollout_len=32,
    log_every=4,
    eval_every=131_072,
    eval_episodes=8,
    progress=False,
    hparams={
        "gamma": 0.995,
        "lr": 1e-3,
        "anneal_lr": False,
        "ent_coef": 0.01,
        "clip_eps": 0.3,
        "vf_clip": float("inf"),
        "max_grad_norm": 1e9,
        "update_epochs": 16,
        "num_minibatches": 32,
        "normalize_observations": True,
        "reward_scaling": 10.0,
    },
)


def test_ppo_balances_the_cartpole(tmp_path):
    # About 40 s of compiling, then 35 s of training per seed at ~30k env-steps/s on 2 CPU cores
    # (the second seed's programs come from the compilation cache).
    late = []
    for seed in (0, 1):
        rl.train(LEARN.replace(out=str(tmp_path), run_name=f"ppo-{seed}", seed=seed))
        rows = [json.loads(line) for line in (tmp_path / f"ppo-{seed}" / "metrics.jsonl").open()]
        evaluations = [r["eval_return"] for r in rows if r["eval_return"] is not None]
        # A return of 1000 is every step upright and centred.
        assert evaluations[0] < 700 and max(evaluations) >= 600, (seed, np.round(evaluations))
        late += evaluations[-2:]
    # Seed 0 alone, measured in an earlier install: 360, 610, 372, 999, 963, 987, 989, 987; in a
    # fresh one, with the PPO and MJX code unchanged: 367, 692, 668, 623, 379, 517, 513, 511;
    # after PPO's optimizer moved to one raveled vector and the reset keys to one hash (other
    # last bits, no other change): 308, 737, 598, 539, 275, 956, 421, 481, with seed 1 at 298,
    # 418, 413, 646, 665, 992, 998, 1000 and seed 2 at 298, 283, 634, 862, 999, 977, 991, 998.
    # How far one seed gets within 1M steps at this size moves with the float arithmetic, so
    # the last two evaluations of two seeds are read together.
    assert np.mean(late) >= 450, np.round(late)

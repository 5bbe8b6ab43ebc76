"""Observation normalisation held by the learner and reward scaling in the loss
(``normalize_observations``, ``reward_scaling``), as Brax's trainers have them."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.fragments.algorithms import actor_critic as ac
from jaxrl_fdg.fragments.normalization import COLLECTION, ObservationMoments

OBS = np.random.default_rng(0).normal([3.0, -1.0], [2.0, 0.5], size=(5, 6, 2)).astype(np.float32)


def test_moments_folded_batch_by_batch_are_those_of_all_observations():
    norm = ObservationMoments((2,))
    moments = norm.init()
    for batch in OBS:  # five "rollouts" of 6 observations
        moments = norm.update(moments, batch, pool=lambda x: x)
    flat = OBS.reshape(-1, 2)
    # The pseudo-count of 1e-4 at mean 0, var 1 weighs 1e-4 / 30 against the data.
    np.testing.assert_allclose(moments.mean, flat.mean(0), rtol=1e-4)
    np.testing.assert_allclose(moments.var, flat.var(0), rtol=1e-4)
    np.testing.assert_allclose(moments.count, 30, rtol=1e-5)
    standard = np.asarray(norm.standardize(moments, flat))
    np.testing.assert_allclose(standard.mean(0), 0, atol=1e-3)
    np.testing.assert_allclose(standard.std(0), 1, atol=1e-3)


def test_shards_pool_their_moments_into_those_of_every_shards_observations():
    # Four "shards" of a data-parallel run, vmapped with a named axis as the reference backend
    # runs them: each folds in its own observations, pooled over the axis, and all four end
    # with the moments of every shard's observations together.
    norm = ObservationMoments((2,))
    pool = functools.partial(jax.lax.pmean, axis_name="shards")
    shards = OBS[:4]  # [4 shards, 6, 2]

    @functools.partial(jax.vmap, axis_name="shards")
    def update(batch):
        return norm.update(norm.init(), batch, pool)

    pooled = update(jnp.asarray(shards))
    alone = norm.update(norm.init(), shards.reshape(-1, 2), pool=lambda x: x)
    for shard in range(4):
        np.testing.assert_array_equal(pooled.mean[shard], pooled.mean[0])
        np.testing.assert_array_equal(pooled.var[shard], pooled.var[0])
    # They differ from one batch of all 24 by the prior alone: each shard weighs the
    # pseudo-count of 1e-4 (at mean 0, var 1) against its own 6 observations, the single batch
    # against 24: at most |mean| · 1e-4 / 6 for the mean, (var + 1 + mean²) · 1e-4 / 6 for the
    # variance.
    prior = 1e-4 / 6
    mean, var = np.asarray(alone.mean), np.asarray(alone.var)
    assert np.all(np.abs(pooled.mean[0] - mean) <= np.abs(mean) * prior + 1e-6)
    assert np.all(np.abs(pooled.var[0] - var) <= (var + 1 + mean**2) * prior + 1e-6)


def test_standardize_clips():
    norm = ObservationMoments((2,), clip=5.0)
    out = norm.standardize(norm.init(), jnp.array([[100.0, -100.0]]))
    np.testing.assert_array_equal(out, [[5.0, -5.0]])


@pytest.fixture(scope="module")
def normalized():
    """A tiny PPO run on Pendulum with both options, in two fusion modes."""
    config = rl.TrainConfig(
        env="Pendulum-v1",
        total_steps=2 * 8 * 3,
        num_envs=2,
        rollout_len=8,
        out=None,
        progress=False,
        log_every=3,
        hparams={
            "num_minibatches": 2,
            "update_epochs": 2,
            "normalize_observations": True,
            "reward_scaling": 0.1,
        },
    )
    return config, {mode: rl.train(config.replace(fusion=mode)) for mode in ("scan", "fragment")}


def test_the_learner_keeps_the_moments_of_every_observation_it_trained_on(normalized):
    _, runs = normalized
    params = runs["scan"].state.fragments["learner"].params
    moments = params[COLLECTION]
    assert int(round(float(moments.count))) == 3 * 2 * 8  # 3 rollouts of 2 envs × 8 steps
    # Pendulum's observation is (cos θ, sin θ, θ̇): the first two average inside [-1, 1].
    assert np.all(np.abs(np.asarray(moments.mean[:2])) <= 1) and np.all(moments.var > 0)
    # The actor acts on the parameters it was published, moments included.
    assert set(params) == {"params", COLLECTION}


def test_fusion_modes_agree_with_normalisation(normalized):
    _, runs = normalized
    testing.assert_same_bits(
        runs["fragment"].state.fragments["learner"], runs["scan"].state.fragments["learner"]
    )


def test_the_actor_sees_observations_standardised_by_the_moments(normalized):
    config, runs = normalized
    policy = ac.Policy(resolve(config).context)
    params = runs["scan"].state.fragments["learner"].params
    obs = jnp.array([[1.0, 0.0, 4.0], [-0.5, 0.8, -2.0]])
    standard = policy.moments.standardize(params[COLLECTION], obs)
    expected = policy.net.apply({"params": params["params"]}, standard)
    np.testing.assert_array_equal(policy.mode(params, obs), jnp.clip(expected[0], -2.0, 2.0))


def test_reward_scaling_scales_the_rewards_the_loss_sees(tiny):
    ctx = resolve(tiny).context
    policy = ac.Policy(ctx)
    params = policy.init(jax.random.key(0))
    t, b = 4, 2
    key = jax.random.split(jax.random.key(1), 2)
    traj = rl.Transition(
        observation=jax.random.normal(key[0], (t, b, 4)),
        action=jnp.zeros((t, b), jnp.int32),
        reward=jnp.ones((t, b)),
        next_observation=jax.random.normal(key[1], (t, b, 4)),
        terminated=jnp.zeros((t, b), bool).at[2, 0].set(True),
        truncated=jnp.zeros((t, b), bool),
        extras={"value": jnp.full((t, b), 0.5), "log_prob": jnp.zeros((t, b))},
        info={},
    )
    scaled = ac.make_batch(policy, params, traj, dataclasses.replace(ctx.hparams, reward_scaling=3))
    by_hand = ac.make_batch(policy, params, traj._replace(reward=traj.reward * 3), ctx.hparams)
    testing.assert_same_bits(scaled, by_hand)


def test_reward_scaling_leaves_reported_returns_alone(normalized):
    # The first rollout acts with the initial parameters, whatever the options: its episodes,
    # and the returns reported for them, are the same with and without scaling.
    config, runs = normalized
    plain = rl.train(config.replace(hparams={**config.hparams, "reward_scaling": 1.0}))
    for key in ("episode_return_sum", "episodes"):
        np.testing.assert_array_equal(plain.metrics[key][0], runs["scan"].metrics[key][0])


@pytest.mark.parametrize("value", [0, -1.0, float("inf")])
def test_bad_reward_scaling_is_rejected(tiny, value):
    with pytest.raises(rl.ConfigError, match="reward_scaling must be a positive finite number"):
        resolve(tiny.replace(hparams={**tiny.hparams, "reward_scaling": value}))


def test_resume_restores_the_moments(normalized, resumed_after_first_iteration):
    # The moments are part of the learner's state: a run resumed from its checkpoint after the
    # first iteration ends where the uninterrupted run does, bit for bit.
    config, runs = normalized
    resumed = resumed_after_first_iteration(config)
    testing.assert_same_bits(resumed.state.fragments, runs["scan"].state.fragments)

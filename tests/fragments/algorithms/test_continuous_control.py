"""SAC, TD3 and DDPG: their pieces, and that each learns Pendulum-v1."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.envs.spaces import Box
from jaxrl_fdg.fragments import exploration
from jaxrl_fdg.fragments.algorithms import continuous, dpg, sac
from jaxrl_fdg.fragments.algorithms.offpolicy import Experience
from jaxrl_fdg.fragments.replay import Sample

# Small networks and batches, and SB3 zoo's Pendulum learning rate (1e-3), so each run takes
# seconds on a 2-core CPU: 8 envs × 4 steps per iteration, one update per env step.
PENDULUM = dict(env="Pendulum-v1", total_steps=20_000, num_envs=8, rollout_len=4)
SMALL = {
    "learning_starts": 1_000,
    "hidden_sizes": (64, 64),
    "batch_size": 128,
    "actor_lr": 1e-3,
    "critic_lr": 1e-3,
}
# The thresholds on the mean return of the episodes in the last 20% of the run. Seeds 0
# to 5 ended between −131 and −170 for all three (2026-11, 2-core CPU, 6-22 s per run).
THRESHOLDS = {"sac": -250.0, "td3": -250.0, "ddpg": -300.0}


@pytest.mark.slow
@pytest.mark.parametrize("algo", sorted(THRESHOLDS))
def test_learns_pendulum(algo):
    config = rl.TrainConfig(algo=algo, out=None, progress=False, hparams=SMALL, **PENDULUM)
    metrics = rl.train(config).metrics
    last = slice(-len(metrics["episodes"]) // 5, None)
    episodes = np.asarray(metrics["episodes"])[last].sum()
    mean_return = np.asarray(metrics["episode_return_sum"])[last].sum() / episodes
    assert episodes >= 16 and mean_return >= THRESHOLDS[algo], mean_return  # 8 × 2 or more
    if algo == "sac":
        # The temperature has brought the policy's entropy to the target, −dim(A) = −1.
        entropy = np.asarray(metrics["entropy"])[last].mean()
        assert abs(entropy + 1.0) < 0.2, entropy


def _context(algo, action_space, **hparams):
    spec = rl.algorithm.get(algo)
    return AlgorithmContext(
        observation_space=Box(-1.0, 1.0, (3,)),
        action_space=action_space,
        num_envs=2,
        rollout_len=8,
        num_iterations=4,
        hparams=spec.hparams(**{"hidden_sizes": (16,), "batch_size": 8, **hparams}),
    ), spec


def _batch(ctx, size=8, seed=0):
    keys = jax.random.split(jax.random.key(seed), 4)
    obs = jax.random.uniform(keys[0], (size, *ctx.observation_space.shape), minval=-1.0)
    low, high = exploration.box_bounds(ctx.action_space)
    action = jax.random.uniform(keys[1], (size, *ctx.action_space.shape), minval=low, maxval=high)
    reward = jax.random.normal(keys[2], (size,))
    experience = Experience(obs, action, reward, jnp.full((size,), 0.99), obs[::-1])
    ones = jnp.ones((size,))
    return Sample(jnp.arange(size), experience, ones, jnp.zeros(size, jnp.int32), ones / size)


ASYMMETRIC = Box(jnp.array([0.0, -3.0]), jnp.array([0.5, 5.0]), (2,))


# The deterministic actors by default; SAC's squashed Gaussian in the slow tier.
@pytest.mark.parametrize("algo", [pytest.param("sac", marks=pytest.mark.slow), "td3", "ddpg"])
def test_actions_reaching_the_env_are_inside_the_box(algo):
    ctx, spec = _context(algo, ASYMMETRIC, learning_starts=16)
    algorithm = spec.build(ctx)
    params = algorithm.learner.publish(algorithm.learner.init(jax.random.key(0)))["params"]
    obs = jax.random.uniform(jax.random.key(1), (512, 3), minval=-1.0)
    inputs = {"observation": obs, "params": params}
    for steps in (0, 16):  # warm-up (uniform over the box), then the exploring policy
        new_steps, out = algorithm.actor.apply(jnp.int32(steps), inputs, jax.random.key(2))
        action = np.asarray(out["action"])
        assert action.shape == (512, 2) and int(new_steps) == steps + 512
        assert np.all(action >= ASYMMETRIC.low) and np.all(action <= ASYMMETRIC.high)
        assert np.all(action.std(axis=0) > 0)  # it explores
    evaluated = np.asarray(algorithm.policy(params, obs))  # the deterministic policy
    assert evaluated.shape == (512, 2)
    assert np.all(evaluated >= ASYMMETRIC.low) and np.all(evaluated <= ASYMMETRIC.high)
    np.testing.assert_array_equal(evaluated, algorithm.policy(params, obs))
    # Saturated policies map to the box's bounds exactly, never past them (float rounding).
    unit = jnp.array([[1.0, 1.0], [-1.0, -1.0]])
    bounds = continuous.env_action(unit, ctx)
    np.testing.assert_array_equal(bounds, np.stack([ASYMMETRIC.high, ASYMMETRIC.low]))
    np.testing.assert_allclose(continuous.unit_action(bounds, ctx), unit, atol=1e-6)


def test_target_policy_smoothing_noise_is_clipped():
    hp = dpg.TD3Config(target_noise=0.2, target_noise_clip=0.5)
    action = jnp.zeros((20_000, 1))
    smoothed = np.asarray(dpg.target_action(hp, action, jax.random.key(0)))
    assert np.abs(smoothed).max() == pytest.approx(0.5)  # 2.5σ: about 1% of draws clipped
    assert 0.005 < np.mean(np.abs(smoothed) == 0.5) < 0.02
    assert np.std(smoothed) == pytest.approx(0.2, rel=0.05)
    near_bound = dpg.target_action(hp, jnp.full((1000, 1), 0.9), jax.random.key(1))
    assert np.all(np.asarray(near_bound) <= 1.0)  # and the action stays in [−1, 1]
    ddpg = dpg.DDPGConfig()
    assert dpg.target_action(ddpg, action, jax.random.key(0)) is action  # DDPG: no smoothing


def _changed(before, after):
    return bool(testing.differences(before, after))


@pytest.mark.parametrize("algo, delay", [("td3", 3), ("ddpg", 1)])
def test_actor_and_targets_update_every_policy_delay_updates(algo, delay):
    ctx, spec = _context(algo, Box(-2.0, 2.0, (1,)), policy_delay=delay, tau=0.5)
    learner = spec.build(ctx).learner
    state = learner.init(jax.random.key(0))
    batch = _batch(ctx)
    apply = jax.jit(learner.apply)
    for update in range(1, 7):
        new, out = apply(state, {"batch": batch}, jax.random.key(update))
        assert out["td_error"].shape == (8,)
        delayed = update % delay == 0
        assert _changed(state.critic.params, new.critic.params)
        assert _changed(state.actor.params, new.actor.params) == delayed, update
        assert _changed(state.actor_target, new.actor_target) == delayed, update
        assert _changed(state.critic.target_params, new.critic.target_params) == delayed, update
        state = new
    assert int(state.updates) == 6


def test_temperature_loss_moves_alpha_toward_the_target_entropy():
    target = -1.0
    log_prob_of_entropy = {0.5: jnp.full(8, -0.5), -2.0: jnp.full(8, 2.0)}
    for entropy, log_prob in log_prob_of_entropy.items():
        grad = jax.grad(sac.temperature_loss)(jnp.float32(0.0), log_prob, target)
        # Gradient descent lowers α while the entropy is above the target, raises it below.
        assert np.sign(grad) == np.sign(entropy - target)


def test_sac_learner_updates_the_temperature():
    # Jitted: op by op, the two learners compiled 209 small programs (21 s cold, 12-14 s jitted).
    ctx, spec = _context("sac", Box(-2.0, 2.0, (1,)))
    learner = spec.build(ctx).learner
    state = jax.jit(learner.init)(jax.random.key(0))
    new, out = jax.jit(learner.apply)(state, {"batch": _batch(ctx)}, jax.random.key(1))
    metrics = out["metrics"]
    assert float(metrics["alpha"]) == pytest.approx(1.0)  # α starts at hp.alpha
    # The initial policy (σ ≈ e^−1.5) is wider than the target −dim(A) = −1: α goes down.
    assert float(metrics["entropy"]) > -1.0
    assert float(new.log_alpha.params) < float(state.log_alpha.params)
    assert set(metrics) >= {"critic_loss", "actor_loss", "q_mean", "abs_td_error"}
    fixed_ctx, _ = _context("sac", Box(-2.0, 2.0, (1,)), autotune=False, alpha=0.2)
    fixed = spec.build(fixed_ctx).learner
    fixed_state = jax.jit(fixed.init)(jax.random.key(0))
    new, out = jax.jit(fixed.apply)(fixed_state, {"batch": _batch(fixed_ctx)}, jax.random.key(1))
    assert float(out["metrics"]["alpha"]) == pytest.approx(0.2)
    assert float(new.log_alpha.params) == float(fixed_state.log_alpha.params)


# TD3 by default, SAC in the slow tier: both scale rewards in the critic target they share.
@pytest.mark.parametrize("algo", [pytest.param("sac", marks=pytest.mark.slow), "td3"])
def test_reward_scaling_is_the_same_update_as_scaled_rewards(algo):
    ctx, spec = _context(algo, Box(-2.0, 2.0, (1,)))
    scaled_ctx, _ = _context(algo, Box(-2.0, 2.0, (1,)), reward_scaling=5.0)
    batch = _batch(ctx)
    by_hand = batch._replace(
        transitions=batch.transitions._replace(reward=batch.transitions.reward * 5.0)
    )
    learner, scaled = spec.build(ctx).learner, spec.build(scaled_ctx).learner
    state = learner.init(jax.random.key(0))
    expected = learner.apply(state, {"batch": by_hand}, jax.random.key(1))
    testing.assert_same_bits(scaled.apply(state, {"batch": batch}, jax.random.key(1)), expected)
    unscaled = learner.apply(state, {"batch": batch}, jax.random.key(1))
    assert float(unscaled[1]["metrics"]["critic_loss"]) != float(
        expected[1]["metrics"]["critic_loss"]
    )


def test_critic_loss_weights_samples_and_reports_the_largest_error():
    q = jnp.array([[1.0, 2.0], [3.0, -1.0]])  # [2 critics, 2 samples]
    target = jnp.array([2.0, 0.0])
    weights = jnp.array([1.0, 0.5])
    loss, td_error = continuous.critic_loss(q, target, weights)
    # ½ Σ_i mean(w (Q_i − y)²): critic 0 errs by (−1, 2), critic 1 by (1, −1).
    expected = 0.5 * (np.mean([1.0, 0.5 * 4.0]) + np.mean([1.0, 0.5 * 1.0]))
    assert float(loss) == pytest.approx(expected)
    np.testing.assert_allclose(td_error, [-1.0, 2.0])  # ties keep the first critic


def test_ddpg_and_td3_defaults_differ_only_in_td3s_three_changes():
    td3, ddpg = dpg.TD3Config(), dpg.DDPGConfig()
    assert (td3.num_critics, td3.policy_delay, td3.target_noise) == (2, 2, 0.2)
    assert (ddpg.num_critics, ddpg.policy_delay, ddpg.target_noise) == (1, 1, 0.0)
    same = {"num_critics", "policy_delay", "target_noise"}
    assert {k: v for k, v in vars(td3).items() if k not in same} == {
        k: v for k, v in vars(ddpg).items() if k not in same
    }


def test_hyperparameters_validate_on_construction():
    with pytest.raises(rl.ConfigError, match="policy_delay must be a positive integer"):
        dpg.TD3Config(policy_delay=0)
    with pytest.raises(rl.ConfigError, match="target_noise must be a non-negative number"):
        dpg.DDPGConfig(target_noise=-0.1)
    with pytest.raises(rl.ConfigError, match="alpha must be in"):
        sac.SACConfig(alpha=0.0)
    with pytest.raises(rl.ConfigError, match="num_critics must be a positive integer"):
        sac.SACConfig(num_critics=0)
    with pytest.raises(rl.ConfigError, match="hidden_sizes entry must be a positive integer"):
        sac.SACConfig(hidden_sizes=(64, 0))
    with pytest.raises(rl.ConfigError, match="reward_scaling must be a positive finite number"):
        sac.SACConfig(reward_scaling=0.0)


@pytest.mark.parametrize("algo", ["sac", "td3", "ddpg"])
def test_discrete_action_space_is_rejected_before_compiling(algo):
    with pytest.raises(rl.ConfigError, match=f"{algo} needs a Box action space, got Discrete"):
        resolve(rl.TrainConfig(algo=algo, env="CartPole-v1", out=None))

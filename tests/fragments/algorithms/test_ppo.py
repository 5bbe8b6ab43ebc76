"""PPO: its fragments' contract, discrete and continuous, its networks, and that it learns
CartPole-v1 (default configuration), Pendulum-v1 (Gaussian policy) and Catch (CNN torso)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.envs.spaces import Box
from jaxrl_fdg.fragments import distributions as dist
from jaxrl_fdg.fragments.algorithms import actor_critic as ac
from jaxrl_fdg.fragments.algorithms.ppo import PPOConfig, check, optimizer
from jaxrl_fdg.fragments.networks import ConvTorso, GaussianActorCritic
from jaxrl_fdg.testing import first_call


def test_actor_outputs(tiny):
    loop = rl.build_loop(resolve(tiny))
    state = loop.init(jax.random.key(0))
    call = first_call(loop, state, jax.random.key(1))
    inputs = call.inputs
    assert call.fragment == "actor"
    assert sorted(inputs) == ["observation", "params"]  # only what the actor declared
    _, out, _, _ = loop.calls[0](state.fragments["actor"], inputs, call.key)
    assert out["action"].shape == (2,) and out["action"].dtype == jnp.int32
    assert out["log_prob"].shape == out["value"].shape == (2,)
    # Orthogonal init with gain 0.01 on the logits: the initial policy is near uniform.
    np.testing.assert_allclose(np.exp(out["log_prob"]), 0.5, atol=0.02)


def test_learning_rate_anneals_to_zero(tiny):
    ctx = resolve(tiny).context
    tx = optimizer(ctx)
    params = {"w": jnp.ones(3)}
    state = tx.init(params)
    steps = ctx.num_iterations * ctx.hparams.update_epochs * ctx.hparams.num_minibatches
    for _ in range(steps):
        updates, state = tx.update({"w": jnp.ones(3)}, state, params)
    # After the last scheduled step the learning rate is 0: the update vanishes.
    updates, _ = tx.update({"w": jnp.ones(3)}, state, params)
    np.testing.assert_allclose(updates["w"], 0.0, atol=1e-12)


def test_hyperparameters_validate_on_construction():
    with pytest.raises(rl.ConfigError, match="clip_eps must be a non-negative number"):
        PPOConfig(clip_eps=-0.1)
    with pytest.raises(rl.ConfigError, match="hidden_sizes entry must be a positive integer"):
        PPOConfig(hidden_sizes=(64, 0))


def test_categorical_helpers():
    logits = jnp.log(jnp.array([[0.25, 0.75]]))
    np.testing.assert_allclose(
        dist.categorical_log_prob(logits, jnp.array([1])), np.log(0.75), rtol=1e-6
    )
    expected = -(0.25 * np.log(0.25) + 0.75 * np.log(0.75))
    np.testing.assert_allclose(dist.categorical_entropy(logits), expected, rtol=1e-6)
    samples = dist.categorical_sample(jax.random.key(0), jnp.broadcast_to(logits, (20000, 2)))
    assert abs(float(samples.mean()) - 0.75) < 0.01  # ±3σ = 3·√(.75·.25/20000) ≈ .009


@pytest.mark.slow
def test_default_ppo_solves_cartpole_on_three_seeds():
    # Reference: PureJaxRL's PPO on CartPole-v1 with these hyperparameters reaches ~500 within
    # 5e5 steps; here 10 seeds all averaged 500 over the last 20 iterations (2026-11, 2-core CPU).
    config = resolve(rl.TrainConfig(out=None, progress=False)).config  # PPO's default run
    assert config.total_steps <= 500_000
    train = jax.jit(jax.vmap(rl.make_train(config)))
    _, metrics = train(jax.vmap(jax.random.key)(jnp.arange(3)))
    last = slice(-20, None)  # the last ~10k steps of each run
    returns = metrics["episode_return_sum"][:, last].sum(1) / metrics["episodes"][:, last].sum(1)
    assert np.all(np.asarray(returns) >= 475.0), returns


@pytest.mark.slow
def test_ppo_learns_catch_from_image_observations():
    # Catch's observation is a (10, 5, 1) image; the MLP flattens it. 5 seeds all averaged
    # ≥ 0.947 (of a maximum 1.0) over the last 20 iterations at 100k steps; threshold 0.8.
    # Through train() (the scan plan), one seed: the whole run vmapped over seeds
    # (jax.vmap(make_train)) has been seen to deadlock XLA's CPU runtime on this program with
    # jaxlib 0.10.2 (all worker threads idle, the result never ready); see the issue notes.
    config = rl.TrainConfig(env="Catch-bsuite", total_steps=100_000, out=None, progress=False)
    assert rl.train(config).summary["final_return"] >= 0.8


def _pendulum(**changes):
    """A tiny PPO run on Pendulum-v1 (Box(-2, 2, (1,)) torques)."""
    config = rl.TrainConfig(
        env="Pendulum-v1",
        total_steps=8 * 8 * 2,
        num_envs=8,
        rollout_len=8,
        out=None,
        progress=False,
        hparams={"num_minibatches": 2, "update_epochs": 2},
    )
    return config.replace(**changes)


def test_box_actor_samples_a_gaussian_and_sends_the_env_its_clip():
    # log σ = 1.5 (σ ≈ 4.5) on a box of ±2: most raw samples fall outside the bounds.
    config = _pendulum(hparams={"log_std_init": 1.5, "num_minibatches": 2})
    loop = rl.build_loop(resolve(config))
    state = loop.init(jax.random.key(0))
    state, traj, _ = loop.rollout(state)
    raw, action = traj.extras["raw_action"], traj.action
    assert raw.shape == action.shape == (8, 8, 1) and action.dtype == jnp.float32
    assert np.mean(np.abs(raw) > 2.0) > 0.4
    np.testing.assert_array_equal(action, np.clip(raw, -2.0, 2.0))  # the env got the clip
    # The log-probability is the raw sample's, under the policy that drew it.
    params = state.fragments["learner"].params
    policy = ac.Policy(resolve(config).context)
    mean, log_std, value = policy.net.apply(params, traj.observation)
    np.testing.assert_allclose(log_std, 1.5)
    np.testing.assert_allclose(
        traj.extras["log_prob"], dist.gaussian_log_prob(mean, log_std, raw), rtol=1e-5
    )
    np.testing.assert_allclose(traj.extras["value"], value, rtol=1e-5, atol=1e-6)
    # ... and it is the raw sample that the learner evaluates.
    batch = ac.make_batch(policy, params, traj, resolve(config).hparams)
    np.testing.assert_array_equal(batch.action, raw.reshape(64, 1))


def test_next_values_reuse_the_actors_and_evaluate_only_truncated_steps():
    # V(s'_t) is the actor's value of s_{t+1} where the episode goes on, and the network's value
    # of the final observation where it was truncated: here 12 truncations (more than the 8 of a
    # chunk, so two chunks), with final observations the actor never saw.
    config = _pendulum()
    loop = rl.build_loop(resolve(config))
    state, traj, _ = loop.rollout(loop.init(jax.random.key(0)))
    params = state.fragments["learner"].params
    policy = ac.Policy(resolve(config).context)
    assert not traj.truncated.any() and not traj.terminated.any()  # 8 steps of a 200-step limit
    np.testing.assert_allclose(
        policy.next_values(params, traj),
        policy.value(params, traj.next_observation),
        rtol=1e-5,
        atol=1e-6,
    )
    rng = np.random.default_rng(0)
    truncated = np.zeros((8, 8), bool)
    truncated.flat[rng.choice(64, 12, replace=False)] = True
    terminated = np.zeros((8, 8), bool)
    terminated.flat[rng.choice(np.flatnonzero(~truncated), 5, replace=False)] = True
    finals = rng.normal(size=traj.next_observation.shape).astype(np.float32)
    traj = traj._replace(
        truncated=jnp.asarray(truncated),
        terminated=jnp.asarray(terminated),
        next_observation=jnp.where(truncated[..., None], finals, traj.next_observation),
    )
    got = np.asarray(policy.next_values(params, traj))
    want = np.asarray(policy.value(params, traj.next_observation))
    np.testing.assert_allclose(got[~terminated], want[~terminated], rtol=1e-5, atol=1e-6)


def test_gaussian_log_std_is_one_learnable_vector():
    net = GaussianActorCritic(num_actions=3, log_std_init=-0.5)
    params = net.init(jax.random.key(0), jnp.zeros(4))
    np.testing.assert_array_equal(params["params"]["log_std"], [-0.5] * 3)
    mean, log_std, value = net.apply(params, jnp.ones((5, 4)))
    assert mean.shape == log_std.shape == (5, 3) and value.shape == (5,)
    grad = jax.grad(lambda p: net.apply(p, jnp.ones((5, 4)))[1].sum())(params)
    np.testing.assert_allclose(grad["params"]["log_std"], 5.0)  # shared by every state


def test_conv_torso_is_a_valid_3x3_convolution():
    x = jax.random.normal(jax.random.key(0), (2, 7, 10, 5, 1))
    torso = ConvTorso(features=(4, 6), activation="relu")
    params = torso.init(jax.random.key(1), x)
    out = torso.apply(params, x)
    assert out.shape == (2, 7, (10 - 4) * (5 - 4) * 6)
    # The same kernels through XLA's convolution: a Dense kernel [9·C, F] over the shifted views
    # (row-major over the 3×3 window) is the HWIO kernel [3, 3, C, F].
    h = x.reshape(14, 10, 5, 1)
    for layer in ("Dense_0", "Dense_1"):
        p = params["params"][layer]
        kernel = p["kernel"].reshape(3, 3, h.shape[-1], -1)
        h = jax.lax.conv_general_dilated(h, kernel, (1, 1), "VALID", dimension_numbers=DN)
        h = jax.nn.relu(h + p["bias"])
    np.testing.assert_allclose(out.reshape(14, -1), h.reshape(14, -1), rtol=1e-5, atol=1e-5)


DN = ("NHWC", "HWIO", "NHWC")


def test_unsupported_spaces_are_rejected_before_compiling():
    with pytest.raises(rl.ConfigError, match=r"torso 'cnn' needs image observations.*\(4,\)"):
        resolve(rl.TrainConfig(env="CartPole-v1", out=None, hparams={"torso": "cnn"}))
    with pytest.raises(rl.ConfigError, match=r"torso 'nature' needs .* at least 36 × 36"):
        resolve(rl.TrainConfig(env="Catch-bsuite", out=None, hparams={"torso": "nature"}))
    ctx = resolve(_pendulum()).context
    matrix_actions = dataclasses.replace(ctx, action_space=Box(-1.0, 1.0, (2, 3)))
    with pytest.raises(rl.ConfigError, match=r"one-dimensional Box .* shape \(2, 3\)"):
        check(matrix_actions)
    valid = r"\(valid: mlp, cnn, minatar, nature\)"
    with pytest.raises(rl.ConfigError, match=rf"unknown torso 'rnn' {valid}"):
        PPOConfig(torso="rnn")
    with pytest.raises(rl.ConfigError, match="log_std_init must be a finite number"):
        PPOConfig(log_std_init=float("nan"))


def _mean_return(metrics, iterations):
    last = slice(-iterations, None)
    return metrics["episode_return_sum"][last].sum() / metrics["episodes"][last].sum()


@pytest.mark.slow
def test_ppo_continuous_learns_pendulum():
    # Hyperparameters: rl-baselines3-zoo's tuned PPO for Pendulum-v1 (hyperparams/ppo.yml: 4 envs
    # × 1024 steps, 10 epochs of minibatches of 64, γ = 0.9, λ = 0.95, lr 1e-3 constant, no
    # entropy bonus, clip 0.2), whose benchmark result is -172 ± 104 after 1e5 steps
    # (benchmark.md; deterministic evaluation). Differences: no gSDE (a plain Gaussian needs about
    # 1.5e5 steps here), hence 2e5 steps; no value clipping, which SB3 does not do either
    # (clip_range_vf=None) and which, at ±0.2 on unnormalised returns of order -100, slows
    # learning several-fold (seed 0: -1100 after 1e5 steps and -250 after 4e5, against -210
    # after 1.2e5 without). Seeds 0-3 reached -170 to -203 over the last 20k steps
    # (stochastic policy, training episodes); threshold -300, against about -1200 at random.
    # About 7 s per seed on the 2-core CPU, compilation included.
    hparams = {
        "gamma": 0.9,
        "gae_lambda": 0.95,
        "lr": 1e-3,
        "anneal_lr": False,
        "ent_coef": 0.0,
        "update_epochs": 10,
        "num_minibatches": 64,
        "vf_clip": float("inf"),
    }
    for seed in (0, 1):
        config = _pendulum(
            total_steps=204_800, num_envs=4, rollout_len=1024, seed=seed, hparams=hparams
        )
        metrics = rl.train(config).metrics
        assert _mean_return(metrics, 5) >= -300.0, (seed, _mean_return(metrics, 5))


@pytest.mark.slow
def test_ppo_cnn_learns_catch():
    # The convolutional torso on Catch's (10, 5, 1) board. With lr 1e-3 (annealed) seeds 0 and 1
    # both averaged 1.0 (the maximum) over the last 3k steps of 30k; threshold 0.8. About 3 s on
    # the 2-core CPU after compilation.
    config = rl.TrainConfig(
        env="Catch-bsuite",
        total_steps=30_720,
        out=None,
        progress=False,
        hparams={"torso": "cnn", "lr": 1e-3},
    )
    result = rl.train(config)
    assert "Dense_0" in result.state.fragments["learner"].params["params"]["policy"]["layers_0"]
    assert _mean_return(result.metrics, 6) >= 0.8

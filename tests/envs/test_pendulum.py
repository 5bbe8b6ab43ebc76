"""Pendulum-v1 against gymnasium: same dynamics, reward, clipping, reset and truncation."""

import math

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg.envs import EpisodeState
from jaxrl_fdg.envs.classic.pendulum import Pendulum, PendulumState


@pytest.fixture(scope="module")
def pendulum():
    env = Pendulum()
    params = env.default_params
    return env, params, jax.jit(env.step)


def _episode_state(theta, theta_dot, time=0):
    return EpisodeState(PendulumState(jnp.float32(theta), jnp.float32(theta_dot)), jnp.int32(time))


def test_one_step_matches_gymnasium_from_identical_states(pendulum):
    # Each step starts gymnasium (float64) from our float32 state, so errors cannot accumulate;
    # what is left is float32 rounding within one step. It is largest in θ' = θ + θ̇'·dt, which
    # is rounded to half an ulp of |θ'|. θ is never wrapped, but within an episode
    # |θ| ≤ π + 200·max_speed·dt ≈ 83 < 128, so that rounding is ≤ 2⁻¹⁸ ≈ 3.8e-6, and cos/sin
    # inherit it (θ̇ ≤ 8 rounds to < 1e-6): atol 1e-5 on the observation. The reward's
    # θ_norm = ((θ + π) mod 2π) - π carries the rounding of θ + π (≤ 7.6e-6 at |θ| < 128),
    # squared against |θ_norm| ≤ π: 2π·7.6e-6 ≈ 5e-5, plus relative float32 rounding of a
    # cost ≤ 16.3 (~5e-6): atol 1e-4. Measured maxima here: ~4e-6 and ~2e-5.
    env, params, step = pendulum
    gym_env = gym.make("Pendulum-v1").unwrapped
    gym_env.reset(seed=0)
    rng = np.random.default_rng(0)
    key = jax.random.key(0)
    state, ts = env.reset(key, params)
    clipped_torques = clipped_speeds = truncations = 0
    max_abs_theta = 0.0
    for t in range(600):
        if t == 200:
            # Start the second episode at full speed so pumping keeps it spinning all episode:
            # |θ| then passes 64, the binade the tolerance above is sized for.
            state = _episode_state(float(state.env.theta), 8.0, time=int(state.time))
        theta_dot = float(state.env.theta_dot)
        if t % 200 < 60 and t // 200 != 1:
            # Random torques, a third of them outside [-2, 2] so the clip is exercised.
            torque = rng.uniform(-3.0, 3.0)
        else:
            # Pump energy (push along the motion, beyond the limit) so the pendulum spins: this
            # reaches the ±8 speed clip and large unwrapped angles.
            torque = 3.0 if theta_dot >= 0 else -3.0
        action = np.array([torque], np.float32)
        gym_env.state = np.array([float(state.env.theta), theta_dot], np.float64)
        gym_obs, gym_reward, gym_term, gym_trunc, _ = gym_env.step(action)
        key, sub = jax.random.split(key)
        state, ts = step(sub, state, jnp.asarray(action), params)

        np.testing.assert_allclose(ts.final_observation, gym_obs, rtol=0, atol=1e-5, err_msg=t)
        np.testing.assert_allclose(float(ts.reward), gym_reward, rtol=0, atol=1e-4, err_msg=t)
        assert not bool(ts.terminated) and not gym_term and not gym_trunc
        clipped_torques += abs(torque) > 2.0
        clipped_speeds += abs(float(ts.final_observation[2])) == 8.0
        truncations += bool(ts.truncated)
        max_abs_theta = max(max_abs_theta, abs(float(gym_env.state[0])))
    assert clipped_torques >= 100 and clipped_speeds >= 20, (clipped_torques, clipped_speeds)
    assert truncations == 3  # auto-reset at t = 199, 399, 599 is part of what was compared
    assert max_abs_theta > 64.0  # the unwrapped-angle regime the tolerance above allows for


def test_never_terminates(pendulum):
    env, params, _ = pendulum

    def rollout(key):
        state, _ = env.reset(key, params)

        def body(state, key):
            key_action, key_step = jax.random.split(key)
            action = jax.random.uniform(key_action, (1,), jnp.float32, -4.0, 4.0)
            state, ts = env.step(key_step, state, action, params)
            return state, (ts.terminated, ts.truncated)

        _, flags = jax.lax.scan(body, state, jax.random.split(key, 450))
        return flags

    terminated, truncated = jax.jit(rollout)(jax.random.key(5))
    assert not bool(jnp.any(terminated))
    # Truncation fires after every 200th step, counting from the reset: at indices 199 and 399.
    np.testing.assert_array_equal(np.flatnonzero(np.asarray(truncated)), [199, 399])


def test_truncates_at_200_steps_and_keeps_final_observation(pendulum):
    env, params, step = pendulum
    assert gym.make("Pendulum-v1").spec.max_episode_steps == params.max_steps == 200

    before = _episode_state(2.5, -6.0, time=198)
    state, ts = step(jax.random.key(1), before, jnp.array([1.0]), params)
    assert not bool(ts.truncated) and int(state.time) == 199
    np.testing.assert_array_equal(ts.observation, ts.final_observation)

    before = _episode_state(2.5, -6.0, time=199)
    state, ts = step(jax.random.key(2), before, jnp.array([1.0]), params)
    assert bool(ts.truncated) and not bool(ts.terminated) and int(state.time) == 0
    # The final observation is where the transition went; the observation is a fresh episode's.
    _, expected_final, _, _ = env.step_env(jax.random.key(0), before.env, jnp.array([1.0]), params)
    np.testing.assert_array_equal(ts.final_observation, expected_final)
    np.testing.assert_allclose(ts.observation, _observation_of(state.env))
    assert abs(float(state.env.theta)) <= math.pi and abs(float(state.env.theta_dot)) <= 1.0
    assert abs(float(ts.final_observation[2]) - float(ts.observation[2])) > 4.0  # -6.x vs ≤ 1


def test_params_are_a_pytree_a_sweep_over_g_is_a_vmap(pendulum):
    env, params, _ = pendulum
    tilted = _episode_state(0.5, 0.0)
    gravities = jnp.array([1.62, 9.81, 24.79], jnp.float32)

    def step_with(g):
        return env.step(jax.random.key(0), tilted, jnp.array([0.0]), params.replace(g=g))

    _, ts = jax.jit(jax.vmap(step_with))(gravities)
    assert ts.observation.shape == (3, 3)
    # θ̇' = 3g/(2l)·sin θ·dt: stronger gravity tips the tilted pendulum away from upright faster.
    theta_dot = np.asarray(ts.observation[:, 2])
    assert 0.0 < theta_dot[0] < theta_dot[1] < theta_dot[2]
    for g, ours in zip(gravities.tolist(), theta_dot, strict=True):
        gym_env = gym.make("Pendulum-v1", g=g).unwrapped
        gym_env.reset(seed=0)
        gym_env.state = np.array([0.5, 0.0])
        gym_obs, *_ = gym_env.step(np.array([0.0], np.float32))
        np.testing.assert_allclose(ours, gym_obs[2], rtol=1e-6)


def test_reset_ranges(pendulum):
    env, params, _ = pendulum
    states, ts = jax.jit(jax.vmap(lambda k: env.reset(k, params)))(
        jax.random.split(jax.random.key(7), 4000)
    )
    theta = np.asarray(states.env.theta)
    theta_dot = np.asarray(states.env.theta_dot)
    assert theta.dtype == np.float32 and ts.observation.dtype == np.float32
    assert np.all(np.abs(theta) <= np.float32(math.pi)) and np.all(np.abs(theta_dot) <= 1.0)
    # Uniform over the whole box, not a corner of it: extremes near the bounds, both signs.
    assert theta.min() < -3.0 and theta.max() > 3.0
    assert theta_dot.min() < -0.99 and theta_dot.max() > 0.99
    assert abs(theta.mean()) < 0.15 and abs(theta_dot.mean()) < 0.05  # 4σ: π/√3/√4000 ≈ 0.029
    np.testing.assert_allclose(ts.observation[:, 0], np.cos(theta), atol=1e-6)
    np.testing.assert_allclose(ts.observation[:, 1], np.sin(theta), atol=1e-6)
    np.testing.assert_array_equal(ts.observation[:, 2], theta_dot)
    assert np.all(np.asarray(states.time) == 0)


def test_spaces(pendulum):
    env, params, _ = pendulum
    action_space = env.action_space(params)
    assert action_space.shape == (1,) and float(action_space.high) == 2.0
    assert bool(action_space.contains(jnp.array([2.0]))) and not bool(
        action_space.contains(jnp.array([2.5]))
    )
    obs_space = env.observation_space(params)
    np.testing.assert_array_equal(obs_space.high, [1.0, 1.0, 8.0])
    gym_env = gym.make("Pendulum-v1")
    np.testing.assert_array_equal(obs_space.high, gym_env.observation_space.high)
    np.testing.assert_array_equal(action_space.high, gym_env.action_space.high)


def test_rejects_an_action_that_is_not_one_torque(pendulum):
    env, params, _ = pendulum
    with pytest.raises(ValueError, match="one torque"):
        env.step(jax.random.key(0), _episode_state(0.0, 0.0), jnp.zeros(2), params)


def _observation_of(state):
    return np.array([np.cos(state.theta), np.sin(state.theta), state.theta_dot], np.float32)

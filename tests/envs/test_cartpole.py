"""CartPole-v1 against gymnasium: same dynamics, reward, termination and truncation."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import envs
from jaxrl_fdg.envs import CartPoleState, EpisodeState


@pytest.fixture(scope="module")
def cartpole():
    env, params = envs.make("CartPole-v1")
    step = jax.jit(env.step)
    return env, params, step


def test_one_step_matches_gymnasium_from_identical_states(cartpole):
    # Each step starts both simulators from the same state, so float32 (ours) vs float64
    # (gymnasium) rounding cannot accumulate: one Euler step of O(1) quantities agrees to ~1e-6.
    env, params, step = cartpole
    gym_env = gym.make("CartPole-v1").unwrapped
    gym_env.reset(seed=0)
    rng = np.random.default_rng(0)
    key = jax.random.key(0)
    state, ts = env.reset(key, params)
    terminations = 0
    for t in range(400):
        action = int(rng.integers(2))
        gym_env.state = np.asarray(ts.observation, np.float64)
        gym_env.steps_beyond_terminated = None
        gym_obs, gym_reward, gym_term, gym_trunc, _ = gym_env.step(action)
        key, sub = jax.random.split(key)
        state, ts = step(sub, state, jnp.int32(action), params)
        np.testing.assert_allclose(
            ts.final_observation, gym_obs, rtol=1e-5, atol=1e-6, err_msg=f"t={t}"
        )
        assert float(ts.reward) == gym_reward
        assert bool(ts.terminated) == gym_term, t
        terminations += gym_term
    assert terminations >= 10  # random actions end an episode every ~20 steps: boundaries covered


def test_episode_matches_gymnasium_over_whole_episodes(cartpole):
    # Whole episodes from the same initial state; errors grow with the pole's instability but
    # stay far below the termination thresholds over a random-action episode (~20-60 steps).
    env, params, step = cartpole
    gym_env = gym.make("CartPole-v1")
    rng = np.random.default_rng(1)
    for episode in range(5):
        obs, _ = gym_env.reset(seed=episode)
        env_state = CartPoleState(*jnp.asarray(obs, jnp.float32))
        state = EpisodeState(env_state, jnp.int32(0))
        key = jax.random.key(episode)
        for _ in range(500):
            action = int(rng.integers(2))
            gym_obs, gym_reward, gym_term, gym_trunc, _ = gym_env.step(action)
            key, sub = jax.random.split(key)
            state, ts = step(sub, state, jnp.int32(action), params)
            np.testing.assert_allclose(ts.final_observation, gym_obs, rtol=1e-4, atol=1e-4)
            assert (bool(ts.terminated), bool(ts.truncated)) == (gym_term, gym_trunc)
            if gym_term or gym_trunc:
                break


def test_truncates_at_500_steps_and_keeps_final_observation(cartpole):
    env, params, step = cartpole
    state, ts = env.reset(jax.random.key(3), params)
    upright = EpisodeState(CartPoleState(*jnp.zeros(4)), jnp.int32(499))
    state, ts = step(jax.random.key(4), upright, jnp.int32(1), params)
    assert bool(ts.truncated) and not bool(ts.terminated)
    # The final observation is the state reached; the observation is a fresh episode's.
    assert float(ts.final_observation[1]) > 0.1  # pushed right: x_dot = 0.02 · 9.76
    assert np.all(np.abs(np.asarray(ts.observation)) <= 0.05)
    assert int(state.time) == 0


def test_gymnasium_truncates_at_the_same_step():
    gym_env = gym.make("CartPole-v1")
    assert gym_env.spec.max_episode_steps == envs.make("CartPole-v1")[1].max_steps == 500


def test_termination_on_angle_and_position(cartpole):
    env, params, step = cartpole
    for values in ([2.39, 1.0, 0.0, 0.0], [0.0, 0.0, 0.2, 1.0]):
        state = EpisodeState(CartPoleState(*jnp.asarray(values)), jnp.int32(0))
        _, ts = step(jax.random.key(0), state, jnp.int32(1), params)
        assert bool(ts.terminated) and float(ts.reward) == 1.0


def test_params_are_a_pytree_a_sweep_is_a_vmap(cartpole):
    env, params, _ = cartpole
    tilted = EpisodeState(CartPoleState(*jnp.array([0.0, 0.0, 0.1, 0.0])), jnp.int32(0))
    gravities = jnp.array([1.6, 9.8, 24.8])

    def step_with(gravity):
        return env.step(jax.random.key(0), tilted, jnp.int32(1), params.replace(gravity=gravity))

    _, ts = jax.jit(jax.vmap(step_with))(gravities)
    assert ts.observation.shape == (3, 4)
    # θ̇' = τ·θ̈ and θ̈ grows with g·sin θ: stronger gravity tips the tilted pole faster.
    theta_dot = np.asarray(ts.observation[:, 3])
    assert theta_dot[0] < theta_dot[1] < theta_dot[2]


def test_spaces(cartpole):
    env, params, _ = cartpole
    assert env.action_space(params).n == 2
    assert env.observation_space(params).shape == (4,)
    assert bool(env.action_space(params).contains(1)) and not bool(
        env.action_space(params).contains(2)
    )


def test_registry_refuses_duplicates_and_suggests_names():
    with pytest.raises(ValueError, match="already registered"):
        envs.register("CartPole-v1", envs.CartPole)
    with pytest.raises(envs.UnknownEnvironmentError, match="did you mean 'CartPole-v1'"):
        envs.make("Cartpole-v1")
    with pytest.raises(ValueError, match="unknown parameter"):
        envs.make("CartPole-v1", gravityy=1.0)
    assert envs.make("CartPole-v1", max_steps=10)[1].max_steps == 10

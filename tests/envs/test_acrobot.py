"""Acrobot-v1 against gymnasium: same dynamics, reward, termination and truncation."""

import math

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.envs.classic_control.acrobot import rk4
from scipy import stats

from jaxrl_fdg.envs import EpisodeState
from jaxrl_fdg.envs.classic.acrobot import Acrobot, AcrobotState

# Tolerance, float32 (ours) vs float64 (gymnasium). Every comparison starts gymnasium from our
# float32 state, so only one step's rounding separates the two. In most states that step is well
# conditioned and the observations agree to ~5e-7 (a few float32 ulps of |θ̇2| <= 9π ≈ 28). But one
# RK4 step of dt = 0.2 at speeds near the bounds turns the links by radians through terms in θ̇²
# (~10³), and there the step amplifies a relative perturbation of its input or of a stage by up to
# ~10⁵: any correct float32 implementation then differs from float64 by ~1e-3. So the tolerance
# scales with that amplification S, measured on gymnasium itself by finite differences:
# atol = 1e-5 + 1e-6·S, 1e-6 being ~16x float32's unit roundoff. Over 20,000 random states the
# worst error used half of it, while the NeurIPS equations in place of the book's (one dropped
# term) exceeded it at every one of them.
ATOL = 1e-5
ROUNDOFF = 1e-6


@pytest.fixture(scope="module")
def acrobot():
    env = Acrobot()
    return env, env.default_params, jax.jit(env.step)


def _gym_env(**attributes):
    gym_env = gym.make("Acrobot-v1").unwrapped
    gym_env.reset(seed=0)
    for name, value in attributes.items():
        setattr(gym_env, name, value)
    return gym_env


def _gym_step(gym_env, env_state: AcrobotState, action: int):
    """gymnasium's step from our state: ``(observation, reward, terminated)``."""
    gym_env.state = np.asarray(jnp.stack(env_state), np.float64)
    obs, reward, terminated, _, _ = gym_env.step(action)
    return obs, reward, terminated


def _assert_matches(ours, gym_env, env_state: AcrobotState, action: int, gym_obs, msg=""):
    """``ours`` equals gymnasium's observation to within what float32 can reproduce here."""
    values = np.asarray(jnp.stack(env_state), np.float64)
    h = 1e-6  # finite-difference step, relative to max(|s_k|, 1)
    amplification = 0.0
    for k in range(4):
        shifted = values + h * max(abs(values[k]), 1.0) * np.eye(4)[k]
        gym_env.state = shifted
        moved = gym_env.step(action)[0].astype(np.float64) - gym_obs
        amplification = max(amplification, np.abs(moved).max() / h)
    np.testing.assert_allclose(
        ours, gym_obs, rtol=0, atol=ATOL + ROUNDOFF * amplification, err_msg=msg
    )


def _pumping_or_random(rng: np.random.Generator, observation) -> int:
    # Uniformly random actions almost never swing the tip up within 500 steps; torquing along
    # θ̇2 half of the time pumps energy in and terminates an episode every ~150 steps.
    if rng.random() < 0.5:
        return int(rng.integers(3))
    return 2 if float(observation[5]) > 0 else 0


def test_one_step_matches_gymnasium_from_identical_states(acrobot):
    env, params, step = acrobot
    gym_env = _gym_env()
    rng = np.random.default_rng(0)
    key = jax.random.key(0)
    state, ts = env.reset(key, params)
    terminations = 0
    for t in range(600):
        action = _pumping_or_random(rng, ts.observation)
        gym_obs, gym_reward, gym_term = _gym_step(gym_env, state.env, action)
        key, sub = jax.random.split(key)
        before = state.env
        state, ts = step(sub, state, jnp.int32(action), params)
        _assert_matches(ts.final_observation, gym_env, before, action, gym_obs, f"t={t}")
        assert float(ts.reward) == gym_reward, t
        assert bool(ts.terminated) == gym_term, t
        terminations += gym_term
    assert terminations >= 3  # the reward-0 terminal step and the auto-reset after it are covered


@pytest.mark.parametrize("book_or_nips", ["book", "nips"])
def test_one_step_matches_gymnasium_from_arbitrary_states(acrobot, book_or_nips):
    # States over the whole range, velocities beyond the bounds: exercises the angle wrapping,
    # the velocity clipping and fast, strongly nonlinear steps that a trajectory rarely visits.
    env, params, step = acrobot
    params = params.replace(book_or_nips=book_or_nips)
    gym_env = _gym_env(book_or_nips=book_or_nips)
    rng = np.random.default_rng(1)
    clipped = wrapped = terminations = 0
    for t in range(300):
        values = rng.uniform(-1.2, 1.2, 4) * [math.pi, math.pi, 4 * math.pi, 9 * math.pi]
        env_state = AcrobotState(*jnp.asarray(values, jnp.float32))
        action = int(rng.integers(3))
        gym_obs, gym_reward, gym_term = _gym_step(gym_env, env_state, action)
        gym_state = gym_env.state.copy()
        state, ts = step(
            jax.random.key(t), EpisodeState(env_state, jnp.int32(0)), jnp.int32(action), params
        )
        assert float(ts.reward) == gym_reward, t
        assert bool(ts.terminated) == gym_term, t
        _assert_matches(ts.final_observation, gym_env, env_state, action, gym_obs, f"t={t}")
        if not gym_term:  # (else ours has auto-reset)
            # cos/sin cannot see a wrapping error, which is a whole period: compare θ itself to
            # well under 2π (the observation check bounds the rest).
            theta = np.asarray(jnp.stack(state.env[:2]))
            assert np.all(np.abs(theta) <= np.float32(math.pi)), t
            np.testing.assert_allclose(theta, gym_state[:2], rtol=0, atol=0.1, err_msg=f"t={t}")
        terminations += gym_term
        clipped += abs(gym_state[3]) == 9 * math.pi
        s = np.append(np.asarray(jnp.stack(env_state), np.float64), action - 1.0)
        wrapped += np.any(np.abs(rk4(gym_env._dsdt, s, [0, gym_env.dt])[:2]) > math.pi)
    assert clipped >= 10 and wrapped >= 10 and terminations >= 10


def test_terminal_state_gives_reward_zero(acrobot):
    env, params, step = acrobot
    # Both links straight up: -cos θ1 - cos(θ1 + θ2) = 2 > 1.
    upright = EpisodeState(AcrobotState(*jnp.array([math.pi, 0.0, 0.0, 0.0])), jnp.int32(7))
    state, ts = step(jax.random.key(0), upright, jnp.int32(1), params)
    assert bool(ts.terminated) and not bool(ts.truncated)
    assert float(ts.reward) == 0.0
    assert int(state.time) == 0


def test_truncates_at_500_steps_and_keeps_final_observation(acrobot):
    env, params, step = acrobot
    swinging = AcrobotState(*jnp.array([0.5, -0.3, 1.0, -2.0]))
    state, ts = step(
        jax.random.key(4), EpisodeState(swinging, jnp.int32(499)), jnp.int32(2), params
    )
    assert bool(ts.truncated) and not bool(ts.terminated)
    assert float(ts.reward) == -1.0
    # The final observation is the state reached, as gymnasium computes it from the same state.
    gym_env = _gym_env()
    gym_obs, _, _ = _gym_step(gym_env, swinging, 2)
    _assert_matches(ts.final_observation, gym_env, swinging, 2, gym_obs)
    # The observation is a fresh episode's: both angles and velocities within ±0.1 of zero.
    obs = np.asarray(ts.observation)
    assert np.all(obs[[0, 2]] >= math.cos(0.1) - 1e-6)
    assert np.all(np.abs(obs[[1, 3, 4, 5]]) <= 0.1)
    assert int(state.time) == 0
    assert not np.allclose(ts.observation, ts.final_observation)


def test_gymnasium_truncates_at_the_same_step(acrobot):
    env, params, step = acrobot
    gym_env = gym.make("Acrobot-v1")
    assert gym_env.spec.max_episode_steps == params.max_steps == 500
    # With no torque the chain just swings about hanging down and never terminates, so both
    # episodes must end by truncation on exactly the 500th step.
    gym_env.reset(seed=0)
    state = EpisodeState(AcrobotState(*jnp.asarray(gym_env.unwrapped.state)), jnp.int32(0))
    for t in range(1, 501):
        _, _, gym_term, gym_trunc, _ = gym_env.step(1)
        state, ts = step(jax.random.key(t), state, jnp.int32(1), params)
        assert (bool(ts.terminated), bool(ts.truncated)) == (gym_term, gym_trunc), t
    assert gym_trunc and t == 500


def test_params_are_a_pytree_a_sweep_is_a_vmap(acrobot):
    env, params, _ = acrobot
    start = AcrobotState(*jnp.array([0.3, 0.4, 1.0, -1.0]))
    masses = jnp.array([0.5, 1.0, 2.0])

    def step_with(mass):
        return env.step(
            jax.random.key(0),
            EpisodeState(start, jnp.int32(0)),
            jnp.int32(2),
            params.replace(link_mass_2=mass),
        )

    _, ts = jax.jit(jax.vmap(step_with))(masses)
    assert ts.observation.shape == (3, 6)
    assert len({tuple(np.round(np.asarray(o), 4)) for o in ts.observation}) == 3
    # Each member of the sweep is gymnasium with that constant.
    for mass, obs in zip(np.asarray(masses), np.asarray(ts.observation), strict=True):
        gym_env = _gym_env(LINK_MASS_2=float(mass))
        gym_obs, _, _ = _gym_step(gym_env, start, 2)
        _assert_matches(obs, gym_env, start, 2, gym_obs, f"mass={mass}")


def test_torque_noise_draws_from_the_step_key(acrobot):
    env, params, step = acrobot
    start = EpisodeState(AcrobotState(*jnp.zeros(4)), jnp.int32(0))
    quiet = [step(jax.random.key(k), start, jnp.int32(1), params)[1].observation for k in (0, 1)]
    np.testing.assert_array_equal(quiet[0], quiet[1])
    noisy_params = params.replace(torque_noise_max=0.5)
    noisy = [step(jax.random.key(k), start, jnp.int32(1), noisy_params)[1] for k in (0, 1)]
    assert not np.allclose(noisy[0].observation, noisy[1].observation)


def test_reset_distribution_matches_gymnasium(acrobot):
    env, params, _ = acrobot
    keys = jax.random.split(jax.random.key(0), 2000)
    states, ts = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    ours = np.asarray(jnp.stack(states.env, axis=1))
    gym_env = _gym_env()
    theirs = []
    for _ in range(2000):
        gym_env.reset()
        theirs.append(gym_env.state)
    theirs = np.stack(theirs)
    assert np.all(np.asarray(states.time) == 0) and np.all(np.asarray(ts.reward) == 0)
    for i in range(4):
        assert -0.1 <= ours[:, i].min() < -0.099 and 0.099 < ours[:, i].max() <= 0.1
        assert -0.1 <= theirs[:, i].min() and theirs[:, i].max() <= 0.1
        # Same uniform law: a two-sample KS test this size rejects a shift of ~0.01 (5% of the
        # range); the seeds are fixed, so the test is deterministic.
        assert stats.ks_2samp(ours[:, i], theirs[:, i]).pvalue > 1e-3


def test_spaces_match_gymnasium(acrobot):
    env, params, _ = acrobot
    gym_env = gym.make("Acrobot-v1")
    assert env.action_space(params).n == gym_env.action_space.n == 3
    space = env.observation_space(params)
    assert space.shape == gym_env.observation_space.shape == (6,)
    np.testing.assert_allclose(space.high, gym_env.observation_space.high, rtol=1e-7)
    np.testing.assert_allclose(space.low, gym_env.observation_space.low, rtol=1e-7)


def test_unknown_dynamics_variant_is_refused(acrobot):
    env, params, _ = acrobot
    state, _ = env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match="book_or_nips"):
        env.step(jax.random.key(0), state, jnp.int32(0), params.replace(book_or_nips="paper"))

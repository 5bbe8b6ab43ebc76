"""MountainCar-v0 and MountainCarContinuous-v0 against gymnasium: dynamics, rewards, limits."""

import math

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxrl_fdg.envs import EpisodeState
from jaxrl_fdg.envs.classic.mountain_car import (
    MountainCar,
    MountainCarContinuous,
    MountainCarState,
)

# Tolerance, float32 (ours) vs float64 (gymnasium's discrete env; the continuous one stores its
# state in float32 but computes partly in float64). From identical states one step is a handful of
# additions of O(1) positions and O(0.07) velocities, so the results differ by about one float32
# ulp of the position (1.2e-7 at |p| ~ 1); measured worst over thousands of steps: 1.2e-7 in
# position, 7e-9 in velocity. ATOL = 1e-6 is ~10 ulps and still 1000x smaller than one step's
# push (force = 1e-3), so a wrong sign or constant fails at once. The continuous reward reaches
# 100, whose float32 ulp is 7.6e-6: rewards compare with a relative 1e-6 on top.
ATOL = 1e-6
REWARD_RTOL = 1e-6
# Whole episodes compound the per-step rounding (measured worst 8e-6 over 999 steps).
EPISODE_ATOL = 1e-4

DISCRETE, CONTINUOUS = "MountainCar-v0", "MountainCarContinuous-v0"
ENVS = {DISCRETE: MountainCar, CONTINUOUS: MountainCarContinuous}


@pytest.fixture(scope="module")
def jitted():
    """One environment, its default params and its jitted step per id, compiled once."""
    out = {}
    for name, cls in ENVS.items():
        env = cls()
        out[name] = env, env.default_params, jax.jit(env.step)
    return out


def _gym_env(name, **attributes):
    gym_env = gym.make(name).unwrapped
    gym_env.reset(seed=0)
    for attribute, value in attributes.items():
        setattr(gym_env, attribute, value)
    return gym_env


def _gym_step(gym_env, env_state: MountainCarState, action):
    gym_env.state = np.asarray(jnp.stack(env_state), np.float64)
    obs, reward, terminated, _, _ = gym_env.step(action)
    return obs, reward, terminated


def _action(name, rng: np.random.Generator):
    """A random action; continuous ones reach past [-1, 1] so the clipping is exercised."""
    if name == DISCRETE:
        return int(rng.integers(3))
    return np.array([rng.uniform(-1.5, 1.5)], np.float32)


def _state(position, velocity) -> MountainCarState:
    return MountainCarState(jnp.float32(position), jnp.float32(velocity))


def _step_both(jitted, name, env_state, action, key=0, time=0, **attributes):
    env, params, step = jitted[name]
    state, ts = step(
        jax.random.key(key), EpisodeState(env_state, jnp.int32(time)), jnp.asarray(action), params
    )
    gym_obs, gym_reward, gym_term = _gym_step(_gym_env(name, **attributes), env_state, action)
    return state, ts, (gym_obs, gym_reward, gym_term)


def _assert_same_transition(ts, gym_obs, gym_reward, gym_term, msg=""):
    np.testing.assert_allclose(ts.final_observation, gym_obs, rtol=0, atol=ATOL, err_msg=msg)
    np.testing.assert_allclose(float(ts.reward), gym_reward, rtol=REWARD_RTOL, err_msg=msg)
    assert bool(ts.terminated) == gym_term, msg


@pytest.mark.parametrize("name", [DISCRETE, CONTINUOUS])
def test_one_step_matches_gymnasium_from_identical_states(jitted, name):
    env, params, step = jitted[name]
    gym_env = _gym_env(name)
    rng = np.random.default_rng(0)
    key = jax.random.key(0)
    state, ts = env.reset(key, params)
    for t in range(400):
        action = _action(name, rng)
        gym_obs, gym_reward, gym_term = _gym_step(gym_env, state.env, action)
        key, sub = jax.random.split(key)
        state, ts = step(sub, state, jnp.asarray(action), params)
        _assert_same_transition(ts, gym_obs, gym_reward, gym_term, f"t={t}")
    # Random actions only rock the car about the valley: the goal, the walls and the speed limit
    # are what the next test covers.


@pytest.mark.parametrize("name", [DISCRETE, CONTINUOUS])
def test_one_step_matches_gymnasium_from_arbitrary_states(jitted, name):
    # States over (a little beyond) the whole observation box reach the goal, the left wall and
    # the speed limit, which random actions from the valley rarely or never do.
    env, params, step = jitted[name]
    gym_env = _gym_env(name)
    rng = np.random.default_rng(1)
    goal = wall = speed_limit = 0
    for t in range(400):
        env_state = _state(rng.uniform(-1.25, 0.65), rng.uniform(-0.08, 0.08))
        action = _action(name, rng)
        gym_obs, gym_reward, gym_term = _gym_step(gym_env, env_state, action)
        _, ts = step(
            jax.random.key(t), EpisodeState(env_state, jnp.int32(0)), jnp.asarray(action), params
        )
        _assert_same_transition(ts, gym_obs, gym_reward, gym_term, f"t={t}")
        goal += gym_term
        wall += gym_obs[0] == np.float32(-1.2) and gym_obs[1] == 0
        speed_limit += abs(gym_obs[1]) == np.float32(0.07)
    assert goal >= 10 and wall >= 3 and speed_limit >= 10


@pytest.mark.parametrize(
    ("name", "action", "reward"),
    [(DISCRETE, 2, -1.0), (CONTINUOUS, np.array([0.5], np.float32), 100.0 - 0.1 * 0.25)],
)
def test_terminates_at_the_goal_like_gymnasium(jitted, name, action, reward):
    # Just short of the goal, moving right: the next step crosses it.
    env, params, _ = jitted[name]
    near_goal = _state(params.goal_position - 0.01, 0.02)
    state, ts, gym_result = _step_both(jitted, name, near_goal, action, time=17)
    _assert_same_transition(ts, *gym_result)
    assert bool(ts.terminated) and not bool(ts.truncated)
    np.testing.assert_allclose(float(ts.reward), reward, rtol=1e-6)
    assert float(ts.final_observation[0]) >= params.goal_position
    assert int(state.time) == 0 and -0.6 <= float(ts.observation[0]) <= -0.4  # auto-reset
    # Past the goal but rolling back (v < goal_velocity = 0) is no termination, in both.
    _, ts, gym_result = _step_both(jitted, name, _state(0.59, -0.05), action)
    _assert_same_transition(ts, *gym_result)
    assert not bool(ts.terminated)


@pytest.mark.parametrize("name", [DISCRETE, CONTINUOUS])
def test_left_wall_stops_the_car_like_gymnasium(jitted, name):
    action = 0 if name == DISCRETE else np.array([-1.0], np.float32)
    _, ts, gym_result = _step_both(jitted, name, _state(-1.19, -0.05), action)
    _assert_same_transition(ts, *gym_result)
    np.testing.assert_array_equal(ts.final_observation, np.array([-1.2, 0.0], np.float32))


def test_continuous_action_is_clipped_but_charged_unclipped(jitted):
    start = _state(-0.5, 0.01)
    results = {}
    for force in (1.0, 2.0):
        action = np.array([force], np.float32)
        _, ts, gym_result = _step_both(jitted, CONTINUOUS, start, action)
        _assert_same_transition(ts, *gym_result)
        results[force] = ts
    # Same motion (the force saturates at 1), but gymnasium charges 0.1·a² for the action as given.
    np.testing.assert_array_equal(results[1.0].observation, results[2.0].observation)
    assert float(results[1.0].reward) == pytest.approx(-0.1)
    assert float(results[2.0].reward) == pytest.approx(-0.4)


def test_continuous_action_of_the_wrong_size_is_refused(jitted):
    env, params, _ = jitted[CONTINUOUS]
    state, _ = env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match="shape"):
        env.step(jax.random.key(0), state, jnp.zeros(2), params)


@pytest.mark.parametrize(("name", "max_steps"), [(DISCRETE, 200), (CONTINUOUS, 999)])
def test_truncates_at_max_steps_and_keeps_final_observation(jitted, name, max_steps):
    env, params, _ = jitted[name]
    assert params.max_steps == max_steps
    action = 2 if name == DISCRETE else np.array([1.0], np.float32)
    climbing = _state(0.1, 0.03)
    state, ts, gym_result = _step_both(jitted, name, climbing, action, time=max_steps - 1)
    assert bool(ts.truncated) and not bool(ts.terminated)
    # The final observation is the state reached, as gymnasium computes it from the same state.
    _assert_same_transition(ts, *gym_result)
    assert float(ts.final_observation[0]) > 0.1
    # The observation is a fresh episode's: at rest in the valley.
    assert -0.6 <= float(ts.observation[0]) <= -0.4 and float(ts.observation[1]) == 0.0
    assert int(state.time) == 0


@pytest.mark.parametrize("name", [DISCRETE, CONTINUOUS])
def test_whole_episodes_match_gymnasium_and_truncate_at_the_same_step(jitted, name):
    # From the same initial state, with no shared state afterwards: gymnasium's TimeLimit and ours
    # must end the episode on the same step, with trajectories that stay together.
    env, params, step = jitted[name]
    gym_env = gym.make(name)
    assert gym_env.spec.max_episode_steps == params.max_steps
    rng = np.random.default_rng(2)
    obs, _ = gym_env.reset(seed=2)
    state = EpisodeState(MountainCarState(*jnp.asarray(obs, jnp.float32)), jnp.int32(0))
    for t in range(1, params.max_steps + 1):
        action = _action(name, rng)
        gym_obs, _, gym_term, gym_trunc, _ = gym_env.step(action)
        state, ts = step(jax.random.key(t), state, jnp.asarray(action), params)
        np.testing.assert_allclose(ts.final_observation, gym_obs, rtol=0, atol=EPISODE_ATOL)
        assert (bool(ts.terminated), bool(ts.truncated)) == (gym_term, gym_trunc), t
        if gym_term or gym_trunc:
            break
    assert gym_trunc and t == params.max_steps


@pytest.mark.parametrize(
    ("name", "field", "values", "action"),
    [
        (DISCRETE, "gravity", [0.0015, 0.0025, 0.0035], 1),
        (CONTINUOUS, "power", [0.0005, 0.0015, 0.003], np.array([1.0], np.float32)),
    ],
)
def test_params_are_a_pytree_a_sweep_is_a_vmap(jitted, name, field, values, action):
    env, params, _ = jitted[name]
    start = _state(0.0, 0.0)

    def step_with(value):
        state = EpisodeState(start, jnp.int32(0))
        return env.step(
            jax.random.key(0), state, jnp.asarray(action), params.replace(**{field: value})
        )

    _, ts = jax.jit(jax.vmap(step_with))(jnp.asarray(values))
    assert ts.observation.shape == (3, 2)
    # At p = 0 the slope pulls left with gravity·cos 0 = gravity and the push is power·a: the
    # velocity falls with gravity and rises with power.
    velocity = np.asarray(ts.observation[:, 1])
    assert (np.diff(velocity) < 0).all() if field == "gravity" else (np.diff(velocity) > 0).all()
    # Each member of the sweep is gymnasium with that constant (same attribute names).
    for value, obs in zip(values, np.asarray(ts.observation), strict=True):
        gym_obs, _, _ = _gym_step(_gym_env(name, **{field: value}), start, action)
        np.testing.assert_allclose(obs, gym_obs, rtol=0, atol=ATOL, err_msg=f"{field}={value}")


@pytest.mark.parametrize("name", [DISCRETE, CONTINUOUS])
def test_reset_distribution_matches_gymnasium(jitted, name):
    env, params, _ = jitted[name]
    keys = jax.random.split(jax.random.key(0), 2000)
    states, ts = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    ours = np.asarray(states.env.position)
    gym_env = _gym_env(name)
    theirs = np.array([gym_env.reset()[0][0] for _ in range(2000)])
    assert np.all(np.asarray(states.env.velocity) == 0) and np.all(np.asarray(states.time) == 0)
    assert -0.6 <= ours.min() < -0.599 and -0.401 < ours.max() <= -0.4
    assert -0.6 <= theirs.min() and theirs.max() <= -0.4
    # Same uniform law: a two-sample KS test this size rejects a shift of ~5% of the range; the
    # seeds are fixed, so the test is deterministic.
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-3
    np.testing.assert_array_equal(ts.observation[:, 0], ours)


@pytest.mark.parametrize("name", [DISCRETE, CONTINUOUS])
def test_spaces_match_gymnasium(jitted, name):
    env, params, _ = jitted[name]
    gym_env = gym.make(name)
    space = env.observation_space(params)
    np.testing.assert_array_equal(space.low, gym_env.observation_space.low)
    np.testing.assert_array_equal(space.high, gym_env.observation_space.high)
    action_space = env.action_space(params)
    if name == DISCRETE:
        assert action_space.n == gym_env.action_space.n == 3
    else:
        assert action_space.shape == gym_env.action_space.shape == (1,)
        assert (action_space.low, action_space.high) == (-1.0, 1.0)
        assert bool(action_space.contains(jnp.array([0.5]))) and not bool(
            action_space.contains(jnp.array([1.5]))
        )
    assert math.isclose(params.goal_position, gym_env.unwrapped.goal_position)

"""StatelessCartPole-v1 is CartPole-v1 observed through ``[x, θ]``: same states, rewards and ends.

There is no gymnasium StatelessCartPole; CartPole-v1 itself is tested against gymnasium in
``test_cartpole.py``, so here the variant is compared with CartPole-v1.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import envs
from jaxrl_fdg.envs import CartPoleParams, CartPoleState, EpisodeState, StatelessCartPole

LEFT, RIGHT = 0, 1
STEPS = 700


def _balance(state):
    """A linear controller on the full state that keeps the pole up for 500 steps."""
    push = state.theta + 0.5 * state.theta_dot + 0.05 * state.x + 0.1 * state.x_dot
    return (push > 0).astype(jnp.int32)


@pytest.fixture(scope="module")
def rollouts():
    """CartPole-v1 for ``STEPS`` steps, balanced for its first 500 (one truncation) and random
    after (terminations); then StatelessCartPole-v1 with the same keys and the same actions."""
    cartpole, params = envs.make("CartPole-v1")
    stateless, stateless_params = envs.make("StatelessCartPole-v1")
    key = jax.random.key(0)
    step_keys = jax.random.split(jax.random.key(1), STEPS)
    coins = jax.random.bernoulli(jax.random.key(2), shape=(STEPS,)).astype(jnp.int32)

    def full(key):
        def body(state, xs):
            t, step_key, coin = xs
            action = jnp.where(t < 500, _balance(state.env), coin)
            state, ts = cartpole.step(step_key, state, action, params)
            return state, (state, ts, action)

        state, first = cartpole.reset(key, params)
        _, seq = jax.lax.scan(body, state, (jnp.arange(STEPS), step_keys, coins))
        return first, seq

    def partial(key, actions):
        def body(state, xs):
            step_key, action = xs
            state, ts = stateless.step(step_key, state, action, stateless_params)
            return state, (state, ts)

        state, first = stateless.reset(key, stateless_params)
        _, seq = jax.lax.scan(body, state, (step_keys, actions))
        return first, seq

    full_first, (full_states, full_seq, actions) = jax.jit(full)(key)
    partial_first, (partial_states, partial_seq) = jax.jit(partial)(key, actions)
    return (full_first, full_states, full_seq), (partial_first, partial_states, partial_seq)


def test_observation_is_cartpoles_positions_over_whole_episodes(rollouts):
    (full_first, full_states, full), (partial_first, partial_states, partial) = rollouts
    np.testing.assert_array_equal(partial_first.observation, full_first.observation[..., [0, 2]])
    for field in ("observation", "final_observation"):
        np.testing.assert_array_equal(
            getattr(partial, field), getattr(full, field)[..., [0, 2]], err_msg=field
        )
    for field in ("reward", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(partial, field), getattr(full, field), err_msg=field)
    # The hidden state is CartPole's, velocities included, and so is the episode clock.
    for ours, theirs in zip(
        jax.tree.leaves(partial_states), jax.tree.leaves(full_states), strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)
    # Both ways an episode ends are covered: the balanced episode is cut at 500 steps, the
    # random-action ones after it fall (~20 steps each).
    truncated = np.flatnonzero(np.asarray(partial.truncated))
    assert truncated.tolist() == [499] and not bool(partial.terminated[499])
    assert int(np.sum(partial.terminated)) >= 5
    assert np.all(np.asarray(partial.reward) == 1.0)


def test_observation_shape_dtype_and_space():
    env, params = envs.make("StatelessCartPole-v1")
    # CartPole's dynamics, reused (not copied), with CartPole's parameters.
    assert isinstance(env, StatelessCartPole) and isinstance(env, envs.CartPole)
    assert isinstance(params, CartPoleParams) and params == CartPoleParams()
    assert params.max_steps == 500
    state, ts = env.reset(jax.random.key(5), params)
    assert ts.observation.shape == (2,) and ts.observation.dtype == jnp.float32
    np.testing.assert_array_equal(ts.observation, [state.env.x, state.env.theta])
    space = env.observation_space(params)
    assert space.shape == (2,) and space.dtype == jnp.float32
    # CartPole's bounds on x and θ: twice the termination thresholds.
    np.testing.assert_allclose(space.high, [4.8, 2 * 12 * 2 * np.pi / 360], rtol=1e-6)
    np.testing.assert_array_equal(space.low, -np.asarray(space.high))
    assert bool(space.contains(ts.observation))
    assert env.action_space(params).n == 2


@pytest.fixture(scope="module")
def jitted():
    env, params = envs.make("StatelessCartPole-v1")
    return env, params, jax.jit(env.step)


def test_velocity_is_hidden_after_one_push(jitted):
    # From rest, explicit Euler moves the positions by the old velocities (zero), so pushing
    # left or right gives the same observation [0, 0] while ẋ differs: ±τ·ẍ ≈ ±0.195.
    _, params, step = jitted
    rest = EpisodeState(CartPoleState(*jnp.zeros(4)), jnp.int32(0))
    (left, ts_left), (right, ts_right) = (
        step(jax.random.key(0), rest, jnp.int32(a), params) for a in (LEFT, RIGHT)
    )
    np.testing.assert_array_equal(ts_left.observation, [0.0, 0.0])
    np.testing.assert_array_equal(ts_right.observation, [0.0, 0.0])
    assert float(left.env.x_dot) < -0.19 and float(right.env.x_dot) > 0.19
    # The second step reveals the push: x moves by τ·ẋ ≈ ±0.0039.
    _, ts_left = step(jax.random.key(0), left, jnp.int32(LEFT), params)
    _, ts_right = step(jax.random.key(0), right, jnp.int32(RIGHT), params)
    assert float(ts_left.observation[0]) < -0.003 and float(ts_right.observation[0]) > 0.003


def test_terminated_and_truncated_apart(jitted):
    _, params, step = jitted
    # Falling pole: θ' = 0.2 + τ·1.0 = 0.22 > 12°; terminated, reward 1, reset afterwards.
    falling = EpisodeState(CartPoleState(*jnp.array([0.0, 0.0, 0.2, 1.0])), jnp.int32(3))
    state, ts = step(jax.random.key(0), falling, jnp.int32(RIGHT), params)
    assert bool(ts.terminated) and not bool(ts.truncated) and float(ts.reward) == 1.0
    np.testing.assert_allclose(ts.final_observation, [0.0, 0.22], rtol=1e-6)
    assert int(state.time) == 0 and np.all(np.abs(np.asarray(ts.observation)) <= 0.05)
    # Upright at the last step allowed: truncated, not terminated; final observation kept.
    upright = EpisodeState(CartPoleState(*jnp.zeros(4)), jnp.int32(499))
    state, ts = step(jax.random.key(1), upright, jnp.int32(RIGHT), params)
    assert bool(ts.truncated) and not bool(ts.terminated)
    np.testing.assert_array_equal(ts.final_observation, [0.0, 0.0])
    assert int(state.time) == 0 and np.all(np.abs(np.asarray(ts.observation)) <= 0.05)
    assert not np.array_equal(ts.observation, ts.final_observation)

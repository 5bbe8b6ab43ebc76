"""GymnaxEnv: gymnax's reset_env/step_env behind our API, equal to gymnax's own ``step``.

For every id gymnax registers, one jitted scan steps our adapter and gymnax's ``step`` side by
side, with the same keys and the same random actions, in episodes cut at 30 steps so that time
limits, terminations and the auto-resets after both occur. Everything must agree bit for bit.
Compiling is nearly all the cost (MinAtar's steps take several seconds each on 2 CPU cores).
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import envs
from jaxrl_fdg.envs import Box, Discrete
from jaxrl_fdg.envs.gymnax_adapter import GymnaxEnv, make_gymnax, with_params

gymnax = pytest.importorskip("gymnax")

STEPS = 200
MAX_STEPS = 30


def _make(env_id):
    try:
        return envs.make(f"gymnax/{env_id}")
    except OSError as e:  # MNISTBandit-bsuite downloads MNIST when it is built
        pytest.skip(f"{env_id} cannot be built here: {e}")


def side_by_side(env, params, key):
    """Reset, then ``STEPS`` random actions through our ``step`` and through gymnax's ``step``.

    gymnax's ``step(key)`` steps with ``split(key)[0]`` and resets with ``split(key)[1]``, as
    ours does, so both receive the same step key. Returns ``(ours, theirs)``: first
    observations, then ``[STEPS]`` time steps and environment states.
    """
    gymnax_env, gymnax_params = env.gymnax_env, params.gymnax
    space = env.action_space(params)
    key_reset, key_run = jax.random.split(key)
    state, first = env.reset(key_reset, params)
    gymnax_first, gymnax_state = gymnax_env.reset(key_reset, gymnax_params)

    def step(carry, key):
        state, gymnax_state = carry
        key_action, key_step = jax.random.split(key)
        action = space.sample(key_action)
        state, ts = env.step(key_step, state, action, params)
        obs, gymnax_state, reward, terminated, truncated, info = gymnax_env.step(
            key_step, gymnax_state, action, gymnax_params
        )
        theirs = (obs, reward, terminated, truncated, info["final_observation"], gymnax_state)
        return (state, gymnax_state), ((ts, state.env), theirs)

    carry = (state, gymnax_state)
    _, (ours, theirs) = jax.lax.scan(step, carry, jax.random.split(key_run, STEPS))
    return (first.observation, *ours), (gymnax_first, *theirs)


# The default tier compares one id of each kind: classic control with discrete and continuous
# actions, MinAtar, bsuite (DeepSea keeps totals across its auto-reset) and misc (FourRooms
# observes int32). The slow tier compares every other id gymnax registers.
DEFAULT_TIER = {
    "CartPole-v1",
    "MountainCarContinuous-v0",
    "Breakout-MinAtar",
    "DeepSea-bsuite",
    "FourRooms-misc",
}


@pytest.mark.parametrize(
    "env_id",
    [
        pytest.param(env_id, marks=() if env_id in DEFAULT_TIER else pytest.mark.slow)
        for env_id in gymnax.registered_envs
    ],
)
def test_episodes_equal_gymnax_own_step(env_id):
    env, params = _make(env_id)
    limit = params.max_steps
    params = with_params(params, max_steps=type(limit)(min(MAX_STEPS, limit)))
    ours, theirs = jax.jit(side_by_side, static_argnums=0)(env, params, jax.random.key(0))
    first, ts, states = ours
    gymnax_first, obs, reward, terminated, truncated, final_obs, gymnax_states = theirs

    space = env.observation_space(params)
    assert ts.observation.shape == (STEPS, *space.shape)
    assert ts.observation.dtype == first.dtype == space.dtype
    as_ours = lambda x: np.asarray(x, space.dtype)  # noqa: E731 (FourRooms' int32 → float32)
    np.testing.assert_array_equal(first, as_ours(gymnax_first))
    np.testing.assert_array_equal(ts.observation, as_ours(obs))
    np.testing.assert_array_equal(ts.final_observation, as_ours(final_obs))
    np.testing.assert_array_equal(ts.reward, np.asarray(reward, np.float32))
    np.testing.assert_array_equal(ts.terminated, terminated)
    np.testing.assert_array_equal(ts.truncated, truncated)
    # The whole state, DeepSea's totals kept across its auto-reset included.
    for ours_leaf, theirs_leaf in zip(
        jax.tree.leaves(states), jax.tree.leaves(gymnax_states), strict=True
    ):
        np.testing.assert_array_equal(ours_leaf, theirs_leaf)
    # Episodes ended, so the auto-reset was compared too.
    assert np.any(ts.terminated | ts.truncated)


def test_time_limit_is_gymnax_max_steps_in_episode():
    env, params = envs.make("gymnax/CartPole-v1", max_steps=7, gravity=5.0)
    assert params.max_steps == params.gymnax.max_steps_in_episode == 7
    assert params.gymnax.gravity == 5.0
    assert make_gymnax("CartPole-v1").default_params.max_steps == 500  # gymnax's default
    # DeepSea's default episode is its size, a constructor argument.
    assert make_gymnax("DeepSea-bsuite", size=5).default_params.max_steps == 5

    state, _ = env.reset(jax.random.key(0), params)
    step = jax.jit(env.step)
    ends = []
    for i in range(7):
        state, ts = step(jax.random.key(i), state, jnp.int32(i % 2), params)
        ends.append((bool(ts.terminated), bool(ts.truncated)))
    # Alternating pushes keep the pole up for 7 steps: only the time limit ends the episode.
    assert ends == [(False, False)] * 6 + [(False, True)] and int(state.time) == 0


def test_a_physics_sweep_is_a_vmap_over_params_without_recompiling():
    env = make_gymnax("CartPole-v1")
    gravity = jnp.array([4.9, 9.8, 19.6])
    swept = jax.vmap(lambda g: with_params(env.default_params, gravity=g))(gravity)

    def rollout(params):
        state, _ = env.reset(jax.random.key(0), params)

        def step(state, key):
            state, ts = env.step(key, state, jnp.int32(1), params)
            return state, ts.final_observation

        return jax.lax.scan(step, state, jax.random.split(jax.random.key(1), 8))[1]

    batched = jax.jit(jax.vmap(rollout))(swept)
    single = jax.jit(rollout)
    for i, g in enumerate(gravity):
        one = single(with_params(env.default_params, gravity=g))
        np.testing.assert_allclose(batched[i], one, rtol=1e-6, atol=1e-7)
    assert single._cache_size() == 1  # another gravity is another value, not another program
    # Stronger gravity tips the pole faster (its angle is observation 2).
    assert np.all(np.diff(np.abs(np.asarray(batched[:, -1, 2]))) > 0)


def test_spaces_convert_to_ours():
    params = lambda env: env.default_params  # noqa: E731
    for env_id, channels in [("Breakout-MinAtar", 4), ("Seaquest-MinAtar", 10)]:
        env = make_gymnax(env_id)
        space = env.observation_space(params(env))
        # [H, W, C] float32 images, as the CNN torso takes them.
        assert isinstance(space, Box) and space.shape == (10, 10, channels)
        assert space.dtype == jnp.float32
    env = make_gymnax("FrozenLake-misc")
    assert env.observation_space(params(env)) == Discrete(16)
    assert env.action_space(params(env)) == Discrete(4)
    env = make_gymnax("Pendulum-v1")
    space = env.action_space(params(env))
    assert isinstance(space, Box) and space.shape == (1,)
    assert (float(space.low), float(space.high)) == (-2.0, 2.0)
    env = make_gymnax("FourRooms-misc")  # gymnax gives int32 observations of a float32 Box
    _, ts = env.reset(jax.random.key(0))
    assert ts.observation.dtype == jnp.float32 and not env.on_host


def test_bad_ids_and_params_raise_one_line_value_errors():
    with pytest.raises(envs.UnknownEnvironmentError, match="did you mean 'CartPole-v1'"):
        GymnaxEnv("CartPol-v1")
    with pytest.raises(envs.UnknownEnvironmentError, match="'Breakout-MinAtar'") as error:
        envs.make("gymnax/Breakout-Minatar")
    assert "\n" not in str(error.value)
    env = make_gymnax("CartPole-v1")
    fields = [f.name for f in dataclasses.fields(env.default_params.gymnax)]
    with pytest.raises(ValueError, match=r"unknown gymnax parameter\(s\) \['gravty'\].*gravity"):
        with_params(env.default_params, gravty=1.0)
    with pytest.raises(ValueError, match="not both"):
        with_params(env.default_params, max_steps=1, max_steps_in_episode=2)
    with pytest.raises(ValueError, match="gymnax cannot make 'CartPole-v1'"):
        make_gymnax("CartPole-v1", no_such_argument=1)
    assert "max_steps_in_episode" in fields

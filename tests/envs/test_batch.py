"""The batch entry points: ``step_batch`` is ``vmap(step)`` up to which random numbers each
environment's reset receives, and its three reset paths (none, gathered, full) agree bit for bit.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg.envs.base as base
from jaxrl_fdg import envs, testing
from jaxrl_fdg.envs import EpisodeStatistics
from jaxrl_fdg.envs.wrapper_base import Wrapper

NAMES = ["CartPole-v1", "Acrobot-v1", "MountainCarContinuous-v0", "Pendulum-v1", "Catch-bsuite"]


def _batch(name, num_envs, seed=0, wrap=False):
    env, params = envs.make(name)
    if wrap:  # a wrapper whose auto-reset reads the finished state
        env = EpisodeStatistics(env)
        params = env.default_params
    state, first = env.reset_batch(jax.random.key(seed), num_envs, params)
    space = env.action_space(params)
    actions = jax.vmap(space.sample)(jax.random.split(jax.random.key(seed + 1), num_envs))
    return env, params, state, first, actions


def _end_some_episodes(state, params, every):
    """Put every ``every``-th environment on its last step before the time limit."""
    num_envs = state.time.shape[0]
    last = jnp.arange(num_envs) % every == 0
    return state._replace(time=jnp.where(last, params.max_steps - 1, 0).astype(jnp.int32))


# A discrete and a continuous task by default, the others in the slow tier.
@pytest.mark.parametrize(
    "name",
    [
        n if n in ("CartPole-v1", "Pendulum-v1") else pytest.param(n, marks=pytest.mark.slow)
        for n in NAMES
    ],
)
def test_step_batch_is_vmapped_step_up_to_reset_draws(name):
    env, params, state, first, actions = _batch(name, 96)
    state = _end_some_episodes(state, params, every=5)
    keys = jax.random.split(jax.random.key(2), 96)
    each_state, each = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))(
        keys, state, actions, params
    )
    batch_state, batch = jax.jit(env.step_batch)(jax.random.key(2), state, actions, params)
    done = np.asarray(batch.terminated | batch.truncated)
    assert done.sum() >= 96 // 5  # the forced truncations at least
    for field in ("reward", "terminated", "truncated", "final_observation"):
        np.testing.assert_allclose(getattr(batch, field), getattr(each, field), err_msg=field)
    # Where no episode ended, the next observation and state are the transition's.
    np.testing.assert_allclose(batch.observation[~done], each.observation[~done])
    np.testing.assert_array_equal(batch_state.time, each_state.time)
    # Where one ended, a fresh episode began: an observation the reset distribution can give.
    space = env.observation_space(params)
    assert bool(jnp.all(jax.vmap(space.contains)(batch.observation[done])))


def test_resets_within_a_step_are_independent_draws():
    env, params, state, _, actions = _batch("CartPole-v1", 512)
    state = state._replace(time=jnp.full((512,), params.max_steps - 1, jnp.int32))
    _, ts = jax.jit(env.step_batch)(jax.random.key(3), state, actions, params)
    obs = np.asarray(ts.observation)
    assert bool(np.all(ts.truncated))
    assert len(np.unique(obs, axis=0)) == 512  # no two environments restarted alike
    assert np.all(np.abs(obs) <= 0.05)
    # Uniform on [-0.05, 0.05]: mean 0, standard deviation 0.1 / sqrt(12) ≈ 0.029.
    assert abs(obs.mean()) < 0.005 and abs(obs.std() - 0.1 / np.sqrt(12)) < 0.003


@pytest.mark.parametrize("every", [1, 3, 40, 10**9])  # chunks of slots: 8, 3, 1, none
@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1"])
def test_reset_paths_agree_bit_for_bit(monkeypatch, name, every):
    # With the statistics wrapper the auto-reset reads the finished state, so the gather of the
    # finished environments into the slots is exercised too.
    env, params, state, _, actions = _batch(name, 256, wrap=True)
    state = _end_some_episodes(state, params, every)
    assert base._reset_slots(256) > 0
    step = jax.jit(env.step_batch)
    with_slots = step(jax.random.key(4), state, actions, params)
    monkeypatch.setattr(base, "_reset_slots", lambda num_envs: 0)
    without_slots = jax.jit(env.step_batch)(jax.random.key(4), state, actions, params)
    eager = env.step_batch(jax.random.key(4), state, actions, params)
    # The jitted paths agree exactly; eager execution may round the dynamics differently.
    testing.assert_same_bits(with_slots, without_slots)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), with_slots, eager
    )


class RestartFromFirst(Wrapper):
    """Each environment restarts from the state of its first reset (a copy, no draw)."""

    auto_reset_copies = True

    def reset_env(self, key, params):
        state, obs = self.inner.reset_env(key, params.inner)
        return (state, (state, obs)), obs

    def step_env(self, key, state, action, params):
        inner, first = state
        inner, obs, reward, terminated = self.inner.step_env(key, inner, action, params.inner)
        return (inner, first), obs, reward, terminated

    def auto_reset_env(self, key, state, params):
        _, first = state
        return (first[0], first), first[1]


def test_a_restart_that_copies_is_selected_and_agrees_with_the_gathered_path():
    env = RestartFromFirst(envs.make("CartPole-v1")[0])
    params = env.default_params
    state, first = env.reset_batch(jax.random.key(0), 256, params)
    state = _end_some_episodes(state, params, 3)
    ended = np.arange(256) % 3 == 0
    actions = jnp.zeros((256,), jnp.int32)
    selected = jax.jit(env.step_batch)(jax.random.key(4), state, actions, params)
    _, ts = selected
    np.testing.assert_array_equal(ts.observation[ended], first.observation[ended])
    np.testing.assert_array_equal(ts.observation[~ended], ts.final_observation[~ended])
    assert not np.array_equal(ts.observation[~ended], first.observation[~ended])
    # The same restart through the gathered slots (the path of a reset that computes).
    env.auto_reset_copies = False
    gathered = jax.jit(env.step_batch)(jax.random.key(4), state, actions, params)
    testing.assert_same_bits(selected, gathered)
    # Restarted as a copy, the step is one select: no branch on whether any episode ended.
    env.auto_reset_copies = True
    hlo = jax.jit(env.step_batch).lower(jax.random.key(4), state, actions, params).as_text()
    assert "stablehlo.case" not in hlo


def test_the_kth_finished_environment_restarts_from_the_kth_reset_key():
    # Reset keys are split(key, n + 1)[1:]: whatever their number, key k is the same (so every
    # reset path agrees), and the first is split(key)[1], the key a batch of one resets from.
    key = jax.random.key(7)
    keys = jax.random.key_data(base._reset_keys(key, 9))
    np.testing.assert_array_equal(keys[:3], jax.random.key_data(base._reset_keys(key, 3)))
    np.testing.assert_array_equal(keys[0], jax.random.key_data(jax.random.split(key)[1]))
    # The env restarts each finished environment from its key, in batch order of those finished.
    env, params, state, _, actions = _batch("CartPole-v1", 8)
    state = _end_some_episodes(state, params, every=3)  # environments 0, 3 and 6 end
    _, ts = jax.jit(env.step_batch)(key, state, actions, params)
    fresh = jax.vmap(env.reset_env, in_axes=(0, None))(base._reset_keys(key, 8), params)[1]
    np.testing.assert_array_equal(ts.observation[np.array([0, 3, 6])], fresh[:3])


def test_step_of_one_environment_is_step_batch_of_one():
    env, params = envs.make("Pendulum-v1")
    state, _ = env.reset(jax.random.key(0), params)
    state = state._replace(time=jnp.int32(params.max_steps - 1))
    action = jnp.array([0.5])
    one_state, one = jax.jit(env.step)(jax.random.key(1), state, action, params)
    batch_state, batch = jax.jit(env.step_batch)(
        jax.random.key(1), jax.tree.map(lambda x: x[None], state), action[None], params
    )
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b[0]), one, batch)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b[0]), one_state, batch_state)
    assert bool(one.truncated) and int(one_state.time) == 0


def test_step_batch_sweeps_params_under_vmap():
    # A vmap over params (and states) of the batch entry point: the reset branch becomes a select.
    env, params = envs.make("Pendulum-v1")
    gravities = jnp.array([9.0, 10.0, 11.0])
    swept = jax.vmap(lambda g: params.replace(g=g))(gravities)

    @jax.jit
    def run(swept):
        state, _ = jax.vmap(lambda p: env.reset_batch(jax.random.key(0), 64, p))(swept)
        last = jnp.broadcast_to(jnp.arange(64) < 5, state.time.shape)
        state = state._replace(time=jnp.where(last, params.max_steps - 1, 0).astype(jnp.int32))
        actions = jnp.full((3, 64, 1), 0.5)
        step = jax.vmap(env.step_batch, in_axes=(None, 0, 0, 0))
        return step(jax.random.key(1), state, actions, swept)[1]

    ts = run(swept)
    assert ts.observation.shape == (3, 64, 3)
    assert np.all(np.asarray(ts.truncated[:, :5])) and not np.any(np.asarray(ts.truncated[:, 5:]))
    # The reward is the cost of the state before the step, the same in every sweep member.
    assert len({float(r) for r in np.asarray(ts.reward[:, 10])}) == 1
    second = jax.vmap(lambda o: o[10, 2])(ts.observation)  # θ̇ after one step: depends on g
    assert len({float(x) for x in np.asarray(second)}) == 3

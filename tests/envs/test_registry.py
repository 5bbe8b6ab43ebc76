"""Contracts every registered environment keeps, swept over the registry."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import envs
from jaxrl_fdg.envs import Discrete, spaces


@pytest.mark.parametrize("name", envs.registered())
def test_reset_and_step_under_jit_and_vmap(name):
    env, params = envs.make(name)
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    keys = jax.random.split(jax.random.key(0), 4)
    state, ts = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    assert spaces.mismatch(obs_space, ts.observation, (4,)) is None  # shapes, dtypes, structure

    def rollout(state, key):
        k_act, k_step = jax.random.split(key)
        actions = jax.vmap(act_space.sample)(jax.random.split(k_act, 4))
        state, ts = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(k_step, 4), state, actions, params
        )
        return state, ts

    _, trajectory = jax.jit(lambda s: jax.lax.scan(rollout, s, jax.random.split(keys[0], 30)))(
        state
    )
    assert trajectory.reward.shape == (30, 4) and trajectory.reward.dtype == jnp.float32
    assert trajectory.terminated.dtype == jnp.bool_ and trajectory.truncated.dtype == jnp.bool_
    for leaf in jax.tree.leaves(trajectory.observation):
        assert bool(jnp.all(jnp.isfinite(leaf)))
    # Where no episode ended, the next observation is the final one (no reset in between).
    done = np.asarray(trajectory.terminated | trajectory.truncated)
    for now, final in zip(
        jax.tree.leaves(trajectory.observation),
        jax.tree.leaves(trajectory.final_observation),
        strict=True,
    ):
        same = np.all(np.asarray(now == final).reshape(30, 4, -1), -1)
        assert np.all(same[~done])


@pytest.mark.parametrize("name", envs.registered())
def test_spaces_are_consistent(name):
    env, params = envs.make(name)
    space = env.action_space(params)
    action = space.sample(jax.random.key(1))
    assert bool(space.contains(action))
    if isinstance(space, Discrete):
        assert not bool(space.contains(space.n))


def test_every_environment_is_listed():
    assert set(envs.registered()) >= {
        "CartPole-v1",
        "Acrobot-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Pendulum-v1",
        "Catch-bsuite",
        "StatelessCartPole-v1",
        "CueRecall-v0",
    }

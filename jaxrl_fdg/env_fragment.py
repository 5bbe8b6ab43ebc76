"""Wrap a vectorised :class:`~jaxrl_fdg.envs.Environment` as the graph's ``env`` fragment."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs.base import Environment, EpisodeState
from jaxrl_fdg.fragment import Fragment, Role, fragment

ENV_OUTPUTS = (
    "reward",
    "terminated",
    "truncated",
    "next_observation",
    "episode_return",
    "episode_length",
)


class EnvFragmentState(NamedTuple):
    """Batched environment state, the observation to act on, and running episode statistics.

    Shapes: ``observation`` ``[B, *obs_shape]``; ``episode_return``/``episode_length`` ``[B]``.
    """

    env: EpisodeState
    observation: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array


def env_fragment(env: Environment, params: Any, num_envs: int, name: str = "env") -> Fragment:
    """``num_envs`` copies of ``env`` stepped in lock-step, auto-resetting independently.

    ``apply`` reads edge ``action`` ``[B, ...]`` and writes the transition's ``reward``,
    ``terminated``, ``truncated``, ``next_observation`` (the observation actually reached, before
    any reset) and, where the episode ended, its ``episode_return`` and ``episode_length``
    (valid only where ``terminated | truncated``). It publishes ``observation``.
    """
    reset = jax.vmap(env.reset, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def init(key: jax.Array) -> EnvFragmentState:
        env_state, timestep = reset(jax.random.split(key, num_envs), params)
        zeros = jnp.zeros((num_envs,), jnp.float32)
        return EnvFragmentState(env_state, timestep.observation, zeros, zeros.astype(jnp.int32))

    def apply(state: EnvFragmentState, inputs, key: jax.Array):
        env_state, ts = step(jax.random.split(key, num_envs), state.env, inputs["action"], params)
        done = jnp.logical_or(ts.terminated, ts.truncated)
        ep_return = state.episode_return + ts.reward
        ep_length = state.episode_length + 1
        new_state = EnvFragmentState(
            env_state,
            ts.observation,
            jnp.where(done, 0.0, ep_return),
            jnp.where(done, 0, ep_length),
        )
        outputs = {
            "reward": ts.reward,
            "terminated": ts.terminated,
            "truncated": ts.truncated,
            "next_observation": ts.final_observation,
            "episode_return": ep_return,
            "episode_length": ep_length,
        }
        return new_state, outputs

    return fragment(
        name,
        Role.ENV,
        apply,
        init=init,
        inputs=("action",),
        outputs=ENV_OUTPUTS,
        publish=lambda state: {"observation": state.observation},
        published=("observation",),
    )

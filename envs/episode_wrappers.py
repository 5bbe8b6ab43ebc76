"""Wrappers over rewards and episodes: :class:`ScaleReward`, :class:`EpisodeStatistics` (the
return and length of each episode) and :class:`TimeLimit` (the episode length)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.wrapper_base import Wrapper, WrapperParams

__all__ = [
    "EpisodeStatistics",
    "EpisodeStatisticsState",
    "ScaleReward",
    "ScaleRewardParams",
    "TimeLimit",
    "TimeLimitParams",
]


# -- rewards -------------------------------------------------------------------------------------


@struct.dataclass
class ScaleRewardParams(WrapperParams):
    scale: float = 1.0  # a leaf, so a vmap can sweep it


class ScaleReward(Wrapper):
    """Rewards multiplied by a constant: r' = scale · r, with ``scale`` in the params."""

    def __init__(self, env: Environment, scale: float = 1.0):
        super().__init__(env)
        self.scale = scale

    @property
    def default_params(self) -> ScaleRewardParams:
        return ScaleRewardParams(self.inner.default_params, self.scale)

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: ScaleRewardParams):
        inner, obs, reward, terminated = self.inner.step_env(key, state, action, params.inner)
        return inner, obs, jnp.asarray(reward, jnp.float32) * params.scale, terminated


# -- episode statistics --------------------------------------------------------------------------


class EpisodeStatisticsState(NamedTuple):
    inner: Any
    episode_return: jax.Array  # float32: sum of rewards so far in the current episode
    episode_length: jax.Array  # int32: transitions so far in the current episode
    returned_episode_return: jax.Array  # float32: return of the last completed episode
    returned_episode_length: jax.Array  # int32: length of the last completed episode


class EpisodeStatistics(Wrapper):
    """Running return and length of the current episode, and those of the last completed one.

    With rewards r_1 .. r_T of an episode that ends (terminated or truncated) after T steps::

        episode_return_t = r_1 + ... + r_t,    episode_length_t = t
        returned_episode_return = r_1 + ... + r_T,    returned_episode_length = T

    ``step_env`` accumulates the running pair; it cannot tell truncation (the base class
    computes that), and needs not: the auto-reset runs on termination and truncation alike, and
    ``auto_reset_env`` copies the finished episode's running pair into ``returned_*`` and zeroes
    the running pair. So after the ``env.step`` that ends an episode (``terminated |
    truncated``), ``state.env.returned_episode_return`` is that episode's return. Before any
    episode has completed, ``returned_*`` are 0. Rewards are those of the inner environment:
    wrap reward-changing wrappers *outside* this one to record the raw return.

    """

    stateful = True

    def __init__(self, env: Environment):
        super().__init__(env)

    def _start(
        self, inner: Any, returned_return: jax.Array, returned_length: jax.Array
    ) -> EpisodeStatisticsState:
        return EpisodeStatisticsState(
            inner,
            jnp.zeros((), jnp.float32),
            jnp.zeros((), jnp.int32),
            jnp.asarray(returned_return, jnp.float32),
            jnp.asarray(returned_length, jnp.int32),
        )

    def reset_env(self, key: jax.Array, params: WrapperParams):
        inner, obs = self.inner.reset_env(key, params.inner)
        return self._start(inner, 0.0, 0), obs

    def auto_reset_env(self, key: jax.Array, state: EpisodeStatisticsState, params: WrapperParams):
        inner, obs = self.inner.auto_reset_env(key, state.inner, params.inner)
        return self._start(inner, state.episode_return, state.episode_length), obs

    def step_env(
        self, key: jax.Array, state: EpisodeStatisticsState, action: jax.Array, params: Any
    ):
        inner, obs, reward, terminated = self.inner.step_env(key, state.inner, action, params.inner)
        new = state._replace(
            inner=inner,
            episode_return=state.episode_return + jnp.asarray(reward, jnp.float32),
            episode_length=state.episode_length + 1,
        )
        return new, obs, reward, terminated


# -- episode length ------------------------------------------------------------------------------


@struct.dataclass
class TimeLimitParams:
    """The inner environment's params with ``max_steps`` replaced (the inner value is unused)."""

    inner: Any
    # Static, as in every environment's own params: the episode length is a shape-like setting.
    max_steps: int = struct.field(pytree_node=False)


class TimeLimit(Wrapper):
    """Episodes truncated after ``max_steps`` transitions instead of the inner params' limit.

    Sets ``params.max_steps``, which the base class's ``step`` compares with its step counter
    (``truncated = time >= max_steps``); the inner environment and its params are untouched, and
    the inner limit no longer applies (it replaces the limit, longer or shorter, rather than
    adding a second one). The state is the inner state itself.
    """

    def __init__(self, env: Environment, max_steps: int):
        super().__init__(env)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int | np.integer):
            raise ValueError(f"max_steps must be an int, got {max_steps!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.max_steps = int(max_steps)

    @property
    def default_params(self) -> TimeLimitParams:
        return TimeLimitParams(self.inner.default_params, self.max_steps)

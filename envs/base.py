"""The environment API: pure ``reset``/``step`` over explicit state, auto-reset in one place.

An environment is a stateless object whose methods are pure functions of their arguments. Concrete
environments implement the single-episode dynamics (``reset_env``, ``step_env``); the base class
adds the time limit and the auto-reset, once, here, so no environment or wrapper repeats them.

Physics parameters are a pytree argument to every call, so a sweep over them is a ``jax.vmap``
over ``params`` rather than a recompile. Nothing here is jitted: the caller (a fusion policy)
decides where compilation boundaries go.
"""

from __future__ import annotations

import abc
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs.spaces import Space

TEnvState = TypeVar("TEnvState")
TParams = TypeVar("TParams")


class TimeStep(NamedTuple):
    """What one ``reset`` or ``step`` returns besides the new state.

    Attributes:
      observation: the observation to act on next. After an episode ends this is already the
        first observation of the next episode (auto-reset).
      reward: reward of the transition just taken (0 after ``reset``).
      terminated: the transition reached a terminal state of the MDP; do not bootstrap.
      truncated: the episode was cut short (time limit); bootstrap from ``final_observation``.
      final_observation: the observation the transition actually reached. Equal to
        ``observation`` unless the episode ended; then it is the last observation of the old
        episode, which value bootstrapping on truncation needs.
    """

    observation: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_observation: jax.Array


class EpisodeState(NamedTuple, Generic[TEnvState]):
    """The environment's own state plus the step counter the time limit reads."""

    env: TEnvState
    time: jax.Array


class Environment(abc.ABC, Generic[TEnvState, TParams]):
    """Base class. Subclasses write ``reset_env``/``step_env``; users call ``reset``/``step``.

    ``params`` must carry ``max_steps`` (episode length at which ``truncated`` is raised).
    """

    name: str = "environment"

    # -- what subclasses provide -------------------------------------------------------------

    @property
    @abc.abstractmethod
    def default_params(self) -> TParams:
        """The environment's default parameters (a pytree with a ``max_steps`` field)."""

    @abc.abstractmethod
    def reset_env(self, key: jax.Array, params: TParams) -> tuple[TEnvState, jax.Array]:
        """Start an episode: ``(state, observation)``."""

    @abc.abstractmethod
    def step_env(
        self, key: jax.Array, state: TEnvState, action: jax.Array, params: TParams
    ) -> tuple[TEnvState, jax.Array, jax.Array, jax.Array]:
        """One transition, no time limit or reset: ``(state, observation, reward, terminated)``."""

    def auto_reset_env(
        self, key: jax.Array, state: TEnvState, params: TParams
    ) -> tuple[TEnvState, jax.Array]:
        """Start the episode that follows ``state``, which just ended; :meth:`step` calls this.

        Defaults to :meth:`reset_env`. A wrapper whose data must outlive an episode (running
        observation statistics, the return of the episode just finished) overrides it, since
        ``reset_env`` cannot see the state it replaces.
        """
        del state
        return self.reset_env(key, params)

    @abc.abstractmethod
    def observation_space(self, params: TParams) -> Space: ...

    @abc.abstractmethod
    def action_space(self, params: TParams) -> Space: ...

    # -- the public, pure API ----------------------------------------------------------------

    def reset(
        self, key: jax.Array, params: TParams | None = None
    ) -> tuple[EpisodeState[TEnvState], TimeStep]:
        params = self.default_params if params is None else params
        env_state, obs = self.reset_env(key, params)
        state = EpisodeState(env_state, jnp.zeros((), jnp.int32))
        false = jnp.zeros((), jnp.bool_)
        return state, TimeStep(obs, jnp.zeros((), jnp.float32), false, false, obs)

    def step(
        self,
        key: jax.Array,
        state: EpisodeState[TEnvState],
        action: jax.Array,
        params: TParams | None = None,
    ) -> tuple[EpisodeState[TEnvState], TimeStep]:
        """Take one transition; when the episode ends, start the next one in the same call."""
        params = self.default_params if params is None else params
        key_step, key_reset = jax.random.split(key)
        env_state, obs, reward, terminated = self.step_env(key_step, state.env, action, params)
        time = state.time + 1
        truncated = time >= params.max_steps
        done = jnp.logical_or(terminated, truncated)

        reset_state, reset_obs = self.auto_reset_env(key_reset, env_state, params)
        next_state = EpisodeState(
            _select(done, reset_state, env_state), jnp.where(done, 0, time).astype(jnp.int32)
        )
        next_obs = jnp.where(done, reset_obs, obs)
        timestep = TimeStep(
            next_obs,
            jnp.asarray(reward, jnp.float32),
            jnp.asarray(terminated, jnp.bool_),
            jnp.asarray(truncated, jnp.bool_),
            obs,
        )
        return next_state, timestep


def _select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)

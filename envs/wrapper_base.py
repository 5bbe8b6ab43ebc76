"""The common part of every wrapper: :class:`Wrapper`, which delegates to an inner environment,
and :class:`WrapperParams`, which holds the inner environment's params.

The design the wrappers share (what delegates to what, where state and params live, how data
outlives an episode) is described in :mod:`jaxrl_fdg.envs.wrappers`.
"""

from __future__ import annotations

from typing import Any

import jax
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box, Space

__all__ = ["Wrapper", "WrapperParams", "require_box"]


@struct.dataclass
class WrapperParams:
    """The inner environment's params; ``max_steps`` reads through to them."""

    inner: Any

    @property
    def max_steps(self) -> int:
        return self.inner.max_steps


def require_box(space: Space, wrapper: str, what: str) -> Box:
    """``space`` itself if it is a :class:`Box`; otherwise a ValueError naming ``wrapper``."""
    if not isinstance(space, Box):
        raise ValueError(f"{wrapper} needs a Box {what} space, got {type(space).__name__}")
    return space


class Wrapper(Environment):
    """Base class: delegates everything to ``inner``; subclasses override what they change.

    The defaults pass the inner state through unchanged, which is right for wrappers that keep no
    state of their own. Stateful wrappers override ``reset_env``, ``step_env`` and
    ``auto_reset_env`` together, keep the inner state in a field ``inner`` of their own and set
    ``stateful = True``, so the inner environment's action mask and info read through.
    """

    stateful: bool = False

    def __init__(self, env: Environment):
        if not isinstance(env, Environment):
            raise TypeError(f"{type(self).__name__} wraps an Environment, got {type(env)}")
        self.inner = env
        self.name = f"{type(self).__name__}<{env.name}>"

    @property
    def default_params(self) -> WrapperParams:
        return WrapperParams(self.inner.default_params)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, jax.Array]:
        return self.inner.reset_env(key, params.inner)

    def auto_reset_env(self, key: jax.Array, state: Any, params: Any) -> tuple[Any, jax.Array]:
        return self.inner.auto_reset_env(key, state, params.inner)

    def step_env(
        self, key: jax.Array, state: Any, action: jax.Array, params: Any
    ) -> tuple[Any, jax.Array, jax.Array, jax.Array]:
        return self.inner.step_env(key, state, action, params.inner)

    def observation_space(self, params: Any) -> Space:
        return self.inner.observation_space(params.inner)

    def _inner_state(self, state: Any) -> Any:
        return state.inner if self.stateful else state

    def action_mask(self, state: Any, params: Any) -> jax.Array | None:
        return self.inner.action_mask(self._inner_state(state), params.inner)

    def info_env(self, state: Any, params: Any) -> dict[str, jax.Array]:
        return self.inner.info_env(self._inner_state(state), params.inner)

    def render(self, state: Any, params: Any) -> jax.Array:
        return self.inner.render(self._inner_state(state), params.inner)

    @property
    def can_render(self) -> bool:
        return self.inner.can_render

    @property
    def render_on_host(self) -> bool:  # type: ignore[override]
        return self.inner.render_on_host

    @property
    def has_action_mask(self) -> bool:
        return self.inner.has_action_mask

    @property
    def has_info(self) -> bool:
        return self.inner.has_info

    def action_space(self, params: Any) -> Space:
        return self.inner.action_space(params.inner)

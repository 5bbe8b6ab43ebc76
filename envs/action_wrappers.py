"""Wrappers over actions: :class:`ClipAction` and :class:`RescaleAction`, both for Box actions."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box
from jaxrl_fdg.envs.wrapper_base import Wrapper, WrapperParams, require_box

__all__ = ["ClipAction", "RescaleAction"]


class ClipAction(Wrapper):
    """Actions clipped to the inner Box: a' = clip(a, low, high).

    As gymnasium's ``ClipAction``, the wrapper's own action space is (-inf, inf) of the inner
    shape: any real action is accepted.
    """

    def __init__(self, env: Environment):
        super().__init__(env)
        require_box(env.action_space(env.default_params), "ClipAction", "action")

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: WrapperParams):
        space = self.inner.action_space(params.inner)
        clipped = jnp.clip(jnp.asarray(action, space.dtype), space.low, space.high)
        return self.inner.step_env(key, state, clipped, params.inner)

    def action_space(self, params: WrapperParams) -> Box:
        space = self.inner.action_space(params.inner)
        return Box(-jnp.inf, jnp.inf, tuple(space.shape), space.dtype)


class RescaleAction(Wrapper):
    """Actions mapped affinely from [min_action, max_action] onto the inner Box [low, high]::

        a' = low + (a - min_action) · (high - low) / (max_action - min_action)

    so ``min_action`` ↦ ``low`` and ``max_action`` ↦ ``high`` (default [-1, 1]). Like
    gymnasium's ``RescaleAction`` it does not clip: compose ``ClipAction(RescaleAction(env))`` to
    clip in the [min_action, max_action] scale. The inner bounds must be finite.
    """

    def __init__(
        self,
        env: Environment,
        min_action: float | np.ndarray = -1.0,
        max_action: float | np.ndarray = 1.0,
    ):
        super().__init__(env)
        space = require_box(env.action_space(env.default_params), "RescaleAction", "action")
        low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape)
        high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError(f"RescaleAction needs finite inner bounds, got [{low}, {high}]")
        try:
            self.min_action = np.broadcast_to(np.asarray(min_action, np.float32), space.shape)
            self.max_action = np.broadcast_to(np.asarray(max_action, np.float32), space.shape)
        except ValueError as e:
            raise ValueError(
                f"min_action/max_action must broadcast to the action shape {space.shape}"
            ) from e
        if not np.all(self.min_action < self.max_action):
            raise ValueError(f"need min_action < max_action, got {min_action} and {max_action}")

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: WrapperParams):
        # The inner bounds are read from the (possibly vmapped) params, not frozen at init.
        space = self.inner.action_space(params.inner)
        fraction = (jnp.asarray(action, jnp.float32) - self.min_action) / (
            self.max_action - self.min_action
        )
        rescaled = space.low + fraction * (jnp.asarray(space.high) - space.low)
        return self.inner.step_env(key, state, rescaled.astype(space.dtype), params.inner)

    def action_space(self, params: WrapperParams) -> Box:
        space = self.inner.action_space(params.inner)
        return Box(jnp.asarray(self.min_action), jnp.asarray(self.max_action), tuple(space.shape))

"""Wrappers over observations: :class:`NormalizeObservation` (running standardisation) and
:class:`FrameStack` (the last few observations), both for Box observations."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box
from jaxrl_fdg.envs.wrapper_base import Wrapper, WrapperParams, require_box

__all__ = [
    "FrameStack",
    "FrameStackState",
    "NormalizeObservation",
    "NormalizeObservationState",
    "standardize",
    "update_running_moments",
]


# -- observation normalisation -------------------------------------------------------------------


def update_running_moments(
    mean: jax.Array,
    var: jax.Array,
    count: jax.Array,
    batch_mean: jax.Array,
    batch_var: jax.Array,
    batch_count: jax.Array | float,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Merge a batch's moments into running ones (Chan et al.'s parallel form of Welford's).

    With n = ``count``, m = ``batch_count``, δ = ``batch_mean - mean``::

        mean' = mean + δ·m/(n+m)
        var'  = (var·n + batch_var·m + δ²·n·m/(n+m)) / (n+m)      (population variance)
        count' = n + m

    Returns ``(mean', var', count')``.
    """
    total = count + batch_count
    delta = batch_mean - mean
    new_mean = mean + delta * (batch_count / total)
    m2 = var * count + batch_var * batch_count + jnp.square(delta) * (count * batch_count / total)
    return new_mean, m2 / total, total


def standardize(
    x: jax.Array, mean: jax.Array, var: jax.Array, epsilon: float, clip: float | None
) -> jax.Array:
    """``(x - mean) / sqrt(var + epsilon)``, clipped to ``[-clip, clip]`` unless ``clip`` is
    None."""
    normalised = (x - mean) / jnp.sqrt(var + epsilon)
    return normalised if clip is None else jnp.clip(normalised, -clip, clip)


class NormalizeObservationState(NamedTuple):
    inner: Any
    mean: jax.Array  # float32, the observation's shape
    var: jax.Array  # float32, the observation's shape (population variance)
    count: jax.Array  # float32 scalar: observations seen + the initial pseudo-count


class NormalizeObservation(Wrapper):
    """Observations standardised by running moments of every observation seen so far.

    Each observation x (the reset observation too) first updates the running moments with
    :func:`update_running_moments` (batch of one: batch_mean = x, batch_var = 0), then is
    returned as::

        clip((x - mean) / sqrt(var + epsilon), -clip, clip)

    The moments start at mean 0, var 1 with pseudo-count ``count_epsilon`` (gymnasium's
    ``RunningMeanStd``), so they equal the moments of the observations pooled with that weak
    prior, i.e. numpy's to a relative ``count_epsilon / n``.

    The moments live in the state, are updated in ``step_env`` and carried into the next episode
    by ``auto_reset_env``; only ``reset_env`` (a fresh start) resets them. Under ``jax.vmap``
    each environment copy keeps its own moments (gymnasium's vector wrapper pools them across the
    batch). ``count`` is float32: past ~1.6e7 observations it stops growing and the moments
    become an exponential average with that horizon, which is harmless.
    """

    stateful = True

    def __init__(
        self,
        env: Environment,
        clip: float | None = 10.0,
        epsilon: float = 1e-8,
        count_epsilon: float = 1e-4,
    ):
        super().__init__(env)
        if clip is not None and not clip > 0:
            raise ValueError(f"clip must be positive or None, got {clip}")
        if not epsilon >= 0:
            raise ValueError(f"epsilon must be >= 0, got {epsilon}")
        if not count_epsilon > 0:
            raise ValueError(f"count_epsilon must be positive, got {count_epsilon}")
        self._shape = require_box(
            env.observation_space(env.default_params), "NormalizeObservation", "observation"
        ).shape
        self.clip = clip
        self.epsilon = epsilon
        self.count_epsilon = count_epsilon

    def _observe(
        self, inner: Any, obs: jax.Array, mean: jax.Array, var: jax.Array, count: jax.Array
    ) -> tuple[NormalizeObservationState, jax.Array]:
        x = jnp.asarray(obs, jnp.float32)
        mean, var, count = update_running_moments(mean, var, count, x, jnp.zeros_like(x), 1.0)
        normalised = standardize(x, mean, var, self.epsilon, self.clip)
        return NormalizeObservationState(inner, mean, var, count), normalised

    def reset_env(self, key: jax.Array, params: WrapperParams):
        inner, obs = self.inner.reset_env(key, params.inner)
        mean = jnp.zeros(self._shape, jnp.float32)
        var = jnp.ones(self._shape, jnp.float32)
        return self._observe(inner, obs, mean, var, jnp.float32(self.count_epsilon))

    def auto_reset_env(
        self, key: jax.Array, state: NormalizeObservationState, params: WrapperParams
    ):
        inner, obs = self.inner.auto_reset_env(key, state.inner, params.inner)
        return self._observe(inner, obs, state.mean, state.var, state.count)

    def step_env(
        self, key: jax.Array, state: NormalizeObservationState, action: jax.Array, params: Any
    ):
        inner, obs, reward, terminated = self.inner.step_env(key, state.inner, action, params.inner)
        new, normalised = self._observe(inner, obs, state.mean, state.var, state.count)
        return new, normalised, reward, terminated

    def observation_space(self, params: WrapperParams) -> Box:
        bound = jnp.inf if self.clip is None else self.clip
        return Box(-bound, bound, tuple(self._shape), jnp.float32)


# -- observations over time ----------------------------------------------------------------------


class FrameStackState(NamedTuple):
    inner: Any
    frames: jax.Array  # the observation's shape + (num_stack,): oldest first, newest last


class FrameStack(Wrapper):
    """The last ``num_stack`` observations, stacked along a new *trailing* axis.

    For observations o_t of shape S the wrapper observes, with shape S + (k,)::

        frames_t[..., i] = o_{t-k+1+i}    (i = 0 .. k-1, newest at index -1)

    where observations before the episode's first, o_0, are o_0 itself: a reset fills all k
    slots with the reset observation. The trailing axis keeps an image's (H, W, C) layout in
    front, so ``frames.reshape(H, W, C * k)`` feeds a convolution directly. The frames restart
    with each episode (the auto-reset starts from the new episode's first observation);
    ``final_observation`` is the stack ending at the episode's last observation.
    """

    stateful = True

    def __init__(self, env: Environment, num_stack: int):
        super().__init__(env)
        if isinstance(num_stack, bool) or not isinstance(num_stack, int | np.integer):
            raise ValueError(f"num_stack must be an int, got {num_stack!r}")
        if num_stack < 1:
            raise ValueError(f"num_stack must be >= 1, got {num_stack}")
        require_box(env.observation_space(env.default_params), "FrameStack", "observation")
        self.num_stack = int(num_stack)

    @property
    def frame_stack(self) -> int:
        """The frames stacked on the observation's last axis: a replay with frame storage
        keeps each once (:mod:`~jaxrl_fdg.fragments.replay.frames`)."""
        return self.num_stack

    def _fresh(self, inner: Any, obs: jax.Array) -> tuple[FrameStackState, jax.Array]:
        frames = jnp.repeat(jnp.asarray(obs)[..., None], self.num_stack, axis=-1)
        return FrameStackState(inner, frames), frames

    def reset_env(self, key: jax.Array, params: WrapperParams):
        return self._fresh(*self.inner.reset_env(key, params.inner))

    def auto_reset_env(self, key: jax.Array, state: FrameStackState, params: WrapperParams):
        return self._fresh(*self.inner.auto_reset_env(key, state.inner, params.inner))

    def step_env(self, key: jax.Array, state: FrameStackState, action: jax.Array, params: Any):
        inner, obs, reward, terminated = self.inner.step_env(key, state.inner, action, params.inner)
        obs = jnp.asarray(obs, state.frames.dtype)
        frames = jnp.concatenate([state.frames[..., 1:], obs[..., None]], axis=-1)
        return FrameStackState(inner, frames), frames, reward, terminated

    def observation_space(self, params: WrapperParams) -> Box:
        space = self.inner.observation_space(params.inner)
        shape = tuple(space.shape)

        def stack(bound: jax.Array | float) -> jax.Array:
            bound = jnp.broadcast_to(jnp.asarray(bound, space.dtype), shape)
            return jnp.repeat(bound[..., None], self.num_stack, axis=-1)

        return Box(stack(space.low), stack(space.high), (*shape, self.num_stack), space.dtype)

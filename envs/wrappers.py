"""Environment wrappers: each one an :class:`Environment` that transforms a single episode.

A wrapper holds an inner environment and implements ``reset_env``/``step_env`` by calling the
inner environment's ``reset_env``/``step_env`` (never its public ``reset``/``step``) and
transforming the result. The time limit and the auto-reset therefore run exactly once, in the
base class's ``step`` of the outermost wrapper; no wrapper repeats them.

Parameters. A wrapper's params are a ``flax.struct`` pytree with an ``inner`` field holding the
inner environment's params, plus the wrapper's own numeric settings (``ScaleReward``'s
``scale``). ``max_steps`` is a property that reads ``inner.max_steps`` (``TimeLimit`` overrides it
with a field), so the base class, which only reads ``params.max_steps``, sees the right episode
length however deeply wrappers nest, and ``jax.vmap`` over params still sweeps the physics.
Structural settings (a stack depth, a clip bound) are constructor arguments: they change shapes
or are not worth a pytree leaf.

State. A wrapper that keeps something has its own ``NamedTuple`` state with an ``inner`` field
for the inner environment's state; a wrapper that keeps nothing passes the inner state through
unchanged, so ``TimeLimit(ScaleReward(env))`` has exactly ``env``'s state.

Episodes. Data that must outlive an episode (``NormalizeObservation``'s running moments, the
return of the episode ``EpisodeStatistics`` just finished) is carried through
:meth:`Environment.auto_reset_env`, which the base class's auto-reset calls with the finished
state; every wrapper delegates it to the inner environment, so such data survives any nesting.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box, Space

__all__ = [
    "ClipAction",
    "EpisodeStatistics",
    "EpisodeStatisticsState",
    "FrameStack",
    "FrameStackState",
    "NormalizeObservation",
    "NormalizeObservationState",
    "RescaleAction",
    "ScaleReward",
    "ScaleRewardParams",
    "TimeLimit",
    "TimeLimitParams",
    "Wrapper",
    "WrapperParams",
    "update_running_moments",
]


# -- params --------------------------------------------------------------------------------------


@struct.dataclass
class WrapperParams:
    """The inner environment's params; ``max_steps`` reads through to them."""

    inner: Any

    @property
    def max_steps(self) -> int:
        return self.inner.max_steps


@struct.dataclass
class ScaleRewardParams(WrapperParams):
    scale: float = 1.0  # a leaf, so a vmap can sweep it


@struct.dataclass
class TimeLimitParams:
    """The inner environment's params with ``max_steps`` replaced (the inner value is unused)."""

    inner: Any
    # Static, as in every environment's own params: the episode length is a shape-like setting.
    max_steps: int = struct.field(pytree_node=False)


# -- the common part -----------------------------------------------------------------------------


def _box(space: Space, wrapper: str, what: str) -> Box:
    if not isinstance(space, Box):
        raise ValueError(f"{wrapper} needs a Box {what} space, got {type(space).__name__}")
    return space


class Wrapper(Environment):
    """Base class: delegates everything to ``inner``; subclasses override what they change.

    The defaults pass the inner state through unchanged, which is right for wrappers that keep no
    state of their own. Stateful wrappers override ``reset_env``, ``step_env`` and
    ``auto_reset_env`` together.
    """

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

    def action_space(self, params: Any) -> Space:
        return self.inner.action_space(params.inner)


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
        self._shape = _box(
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
        normalised = (x - mean) / jnp.sqrt(var + self.epsilon)
        if self.clip is not None:
            normalised = jnp.clip(normalised, -self.clip, self.clip)
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


# -- rewards and actions -------------------------------------------------------------------------


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


class ClipAction(Wrapper):
    """Actions clipped to the inner Box: a' = clip(a, low, high).

    As gymnasium's ``ClipAction``, the wrapper's own action space is (-inf, inf) of the inner
    shape: any real action is accepted.
    """

    def __init__(self, env: Environment):
        super().__init__(env)
        _box(env.action_space(env.default_params), "ClipAction", "action")

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
        space = _box(env.action_space(env.default_params), "RescaleAction", "action")
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

    def __init__(self, env: Environment, num_stack: int):
        super().__init__(env)
        if isinstance(num_stack, bool) or not isinstance(num_stack, int | np.integer):
            raise ValueError(f"num_stack must be an int, got {num_stack!r}")
        if num_stack < 1:
            raise ValueError(f"num_stack must be >= 1, got {num_stack}")
        _box(env.observation_space(env.default_params), "FrameStack", "observation")
        self.num_stack = int(num_stack)

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


# -- episode length ------------------------------------------------------------------------------


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

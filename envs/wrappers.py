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

Modules. The wrappers live by what they transform: :mod:`~jaxrl_fdg.envs.wrapper_base` (the
delegating base class), :mod:`~jaxrl_fdg.envs.observation_wrappers` (``NormalizeObservation``,
``FrameStack``), :mod:`~jaxrl_fdg.envs.action_wrappers` (``ClipAction``, ``RescaleAction``) and
:mod:`~jaxrl_fdg.envs.episode_wrappers` (``ScaleReward``, ``EpisodeStatistics``,
``TimeLimit``). This module re-exports them all.
"""

from jaxrl_fdg.envs.action_wrappers import ClipAction, RescaleAction
from jaxrl_fdg.envs.episode_wrappers import (
    EpisodeStatistics,
    EpisodeStatisticsState,
    ScaleReward,
    ScaleRewardParams,
    TimeLimit,
    TimeLimitParams,
)
from jaxrl_fdg.envs.observation_wrappers import (
    FrameStack,
    FrameStackState,
    NormalizeObservation,
    NormalizeObservationState,
    update_running_moments,
)
from jaxrl_fdg.envs.wrapper_base import Wrapper, WrapperParams

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

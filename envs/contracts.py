"""What an environment's first reset must agree with, checked from shapes alone (no data, no
compile): the observation against ``observation_space``, the action mask against the action
space. :func:`check_reset` runs before every run builds its graph; ``jaxrl-fdg check-env``
checks more, on data (:mod:`jaxrl_fdg.envs.check`)."""

from __future__ import annotations

from typing import Any

import jax

from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.base import ACTION_MASK, Environment, TimeStep
from jaxrl_fdg.envs.errors import EnvironmentContractError


def reset_shapes(env: Environment, params: Any) -> TimeStep:
    """The shapes and dtypes of ``env.reset``'s time step (traced once, nothing computed)."""
    return jax.eval_shape(lambda key: env.reset(key, params)[1], jax.random.key(0))


def check_reset(env: Environment, params: Any) -> TimeStep:
    """Raise :class:`EnvironmentContractError` where the first reset's observation departs from
    ``observation_space(params)`` in structure, shape or dtype, or its action mask from the
    action space; return the time step's shapes.

    >>> check_reset(make("CartPole-v1")[0], None)  # doctest: +SKIP
    """
    shapes = reset_shapes(env, params)
    space = env.observation_space(params)
    found = spaces.mismatch(space, shapes.observation)
    if found:
        raise EnvironmentContractError(
            f"{env.name}: {found} (observation_space is {spaces.describe(space)})"
        )
    if env.has_action_mask:
        action_space = env.action_space(params)
        if not isinstance(action_space, spaces.Discrete):
            raise EnvironmentContractError(
                f"{env.name}: an action mask needs a Discrete action space, got "
                f"{spaces.describe(action_space)}"
            )
        mask = shapes.info[ACTION_MASK]
        if tuple(mask.shape) != (action_space.n,) or mask.dtype != bool:
            raise EnvironmentContractError(
                f"{env.name}: action_mask must be bool [{action_space.n}] (one flag per action), "
                f"got {mask.dtype} {tuple(mask.shape)}"
            )
    return shapes

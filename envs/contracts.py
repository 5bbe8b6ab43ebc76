"""What an environment's first reset must agree with, checked from shapes alone (no data, no
compile): the observation against ``observation_space``, the action mask against the action
space, and a first step's reward and flags against one value per environment.
:func:`check_reset` and :func:`check_step` run before every run builds its graph; ``jaxrl-fdg
check-env`` checks more, on data (:mod:`jaxrl_fdg.envs.check`)."""

from __future__ import annotations

import math
from typing import Any

import jax

from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.base import ACTION_MASK, Environment, TimeStep
from jaxrl_fdg.envs.errors import EnvironmentContractError


def reset_shapes(env: Environment, params: Any) -> TimeStep:
    """The shapes and dtypes of ``env.reset``'s time step (traced once, nothing computed)."""
    return jax.eval_shape(lambda: env.reset(jax.random.key(0), params)[1])


def check_reset(env: Environment, params: Any) -> TimeStep:
    """Raise :class:`EnvironmentContractError` where the first reset's observation departs from
    ``observation_space(params)`` in structure, shape or dtype, or its action mask from the
    action space; return the time step's shapes.

    >>> check_reset(make("CartPole-v1")[0], None)  # doctest: +SKIP
    """
    shapes = reset_shapes(env, params)
    space = env.observation_space(params)
    agents = _agents_axis(env)  # a multi-agent game's observations are [N, *one agent's]
    found = spaces.mismatch(space, shapes.observation, agents)
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
        expected = (*agents, action_space.n)
        if tuple(mask.shape) != expected or mask.dtype != bool:
            raise EnvironmentContractError(
                f"{env.name}: action_mask must be bool {list(expected)} (one flag per action), "
                f"got {mask.dtype} {tuple(mask.shape)}"
            )
    return shapes


def check_step(env: Environment, params: Any) -> None:
    """Raise :class:`EnvironmentContractError` where the spaces are empty (``Discrete(0)``, an
    observation of no values) or a step, traced from shapes alone with an action of the action
    space, returns a reward, ``terminated`` or ``truncated`` that is not one value per
    environment (a scalar)."""
    action_space = env.action_space(params)
    if isinstance(action_space, spaces.Discrete) and not int(action_space.n) >= 1:
        raise EnvironmentContractError(
            f"{env.name}: the action space {spaces.describe(action_space)} has no action "
            "(Discrete(n) needs n >= 1)"
        )
    observation_space = env.observation_space(params)
    if not any(math.prod(shape) for _, shape in spaces.leaves_shapes(observation_space)):
        raise EnvironmentContractError(
            f"{env.name}: the observation space {spaces.describe(observation_space)} holds no "
            "value: a policy has nothing to observe"
        )
    if spaces.is_nested(action_space):  # an action of a nested space: its own adapter's
        return

    agents = _agents_axis(env)

    def first_step():  # the key made inside: traced, not computed
        key = jax.random.key(0)
        state, _ = env.reset(key, params)
        return env.step(key, state, spaces.example(action_space, agents), params)[1]

    timestep = jax.eval_shape(first_step)
    for name in ("reward", "terminated", "truncated"):
        shape = tuple(getattr(timestep, name).shape)
        expected = agents if name == "reward" else ()
        if shape != expected:
            per = (
                f"one per agent, shape {expected}"
                if expected
                else "one value per environment, shape ()"
            )
            raise EnvironmentContractError(
                f"{env.name}: step returns {name} of shape {shape}; it must be {per} (a batch of "
                "environments is vmapped over step)"
            )


def _agents_axis(env: Environment) -> tuple[int, ...]:
    """``(N,)`` for a game of ``N`` agents (its values carry the agents axis), else ``()``."""
    from jaxrl_fdg.envs.multi_agent import is_multi_agent

    return (env.num_agents,) if is_multi_agent(env) else ()

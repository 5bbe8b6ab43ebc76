"""Pure JAX environments: ``reset``/``step`` over explicit state, spaces and a registry."""

from jaxrl_fdg.envs.base import Environment, EpisodeState, TimeStep
from jaxrl_fdg.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from jaxrl_fdg.envs.registry import (
    UnknownEnvironmentError,
    check_name,
    make,
    register,
    registered,
)
from jaxrl_fdg.envs.spaces import Box, Discrete, Space

register("CartPole-v1", CartPole)

__all__ = [
    "Box",
    "CartPole",
    "CartPoleParams",
    "CartPoleState",
    "Discrete",
    "Environment",
    "EpisodeState",
    "Space",
    "TimeStep",
    "UnknownEnvironmentError",
    "check_name",
    "make",
    "register",
    "registered",
]

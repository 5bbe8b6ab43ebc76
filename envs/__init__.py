"""Pure JAX environments: ``reset``/``step`` over explicit state, spaces and a registry."""

from jaxrl_fdg.envs.base import Environment, EpisodeState, TimeStep
from jaxrl_fdg.envs.classic.acrobot import Acrobot, AcrobotParams, AcrobotState
from jaxrl_fdg.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from jaxrl_fdg.envs.classic.catch import Catch, CatchParams, CatchState
from jaxrl_fdg.envs.classic.mountain_car import (
    MountainCar,
    MountainCarContinuous,
    MountainCarContinuousParams,
    MountainCarParams,
    MountainCarState,
)
from jaxrl_fdg.envs.classic.pendulum import Pendulum, PendulumParams, PendulumState
from jaxrl_fdg.envs.registry import (
    UnknownEnvironmentError,
    check_name,
    make,
    register,
    registered,
)
from jaxrl_fdg.envs.spaces import Box, Discrete, Space
from jaxrl_fdg.envs.wrappers import (
    ClipAction,
    EpisodeStatistics,
    FrameStack,
    NormalizeObservation,
    RescaleAction,
    ScaleReward,
    TimeLimit,
    Wrapper,
)

register("CartPole-v1", CartPole)
register("Acrobot-v1", Acrobot)
register("MountainCar-v0", MountainCar)
register("MountainCarContinuous-v0", MountainCarContinuous)
register("Pendulum-v1", Pendulum)
register("Catch-bsuite", Catch)

__all__ = [
    "ClipAction",
    "EpisodeStatistics",
    "FrameStack",
    "NormalizeObservation",
    "RescaleAction",
    "ScaleReward",
    "TimeLimit",
    "Wrapper",
    "Acrobot",
    "AcrobotParams",
    "AcrobotState",
    "Box",
    "CartPole",
    "CartPoleParams",
    "CartPoleState",
    "Catch",
    "CatchParams",
    "CatchState",
    "Discrete",
    "Environment",
    "EpisodeState",
    "MountainCar",
    "MountainCarContinuous",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "MountainCarState",
    "Pendulum",
    "PendulumParams",
    "PendulumState",
    "Space",
    "TimeStep",
    "UnknownEnvironmentError",
    "check_name",
    "make",
    "register",
    "registered",
]

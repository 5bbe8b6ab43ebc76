"""Pure JAX environments: ``reset``/``step`` over explicit state, spaces and a registry.

``make(name)`` builds registered names and, through :mod:`jaxrl_fdg.envs.prefixes`, the
prefixed ones: ``brax/<env>[:<backend>]``, ``gym/<id>``, ``gymnax/<id>``, the JAX suites
(``craftax/``, ``xminigrid/``, ``navix/``, ``jumanji/``) and any suite with gymnax's or dm_env's
API (``gymnax-api/<module>:<factory>``, ``timestep-api/<module>:<factory>``).
"""

from jaxrl_fdg.envs.base import Environment, EpisodeState, TimeStep
from jaxrl_fdg.envs.check import Problem, Report, check_env
from jaxrl_fdg.envs.classic.acrobot import Acrobot, AcrobotParams, AcrobotState
from jaxrl_fdg.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from jaxrl_fdg.envs.classic.catch import Catch, CatchParams, CatchState
from jaxrl_fdg.envs.classic.cue_recall import CueRecall, CueRecallParams, CueRecallState
from jaxrl_fdg.envs.classic.minefield import Minefield, MinefieldParams, MinefieldState
from jaxrl_fdg.envs.classic.mountain_car import (
    MountainCar,
    MountainCarContinuous,
    MountainCarContinuousParams,
    MountainCarParams,
    MountainCarState,
)
from jaxrl_fdg.envs.classic.pendulum import Pendulum, PendulumParams, PendulumState
from jaxrl_fdg.envs.classic.stateless_cartpole import StatelessCartPole
from jaxrl_fdg.envs.errors import MissingDependencyError, UnknownEnvironmentError
from jaxrl_fdg.envs.prefixes import AdapterRow, adapters
from jaxrl_fdg.envs.registry import (
    check_name,
    make,
    register,
    registered,
)
from jaxrl_fdg.envs.spaces import Box, Dict, Discrete, MultiDiscrete, Space, Tuple
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
# Partially observed: memory is needed to do well.
register("StatelessCartPole-v1", StatelessCartPole)
register("CueRecall-v0", CueRecall)
register("Minefield-v0", Minefield)

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
    "AdapterRow",
    "AcrobotParams",
    "AcrobotState",
    "Box",
    "CartPole",
    "CartPoleParams",
    "CartPoleState",
    "Catch",
    "CatchParams",
    "CatchState",
    "CueRecall",
    "CueRecallParams",
    "CueRecallState",
    "Dict",
    "Discrete",
    "Environment",
    "MissingDependencyError",
    "EpisodeState",
    "Minefield",
    "MinefieldParams",
    "MinefieldState",
    "MountainCar",
    "MountainCarContinuous",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "MountainCarState",
    "Pendulum",
    "PendulumParams",
    "PendulumState",
    "Problem",
    "Report",
    "MultiDiscrete",
    "Space",
    "StatelessCartPole",
    "TimeStep",
    "Tuple",
    "UnknownEnvironmentError",
    "adapters",
    "check_env",
    "check_name",
    "make",
    "register",
    "registered",
]

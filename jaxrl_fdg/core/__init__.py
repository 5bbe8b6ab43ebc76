"""The core: fragments, the dataflow graph and its schedule, algorithms, and the loop."""

from jaxrl_fdg.core.algorithm import (
    Algorithm,
    AlgorithmContext,
    AlgorithmSpec,
    OffPolicy,
    hparam,
)
from jaxrl_fdg.core.builder import LoopBuilder
from jaxrl_fdg.core.fragment import EmptyState, Fragment, Method, Role, call, fragment, published
from jaxrl_fdg.core.graph import Edge, Graph, Schedule
from jaxrl_fdg.core.lagged import LaggedLoop
from jaxrl_fdg.core.loop import Loop, RolloutCarry, episode_metrics, iterations_done
from jaxrl_fdg.core.protocol import LoopLike, LoopWrapper
from jaxrl_fdg.core.types import LoopState, Pending, Transition

__all__ = [
    "Algorithm",
    "AlgorithmContext",
    "AlgorithmSpec",
    "Edge",
    "EmptyState",
    "Fragment",
    "Graph",
    "LaggedLoop",
    "Loop",
    "LoopBuilder",
    "LoopLike",
    "LoopState",
    "LoopWrapper",
    "Method",
    "OffPolicy",
    "Pending",
    "RolloutCarry",
    "Role",
    "Schedule",
    "Transition",
    "call",
    "episode_metrics",
    "fragment",
    "hparam",
    "iterations_done",
    "published",
]

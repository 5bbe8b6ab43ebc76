"""The core: fragments, the dataflow graph and its schedule, algorithms, and the loop."""

from jaxrl_fdg.core import names
from jaxrl_fdg.core.algorithm import (
    Algorithm,
    AlgorithmContext,
    AlgorithmSpec,
    hparam,
)
from jaxrl_fdg.core.builder import LoopBuilder
from jaxrl_fdg.core.cadence import (
    ITERATION,
    STEP,
    Cadence,
    Condition,
    Every,
    Iteration,
    Rounds,
    Step,
    condition,
    every,
    rounds,
)
from jaxrl_fdg.core.evaluation import in_graph_evaluator
from jaxrl_fdg.core.extend import Extended, extend
from jaxrl_fdg.core.fragment import (
    EmptyState,
    Fragment,
    Method,
    Role,
    Site,
    call,
    fragment,
    published,
)
from jaxrl_fdg.core.graph import Call, Edge, EdgeKind, Graph, Node, Rollout, Schedule
from jaxrl_fdg.core.lagged import LaggedLoop, lagged
from jaxrl_fdg.core.loop import episode_metrics, iterations_done, make_loop
from jaxrl_fdg.core.record import Loop, LoopInfo
from jaxrl_fdg.core.step import Driver, RolloutCarry
from jaxrl_fdg.core.types import LoopState, Pending, Transition

__all__ = [
    "ITERATION",
    "STEP",
    "Algorithm",
    "AlgorithmContext",
    "AlgorithmSpec",
    "Cadence",
    "Call",
    "Condition",
    "Driver",
    "Edge",
    "EdgeKind",
    "Every",
    "EmptyState",
    "Extended",
    "Fragment",
    "Graph",
    "Iteration",
    "LaggedLoop",
    "Loop",
    "LoopBuilder",
    "LoopInfo",
    "LoopState",
    "Method",
    "Node",
    "Pending",
    "RolloutCarry",
    "Role",
    "Rollout",
    "Rounds",
    "Schedule",
    "Site",
    "Step",
    "Transition",
    "call",
    "condition",
    "episode_metrics",
    "every",
    "extend",
    "fragment",
    "hparam",
    "in_graph_evaluator",
    "iterations_done",
    "lagged",
    "make_loop",
    "names",
    "published",
    "rounds",
]

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
from jaxrl_fdg.core.fragment import EmptyState, Fragment, Method, Role, call, fragment, published
from jaxrl_fdg.core.graph import Call, Edge, Graph, Node, Rollout, Schedule
from jaxrl_fdg.core.lagged import LaggedLoop
from jaxrl_fdg.core.loop import Loop, RolloutCarry, episode_metrics, iterations_done
from jaxrl_fdg.core.protocol import LoopLike, LoopWrapper
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
    "Edge",
    "Every",
    "EmptyState",
    "Fragment",
    "Graph",
    "Iteration",
    "LaggedLoop",
    "Loop",
    "LoopBuilder",
    "LoopLike",
    "LoopState",
    "LoopWrapper",
    "Method",
    "Node",
    "Pending",
    "RolloutCarry",
    "Role",
    "Rollout",
    "Rounds",
    "Schedule",
    "Step",
    "Transition",
    "call",
    "condition",
    "episode_metrics",
    "every",
    "fragment",
    "hparam",
    "in_graph_evaluator",
    "iterations_done",
    "names",
    "published",
    "rounds",
]

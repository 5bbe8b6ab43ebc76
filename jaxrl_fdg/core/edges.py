"""The edges of a graph: what feeds each input, and of what kind its value is."""

from __future__ import annotations

import enum
from typing import NamedTuple

from jaxrl_fdg.core.names import ENV_STEPS, TRAJECTORY
from jaxrl_fdg.core.names import ITERATION as ITERATION_EDGE

LOOP_EDGES = (TRAJECTORY, ENV_STEPS, ITERATION_EDGE)


class EdgeKind(enum.StrEnum):
    """Where an edge's value comes from, as its reader sees it."""

    STEP = "step"  # written earlier in the same step
    STATE = "state"  # published by a fragment's state, read as the step begins
    PUBLISHED = "published"  # published by a fragment's state after its calls this iteration
    ROLLOUT = "rollout"  # the trajectory: the rollout's steps stacked
    LOOP = "loop"  # counted by the loop (env steps, the iteration)
    LEARN = "learn"  # written after the rollout, in the every-iteration node
    ROUND = "round"  # written within a round
    PERIODIC = "periodic"  # written within a periodic node

    @property
    def note(self) -> str:
        """How ``jaxrl-fdg graph`` describes an edge of this kind."""
        return _NOTES[self]


_NOTES = {
    EdgeKind.STEP: "within a step",
    EdgeKind.STATE: "the source's state at the start of the step",
    EdgeKind.PUBLISHED: "the source's state after its calls this iteration",
    EdgeKind.ROLLOUT: "{rollout_len} steps of the step body stacked",
    EdgeKind.LOOP: "counted by the loop",
    EdgeKind.LEARN: "after the rollout",
    EdgeKind.ROUND: "within a round",
    EdgeKind.PERIODIC: "within a periodic node",
}


class Edge(NamedTuple):
    source: str  # "fragment.edge", "rollout.trajectory" or "loop.env_steps"
    target: str  # "fragment.edge", "fragment.method:edge", or "fragment.when:edge" (a condition)
    kind: EdgeKind


__all__ = ["LOOP_EDGES", "Edge", "EdgeKind"]

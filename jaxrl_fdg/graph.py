"""The dataflow graph: fragments as nodes, named edges between them, printable.

Edges are resolved by name when the graph is built. An input edge of a fragment is fed by

* a *published* edge of some fragment (read from that fragment's current state: the actor reads
  the env's ``observation`` and the learner's ``params`` this way),
* an *output* of a fragment that runs earlier in the same step (the env reads the actor's
  ``action``), or
* the rollout's ``trajectory``: ``T`` steps of env∘actor outputs stacked, read by the learner
  (on-policy) or stored by the replay (off-policy), or
* the replay's ``batch``, sampled for each update of an off-policy learner, whose ``td_error``
  output goes back to the replay as new priorities.

An input nothing feeds is an error raised here, before anything is traced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from jaxrl_fdg.fragment import Fragment, Role

TRAJECTORY = "trajectory"
BATCH = "batch"


class Edge(NamedTuple):
    source: str  # "fragment.edge" or "rollout.trajectory"
    target: str  # "fragment.edge"
    kind: str  # "step" | "state" | "rollout" | "sample" | "priorities"


class Graph(NamedTuple):
    name: str
    fragments: tuple[Fragment, ...]
    edges: tuple[Edge, ...]
    rollout_len: int

    @classmethod
    def build(cls, name: str, fragments: Iterable[Fragment], rollout_len: int) -> Graph:
        fragments = tuple(fragments)
        names = [f.name for f in fragments]
        if len(set(names)) != len(names):
            raise ValueError(f"fragment names must be unique, got {names}")
        # Fragments of one step run actor first, then env; outputs flow forward within the step.
        order = {Role.ACTOR: 0, Role.ENV: 1, Role.REPLAY: 2, Role.LEARNER: 3}
        published = {e: f.name for f in fragments for e in f.published}
        edges = []
        for frag in fragments:
            for edge in frag.inputs:
                source = _source(frag, edge, fragments, published, order)
                if source is None:
                    available = sorted(
                        {*published, TRAJECTORY, BATCH, *(e for f in fragments for e in f.outputs)}
                    )
                    raise ValueError(
                        f"input edge {edge!r} of fragment {frag.name!r} has no producer; "
                        f"edges available: {', '.join(available)}"
                    )
                edges.append(source._replace(target=f"{frag.name}.{edge}"))
        replay = [f for f in fragments if f.role is Role.REPLAY]
        learner = [f for f in fragments if f.role is Role.LEARNER]
        if replay and learner and "td_error" in learner[0].outputs:
            edges.append(
                Edge(f"{learner[0].name}.td_error", f"{replay[0].name}.priorities", "priorities")
            )
        return cls(name, fragments, tuple(edges), rollout_len)

    def check_state(self, states: Mapping[str, Any]) -> None:
        """Graph state must be ``{fragment name: state}`` with exactly this graph's names."""
        expected = sorted(f.name for f in self.fragments)
        if sorted(states) != expected:
            raise ValueError(
                f"graph state keys {sorted(states)} do not match the fragments of graph "
                f"{self.name!r}: {expected}"
            )

    def describe(self, programs: Mapping[str, str] | None = None) -> str:
        """A text rendering: nodes, edges and, if given, the programs of each fusion mode."""
        width = max(len(f.name) for f in self.fragments)
        lines = [
            f"graph {self.name}  (rollout of {self.rollout_len} steps per iteration)",
            "nodes:",
        ]
        for f in self.fragments:
            ins = ", ".join(f.inputs) or "-"
            outs = ", ".join((*f.outputs, *(f"{p} (published)" for p in f.published))) or "-"
            where = "" if f.placement == "device" else f", on the {f.placement}"
            lines.append(
                f"  {f.name:<{width}}  [{f.role.value}{where}]  in: {ins}  ->  out: {outs}"
            )
        lines.append("edges:")
        notes = {
            "step": "within a step",
            "state": "read from the source's state",
            "rollout": f"{self.rollout_len} steps of env∘actor stacked",
            "sample": "sampled from the replay for each update",
            "priorities": "new priorities for the sampled slots",
        }
        for e in self.edges:
            lines.append(f"  {e.source:<28} -> {e.target:<24} ({notes[e.kind]})")
        if programs:
            lines.append("compiled programs by fusion mode:")
            mode_width = max(map(len, programs))
            for mode, text in programs.items():
                lines.append(f"  {mode:<{mode_width}}  {text}")
        return "\n".join(lines)


def _source(frag, edge, fragments, published, order) -> Edge | None:
    if edge == TRAJECTORY and frag.role in (Role.LEARNER, Role.REPLAY):
        return Edge(f"rollout.{TRAJECTORY}", "", "rollout")
    replay = next((f.name for f in fragments if f.role is Role.REPLAY), None)
    if edge == BATCH and frag.role is Role.LEARNER and replay is not None:
        return Edge(f"{replay}.{BATCH}", "", "sample")
    for other in fragments:
        runs_before = order.get(other.role, 9) < order.get(frag.role, 9)
        if other is not frag and edge in other.outputs and runs_before:
            return Edge(f"{other.name}.{edge}", "", "step")
    if edge in published:
        return Edge(f"{published[edge]}.{edge}", "", "state")
    return None

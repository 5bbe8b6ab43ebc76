"""The dataflow graph: fragments as nodes, named edges between them, and the schedule tree the
loop interprets.

:meth:`Graph.build` turns a set of fragments into a :class:`Schedule`::

    iteration
    ├─ rollout × T steps            the STEP calls, in order, at every env step
    └─ after the rollout            one node per cadence, in order
        ├─ every iteration          calls once per iteration
        ├─ k rounds, when ...       calls k times per iteration while a condition holds
        └─ every n iterations       calls at the end of iterations n, 2n, ...

Every entry point of every fragment (its ``apply`` and its methods) is one :class:`Call` in one
node, placed by its cadence (:mod:`jaxrl_fdg.core.cadence`); an entry point that declares none
gets one from its role and edges:

* ``env`` and ``actor``: every step; ``learner``, ``replay`` and ``evaluator``: every iteration;
* a ``transform`` runs where what it reads is made: after the rollout if it reads the
  ``trajectory``, in the node of the calls whose outputs it reads, at every step otherwise;
* a method (a replay's ``sample``) joins the node of the first fragment that reads its outputs,
  else the node of what writes its inputs.

An input edge is fed by an output of an earlier call in the same step or node, by one of the
loop's edges after the rollout (``trajectory``: ``T`` steps of the step edges stacked;
``env_steps``, this rollout's included; ``iteration``, the one being run, from 1), or by an edge
a fragment *publishes* from its state. Order follows the edges:

* a call runs after every call of its node that writes what it reads. A call that reads and
  writes the same edge rewrites it in place (an observation normaliser, a reward bonus) and runs
  between the edge's producer and its readers;
* after the rollout, a published edge orders too: a call that reads an edge another fragment
  publishes runs after that fragment's ``apply`` and sees the state it left (a policy learner
  after the value learner whose parameters it reads). Within the rollout a published edge is
  read as the step begins (the env's observation, the learner's parameters): it closes the
  feedback loop instead;
* nodes after the rollout run in the order their edges require (a node that reads what another
  publishes, or calls a method of a fragment whose ``apply`` is in another, runs after it), in
  declaration order where nothing does. Outputs of the every-iteration node flow to the nodes
  after it; outputs made inside rounds or a periodic node stay inside it.

A fragment's ``metrics`` output is collected by the loop, not read as an edge. Anything the
edges leave unresolved (an input nothing feeds, a cycle, two writers of one edge, a transform
whose place is ambiguous) is a :class:`~jaxrl_fdg.errors.GraphError` naming the fragments and
edges, raised here, before anything is traced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from jaxrl_fdg.core.derive import Derivation
from jaxrl_fdg.core.edges import LOOP_EDGES, Edge, EdgeKind
from jaxrl_fdg.core.fragment import Fragment, Site
from jaxrl_fdg.core.names import ENV_STEPS, METRICS, TRAJECTORY
from jaxrl_fdg.core.names import ITERATION as ITERATION_EDGE
from jaxrl_fdg.core.schedule import Call, Node, Rollout, Schedule
from jaxrl_fdg.errors import GraphError


class Graph(NamedTuple):
    name: str
    fragments: tuple[Fragment, ...]
    edges: tuple[Edge, ...]
    rollout_len: int
    schedule: Schedule
    # Declarations that build but are likely mistakes, one sentence each (see Derivation.hazards).
    hazards: tuple[str, ...] = ()

    @classmethod
    def build(cls, name: str, fragments: Iterable[Fragment], rollout_len: int) -> Graph:
        """The graph of ``fragments`` with rollouts of ``rollout_len`` steps; a
        :class:`GraphError` for anything the edges leave unresolved."""
        fragments = tuple(fragments)
        names = [f.name for f in fragments]
        doubles = sorted({n for n in names if names.count(n) > 1})
        if doubles:
            raise GraphError(f"fragment names must be unique; {', '.join(doubles)} appear twice")
        builder = Derivation(fragments)
        schedule = builder.schedule(rollout_len)
        edges = tuple(builder.edges(schedule))
        return cls(name, fragments, edges, rollout_len, schedule, builder.hazards(schedule))

    def fragment(self, name: str) -> Fragment:
        for frag in self.fragments:
            if frag.name == name:
                return frag
        raise GraphError(f"graph {self.name!r} has no fragment {name!r}")

    @property
    def step_fragments(self) -> tuple[str, ...]:
        """The fragments the rollout calls (their state is the rollout's carry)."""
        return tuple(dict.fromkeys(c.fragment for c in self.schedule.rollout.calls))

    def publisher(self, edge: str) -> str | None:
        """The fragment that publishes ``edge``, if one does."""
        return next((f.name for f in self.fragments if edge in f.published), None)

    def check_state(self, states: Mapping[str, Any]) -> None:
        """Graph state must be ``{fragment name: state}`` with exactly this graph's names."""
        expected = sorted(f.name for f in self.fragments)
        if sorted(states) != expected:
            raise GraphError(
                f"graph state keys {sorted(states)} do not match the fragments of graph "
                f"{self.name!r}: {expected}"
            )

    def describe(self, programs: Mapping[str, str] | None = None) -> str:
        """A text rendering: nodes, edges, the schedule tree and, if given, each fusion mode's
        programs."""
        width = max(len(f.name) for f in self.fragments)
        lines = [
            f"graph {self.name}  (rollout of {self.rollout_len} steps per iteration)",
            "nodes:",
        ]
        for f in self.fragments:
            ins = ", ".join(f.inputs) or "-"
            outs = ", ".join((*f.outputs, *(f"{p} (published)" for p in f.published))) or "-"
            where = "" if f.site is Site.DEVICE else f", on the {f.site.value}"
            extra = "".join(
                f"; {m.name}: in: {_names(m.inputs)} -> out: {_names(m.outputs)}"
                + (f" ({m.cadence})" if m.cadence is not None else "")
                for m in f.methods
            )
            extra += f"  ({f.cadence})" if f.cadence is not None else ""
            lines.append(
                f"  {f.name:<{width}}  [{f.role.value}{where}]  in: {ins}  ->  out: {outs}{extra}"
            )
        lines.append("edges:")
        for e in self.edges:
            note = e.kind.note.format(rollout_len=self.rollout_len)
            lines.append(f"  {e.source:<28} -> {e.target:<24} ({note})")
        lines.append("schedule:")
        lines += [f"  {line}" for line in self.schedule.lines()]
        if programs:
            lines.append("compiled programs by fusion mode:")
            mode_width = max(map(len, programs))
            for mode, text in programs.items():
                lines.append(f"  {mode:<{mode_width}}  {text}")
        return "\n".join(lines)


def _names(edges: tuple[str, ...]) -> str:
    return ", ".join(edges) or "-"


__all__ = [
    "ENV_STEPS",
    "ITERATION_EDGE",
    "LOOP_EDGES",
    "METRICS",
    "TRAJECTORY",
    "Call",
    "Edge",
    "EdgeKind",
    "Graph",
    "Node",
    "Rollout",
    "Schedule",
]

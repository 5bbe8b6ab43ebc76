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

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from jaxrl_fdg.core.cadence import ITERATION, STEP, Cadence, Every, Iteration, Rounds, gate
from jaxrl_fdg.core.fragment import Fragment, Role, Site
from jaxrl_fdg.core.names import ENV_STEPS, METRICS, TRAJECTORY
from jaxrl_fdg.core.names import ITERATION as ITERATION_EDGE
from jaxrl_fdg.core.schedule import Call, Node, Rollout, Schedule
from jaxrl_fdg.errors import GraphError

# Made by the loop for the calls after the rollout: the rollout's steps stacked ``[T, B, ...]``,
# the env steps taken (this rollout's included) and the iteration being run, from 1 (int32).
LOOP_EDGES = (TRAJECTORY, ENV_STEPS, ITERATION_EDGE)

_ROLE_CADENCE = {
    Role.ENV: STEP,
    Role.ACTOR: STEP,
    Role.LEARNER: ITERATION,
    Role.REPLAY: ITERATION,
    Role.EVALUATOR: ITERATION,
}


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


class Graph(NamedTuple):
    name: str
    fragments: tuple[Fragment, ...]
    edges: tuple[Edge, ...]
    rollout_len: int
    schedule: Schedule
    # Declarations that build but are likely mistakes, one sentence each (see _Builder.hazards).
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
        builder = _Builder(fragments)
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


def _label(cadence: Cadence) -> str:
    return f"'{cadence}'"


class _Builder:
    """Places every entry point in a node, orders calls and nodes, and resolves edges."""

    def __init__(self, fragments: tuple[Fragment, ...]):
        self.fragments = fragments
        self.by_name = {f.name: f for f in fragments}
        self.calls: list[Call] = []
        for f in fragments:
            for m in f.entry_points:
                self.calls.append(Call(f.name, m.name, m.inputs, m.outputs, len(self.calls)))
        self.declared = {c: self.by_name[c.fragment].method(c.method).cadence for c in self.calls}
        self.publisher: dict[str, str] = {}
        for f in fragments:
            for edge in f.published:
                if edge in LOOP_EDGES:
                    raise GraphError(
                        f"fragment {f.name!r} publishes {edge!r}, an edge the loop makes after "
                        f"the rollout ({', '.join(LOOP_EDGES)}): rename it"
                    )
                if edge in self.publisher:
                    raise GraphError(
                        f"edge {edge!r} is published by both {self.publisher[edge]!r} and "
                        f"{f.name!r}: a reader could not tell which it gets"
                    )
                self.publisher[edge] = f.name

    # -- placing calls ------------------------------------------------------------------------

    def cadences(self) -> dict[Call, Cadence]:
        """Each call's cadence: declared, by role, or derived from the edges (see the module
        docstring); repeated until nothing changes, since derived ones depend on each other."""
        known: dict[Call, Cadence] = {}
        for c in self.calls:
            frag = self.by_name[c.fragment]
            if self.declared[c] is not None:
                known[c] = self.declared[c]
            elif c.method == "apply" and frag.role in _ROLE_CADENCE:
                known[c] = _ROLE_CADENCE[frag.role]
        pending = [c for c in self.calls if c not in known]
        while pending:
            placed = {c: cadence for c in pending if (cadence := self._derive(c, known))}
            if not placed:  # calls that wait on each other: placed by what they read alone
                first = pending[0]
                reads_loop = bool(set(first.inputs) & set(LOOP_EDGES)) or first.method != "apply"
                placed = {first: ITERATION if reads_loop else STEP}
            known.update(placed)
            pending = [c for c in pending if c not in known]
        return known

    def _derive(self, call: Call, known: dict[Call, Cadence]) -> Cadence | None:
        """``call``'s cadence from those already known, or ``None`` to wait for more."""
        writers = [w for w in self.calls if w is not call and set(w.outputs) & set(call.inputs)]
        if call.method != "apply":
            readers = [r for r in self.calls if r is not call and set(r.inputs) & set(call.outputs)]
            for group in (readers, writers):
                found = [known[c] for c in group if c in known]
                if found:
                    return found[0]
                if group:
                    return None
            return ITERATION
        # A transform: where what it reads is made. Another rewriter of an edge it reads (both
        # read and write it) is placed by the same producers, so it is not waited for.
        makers = [w for w in writers if w.fragment != call.fragment]
        if any(w not in known and not set(w.inputs) & set(w.outputs) for w in makers):
            return None
        places = {known[w] for w in makers if w in known} - {STEP}
        if set(call.inputs) & set(LOOP_EDGES):
            places.add(ITERATION)
        if len(places) > 1:
            where = ", ".join(sorted(_label(p) for p in places))
            raise GraphError(
                f"transform {call.fragment!r} reads edges made in {where}: declare its cadence"
            )
        return places.pop() if places else STEP

    def schedule(self, rollout_len: int) -> Schedule:
        cadences = self.cadences()
        nodes: dict[Cadence, list[Call]] = {}
        for c in self.calls:
            nodes.setdefault(cadences[c], []).append(c)
        step = nodes.pop(STEP, [])
        rollout = Rollout(rollout_len, self._order(step, published_orders=False))
        after = [
            Node(cadence, self._order(calls, True), self._owner(cadence, calls))
            for cadence, calls in nodes.items()
        ]
        return Schedule(rollout, self._order_nodes(after))

    def _owner(self, cadence: Cadence, calls: list[Call]) -> str:
        """The label of the call that declared ``cadence`` (by role, the ``apply``'s)."""
        declared = [c for c in calls if self.declared[c] == cadence]
        applies = [c for c in calls if c.method == "apply"]
        return (declared or applies or calls)[0].label

    # -- ordering -----------------------------------------------------------------------------

    def _order(self, calls: list[Call], published_orders: bool) -> tuple[Call, ...]:
        """``calls`` in an order where each runs after the calls it reads from (see the module
        docstring); ties keep declaration order."""
        self._check_single_writers(calls)
        after: dict[Call, dict[Call, str]] = {c: {} for c in calls}  # call -> {before: edge}
        applies = {c.fragment: c for c in calls if c.method == "apply"}
        for c in calls:
            for edge in c.inputs:
                for w in calls:
                    if w is c or edge not in w.outputs or edge == METRICS:
                        continue
                    rewrites, w_rewrites = edge in c.outputs, edge in w.inputs
                    if not rewrites or not w_rewrites or w.index < c.index:
                        after[c][w] = repr(edge)
                publisher = self.publisher.get(edge)
                if published_orders and publisher in applies and publisher != c.fragment:
                    after[c][applies[publisher]] = f"{edge!r} (published)"
        return _topological(calls, after, lambda c: c.index, lambda c: repr(c.label))

    def _check_single_writers(self, calls: Sequence[Call]) -> None:
        """Two calls of a node that both make an edge (neither rewriting it) leave its readers
        a value that depends on declaration order: refused."""
        makers: dict[str, Call] = {}
        for c in calls:
            for edge in c.outputs:
                if edge == METRICS or edge in c.inputs:
                    continue
                if edge in makers:
                    raise GraphError(
                        f"edge {edge!r} is written by both {makers[edge].label!r} and "
                        f"{c.label!r} in the same node: its readers could not tell which"
                    )
                makers[edge] = c

    def _order_nodes(self, nodes: list[Node]) -> tuple[Node, ...]:
        """Nodes after the rollout in an order their edges allow (see the module docstring);
        the every-iteration node first and then declaration order where nothing decides."""
        home = {c.fragment: n for n in nodes for c in n.calls if c.method == "apply"}
        made = {edge: n for n in nodes for c in n.calls for edge in c.outputs if edge != METRICS}
        after: dict[Node, dict[Node, str]] = {n: {} for n in nodes}
        for n in nodes:
            for c in n.calls:
                for edge in c.inputs:
                    maker = made.get(edge)
                    if maker is not None and maker is not n and edge not in _outputs(n):
                        if not isinstance(maker.cadence, Iteration):
                            raise GraphError(
                                f"{c.label!r} reads {edge!r}, which is written inside "
                                f"{_label(maker.cadence)}: outputs of rounds and periodic "
                                "nodes stay inside them (publish it from a state instead)"
                            )
                        after[n][maker] = repr(edge)
                    publisher = self.publisher.get(edge)
                    if publisher in home and home[publisher] is not n:
                        after[n][home[publisher]] = f"{edge!r} (published by {publisher!r})"
                if c.method != "apply" and c.fragment in home and home[c.fragment] is not n:
                    after[n][home[c.fragment]] = f"{c.fragment!r}'s state"
            condition = gate(n.cadence)
            for edge in condition.reads if condition else ():
                publisher = self.publisher.get(edge)
                if publisher in home and home[publisher] is not n:
                    after[n][home[publisher]] = f"{edge!r} (published by {publisher!r})"

        def rank(n: Node) -> tuple[int, int]:
            return (0 if isinstance(n.cadence, Iteration) else 1, min(c.index for c in n.calls))

        return _topological(
            nodes, after, rank, lambda n: f"'{n.cadence}' ({', '.join(n.fragments)})"
        )

    # -- hazards ------------------------------------------------------------------------------

    def hazards(self, schedule: Schedule) -> tuple[str, ...]:
        """What builds but is likely a mistake: an output that shadows an edge the loop makes
        or a fragment publishes (its readers would see one or the other depending on where
        they run), and an edge written in two nodes (the readers of one never see the other's
        value). A call that also reads the edge rewrites it in place, which is no hazard."""
        found, writers = [], {}
        nodes = [("the rollout", schedule.rollout.calls)]
        nodes += [(f"'{n.cadence}'", n.calls) for n in schedule.after]
        for i, (where, calls) in enumerate(nodes):  # by position: two nodes may print alike
            for c in calls:
                for edge in c.outputs:
                    if edge == METRICS or edge in c.inputs:
                        continue
                    writers.setdefault(edge, {}).setdefault(i, (where, c.label))
                    shadowed = self._shadowed(edge, c.fragment)
                    if shadowed:
                        found.append(
                            f"{c.label!r} writes {edge!r}, which {shadowed}: readers after it "
                            "in its node see its value, all others the other one (rename it)"
                        )
        for edge, where in writers.items():
            if len(where) > 1:
                by = " and ".join(f"{label!r} in {node}" for node, label in where.values())
                found.append(
                    f"edge {edge!r} is written by {by}: each node's readers see only their own "
                    "node's value (rename one of them)"
                )
        return tuple(found)

    def _shadowed(self, edge: str, writer: str) -> str | None:
        if edge in LOOP_EDGES:
            return "the loop makes after the rollout"
        publisher = self.publisher.get(edge)
        if publisher is not None and publisher != writer:
            return f"{publisher!r} publishes"
        return None

    # -- edges --------------------------------------------------------------------------------

    def edges(self, schedule: Schedule) -> Iterable[Edge]:
        """The source of every input edge, in schedule order; a :class:`GraphError` for one
        that nothing feeds."""
        written: dict[str, str] = {}
        for c in schedule.rollout.calls:
            for edge in c.inputs:
                yield self._edge(c, edge, written, (), EdgeKind.STEP)
            written.update({e: c.fragment for e in c.outputs})
        carried: dict[str, str] = {}
        for node in schedule.after:
            kind = _KINDS[type(node.cadence)]
            written = dict(carried)
            condition = gate(node.cadence)
            owner = node.owner  # the condition is the cadence of the call that declared it
            for edge in condition.reads if condition else ():
                source = self._edge(None, edge, carried, LOOP_EDGES, kind)
                yield source._replace(target=f"{owner}.when:{edge}")
            for c in node.calls:
                for edge in c.inputs:
                    yield self._edge(c, edge, written, LOOP_EDGES, kind)
                written.update({e: c.fragment for e in c.outputs})
            if isinstance(node.cadence, Iteration):
                carried = written

    def _edge(self, call: Call | None, edge: str, written, loop_edges, kind: EdgeKind) -> Edge:
        target = "" if call is None else f"{call.fragment}.{edge}"
        if call is not None and call.method != "apply":
            target = f"{call.fragment}.{call.method}:{edge}"
        if edge in written:
            return Edge(f"{written[edge]}.{edge}", target, kind)
        if edge in loop_edges:
            source = EdgeKind.ROLLOUT if edge == TRAJECTORY else EdgeKind.LOOP
            return Edge(f"{source.value}.{edge}", target, source)
        if edge in self.publisher:
            published = EdgeKind.PUBLISHED if loop_edges else EdgeKind.STATE
            return Edge(f"{self.publisher[edge]}.{edge}", target, published)
        available = sorted({*self.publisher, *loop_edges, *written} - {METRICS})
        who = "a condition" if call is None else f"{call.label!r}"
        raise GraphError(
            f"input edge {edge!r} of fragment {who} has no producer"
            + ("" if call is None else f" where it runs ({_where(call, loop_edges)})")
            + f"; edges available there: {', '.join(available)}"
        )


_KINDS = {Iteration: EdgeKind.LEARN, Rounds: EdgeKind.ROUND, Every: EdgeKind.PERIODIC}


def _names(edges: tuple[str, ...]) -> str:
    return ", ".join(edges) or "-"


def _where(call: Call, loop_edges) -> str:
    return "after the rollout" if loop_edges else "at every step"


def _outputs(node: Node) -> set[str]:
    return {e for c in node.calls for e in c.outputs}


def _topological(items, after: Mapping[Any, Mapping[Any, str]], rank, label) -> tuple:
    """``items`` so that each comes after those in ``after[item]``; ties by ``rank``. A cycle is
    a :class:`GraphError` naming the items and the edges that tie them."""
    done: list = []
    while len(done) < len(items):
        ready = [x for x in items if x not in done and set(after[x]) <= set(done)]
        if not ready:
            stuck = [x for x in items if x not in done]
            ties = "; ".join(
                f"{label(x)} reads {edge} from {label(y)}"
                for x in stuck
                for y, edge in after[x].items()
                if y in stuck
            )
            raise GraphError(f"a cycle: {ties}; no order runs each after what it reads")
        done.append(min(ready, key=rank))
    return tuple(done)


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

"""How :meth:`Graph.build <jaxrl_fdg.core.graph.Graph.build>` derives a graph from its fragments:
each entry point's cadence, the schedule tree and its order, the source of every input edge, and
the declarations that build but are likely mistakes. The rules are
:mod:`jaxrl_fdg.core.graph`'s docstring."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jaxrl_fdg.core.cadence import ITERATION, STEP, Cadence, Every, Iteration, Rounds, gate
from jaxrl_fdg.core.edges import LOOP_EDGES, Edge, EdgeKind
from jaxrl_fdg.core.fragment import Fragment, Role
from jaxrl_fdg.core.names import METRICS, TRAJECTORY
from jaxrl_fdg.core.schedule import Call, Node, Rollout, Schedule
from jaxrl_fdg.errors import GraphError

_ROLE_CADENCE = {
    Role.ENV: STEP,
    Role.ACTOR: STEP,
    Role.LEARNER: ITERATION,
    Role.REPLAY: ITERATION,
    Role.EVALUATOR: ITERATION,
}


def _label(cadence: Cadence) -> str:
    return f"'{cadence}'"


class Derivation:
    """Places every entry point of ``fragments`` in a node, orders calls and nodes, resolves
    edges and names hazards (see :mod:`jaxrl_fdg.core.graph` for the rules)."""

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


__all__ = ["Derivation"]

"""The dataflow graph: fragments as nodes, named edges between them, and the order they run in.

Edges are resolved by name when the graph is built. An input edge of a fragment is fed by

* an *output* of a fragment that runs earlier in the same phase (the env reads the actor's
  ``action``; the learner reads a ``trajectory`` an intrinsic-reward fragment rewrote),
* a *published* edge of some fragment (read from that fragment's current state: the actor reads
  the env's ``observation`` and the learner's ``params`` this way),
* one of the loop's own edges: ``trajectory`` (``T`` steps of the step phase's edges, stacked)
  and ``env_steps`` (env steps taken, counting this rollout's), or
* the replay: ``batch`` from its ``sample`` method, once per update of an off-policy learner,
  whose ``td_error`` goes back to the replay's ``update`` method as new priorities.

Nodes run in two phases. The *step* phase (env, actor, and any transform that reads step edges)
runs at every env step; the *learn* phase (learner, replay, and transforms that read the
``trajectory``) once per iteration, after the rollout. Within a phase the order is derived from
the edges: a fragment runs after every fragment that writes an edge it reads. A fragment that
reads and writes the same edge rewrites it in place (an observation normaliser, a reward
bonus): it runs after the edge's producer, and the edge's readers see its value. The order is
:class:`Schedule`; an input nothing feeds, or a cycle, is an error raised here, before anything
is traced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from jaxrl_fdg.core.fragment import Fragment, Role

TRAJECTORY = "trajectory"
BATCH = "batch"
ENV_STEPS = "env_steps"
TD_ERROR = "td_error"
_STEP_ROLES = (Role.ACTOR, Role.ENV)
_LEARN_ROLES = (Role.LEARNER, Role.REPLAY)


class Edge(NamedTuple):
    source: str  # "fragment.edge", "rollout.trajectory" or "loop.env_steps"
    target: str  # "fragment.edge", or "fragment.method:edge" for a method's input
    kind: str  # "step" | "state" | "rollout" | "loop" | "learn" | "sample" | "priorities"


class Schedule(NamedTuple):
    """The order of fragment calls in one iteration, derived from the graph.

    Attributes:
      step: fragment names called at every env step, in order.
      learn: fragment names called once per iteration on the ``trajectory``, in order.
      sample: ``(fragment, method)`` producing the ``batch`` of each update round, or ``None``.
      update: fragment names called on each sampled ``batch``, in order.
      feedback: ``(fragment, method)`` taking each round's ``td_error``, or ``None``.
    """

    step: tuple[str, ...]
    learn: tuple[str, ...]
    sample: tuple[str, str] | None = None
    update: tuple[str, ...] = ()
    feedback: tuple[str, str] | None = None


class Graph(NamedTuple):
    name: str
    fragments: tuple[Fragment, ...]
    edges: tuple[Edge, ...]
    rollout_len: int
    schedule: Schedule

    @classmethod
    def build(cls, name: str, fragments: Iterable[Fragment], rollout_len: int) -> Graph:
        fragments = tuple(fragments)
        names = [f.name for f in fragments]
        if len(set(names)) != len(names):
            raise ValueError(f"fragment names must be unique, got {names}")
        for frag in fragments:
            if frag.role is Role.EVALUATOR:
                raise ValueError(
                    f"fragment {frag.name!r} is an evaluator: it runs outside the training graph"
                )
        schedule = _schedule(fragments)
        edges = tuple(_Resolver(fragments, schedule).edges())
        return cls(name, fragments, edges, rollout_len, schedule)

    def check_state(self, states: Mapping[str, Any]) -> None:
        """Graph state must be ``{fragment name: state}`` with exactly this graph's names."""
        expected = sorted(f.name for f in self.fragments)
        if sorted(states) != expected:
            raise ValueError(
                f"graph state keys {sorted(states)} do not match the fragments of graph "
                f"{self.name!r}: {expected}"
            )

    def describe(self, programs: Mapping[str, str] | None = None) -> str:
        """A text rendering: nodes, edges, the schedule and, if given, each fusion mode's
        programs."""
        width = max(len(f.name) for f in self.fragments)
        lines = [
            f"graph {self.name}  (rollout of {self.rollout_len} steps per iteration)",
            "nodes:",
        ]
        for f in self.fragments:
            ins = ", ".join(f.inputs) or "-"
            outs = ", ".join((*f.outputs, *(f"{p} (published)" for p in f.published))) or "-"
            where = "" if f.placement == "device" else f", on the {f.placement}"
            extra = "".join(f"; {m.name}: {', '.join(m.inputs) or '-'}" for m in f.methods)
            lines.append(
                f"  {f.name:<{width}}  [{f.role.value}{where}]  in: {ins}  ->  out: {outs}{extra}"
            )
        lines.append("edges:")
        notes = {
            "step": "within a step",
            "state": "read from the source's state",
            "rollout": f"{self.rollout_len} steps of the step phase stacked",
            "loop": "counted by the loop",
            "learn": "within the learn phase",
            "sample": "sampled from the replay for each update",
            "priorities": "new priorities for the sampled slots",
        }
        for e in self.edges:
            lines.append(f"  {e.source:<28} -> {e.target:<24} ({notes[e.kind]})")
        lines.append("order:")
        lines.append(f"  every step:      {' -> '.join(self.schedule.step)}")
        lines.append(f"  every iteration: {' -> '.join(self.schedule.learn) or '-'}")
        if self.schedule.sample is not None:
            rounds = [".".join(self.schedule.sample), *self.schedule.update]
            rounds += [".".join(self.schedule.feedback)] if self.schedule.feedback else []
            lines.append(f"  every update:    {' -> '.join(rounds)}")
        if programs:
            lines.append("compiled programs by fusion mode:")
            mode_width = max(map(len, programs))
            for mode, text in programs.items():
                lines.append(f"  {mode:<{mode_width}}  {text}")
        return "\n".join(lines)


def _in_step_phase(frag: Fragment) -> bool:
    if frag.role in _STEP_ROLES:
        return True
    if frag.role in _LEARN_ROLES:
        return False
    return not {TRAJECTORY, BATCH} & set(frag.inputs)


def _schedule(fragments: tuple[Fragment, ...]) -> Schedule:
    step = [f for f in fragments if _in_step_phase(f)]
    for role in _STEP_ROLES:
        if sum(f.role is role for f in fragments) != 1:
            raise ValueError(f"a graph needs exactly one {role.value} fragment")
    learners = [f for f in fragments if f.role is Role.LEARNER]
    if len(learners) != 1:
        raise ValueError("a graph needs exactly one learner fragment")
    sample = _method_with(fragments, BATCH, "outputs")
    feedback = _method_with(fragments, TD_ERROR, "inputs")
    on_batch = [f for f in fragments if BATCH in f.inputs]
    if on_batch and sample is None:
        raise ValueError(
            f"input edge 'batch' of fragment {on_batch[0].name!r} has no producer: "
            "no replay fragment has a method that writes it"
        )
    learn = [f for f in fragments if not _in_step_phase(f) and f not in on_batch]
    return Schedule(
        step=_order(step),
        learn=_order(learn),
        sample=sample,
        update=_order(on_batch) if sample else (),
        feedback=feedback if sample else None,
    )


def _method_with(fragments, edge: str, port: str) -> tuple[str, str] | None:
    """The first ``(fragment, method)`` whose ``port`` (``inputs`` or ``outputs``) has ``edge``."""
    found = [(f.name, m.name) for f in fragments for m in f.methods if edge in getattr(m, port)]
    return found[0] if found else None


def _order(frags: list[Fragment]) -> tuple[str, ...]:
    """The fragments in an order where each runs after those that write what it reads: a
    reader of edge ``e`` after every writer of ``e``; a rewriter of ``e`` (reads and writes it)
    after its producer and after rewriters declared before it. Ties keep declaration order."""
    index = {f.name: i for i, f in enumerate(frags)}
    after: dict[str, set[str]] = {f.name: set() for f in frags}
    for f in frags:
        for g in frags:
            if g is f:
                continue
            for edge in set(f.inputs) & set(g.outputs):
                rewrites = edge in f.outputs
                g_rewrites = edge in g.inputs
                if not rewrites or not g_rewrites or index[g.name] < index[f.name]:
                    after[f.name].add(g.name)
    done: list[str] = []
    while len(done) < len(frags):
        ready = [n for n in after if n not in done and after[n] <= set(done)]
        if not ready:
            stuck = sorted(n for n in after if n not in done)
            raise ValueError(f"fragments {stuck} wait on each other's outputs (a cycle)")
        done.append(min(ready, key=index.__getitem__))
    return tuple(done)


class _Resolver:
    """Finds the source of every input edge, for :attr:`Graph.edges` and early errors."""

    def __init__(self, fragments: tuple[Fragment, ...], schedule: Schedule):
        self.fragments, self.schedule = fragments, schedule
        self.by_name = {f.name: f for f in fragments}
        self.published = {e: f.name for f in fragments for e in f.published}

    def edges(self) -> Iterable[Edge]:
        s = self.schedule
        yield from self._phase(s.step, outside=())
        yield from self._phase(s.learn, outside=(TRAJECTORY, ENV_STEPS))
        if s.sample is not None:
            frag, method = s.sample
            yield from self._method(frag, method, ())
            yield from self._phase(s.update, outside=(), first={BATCH: f"{s.sample[0]}.{BATCH}"})
            if s.feedback is not None:
                writer = next(n for n in reversed(s.update) if TD_ERROR in self._outputs(n))
                yield from self._method(
                    *s.feedback, {TD_ERROR: writer, BATCH: f"{s.sample[0]}.{BATCH}"}
                )

    def _outputs(self, name: str) -> tuple[str, ...]:
        return self.by_name[name].outputs

    def _phase(self, order, outside, first=None) -> Iterable[Edge]:
        written: dict[str, str] = {}
        for name in order:
            frag = self.by_name[name]
            for edge in frag.inputs:
                yield self._edge(name, edge, written, outside, first or {})
            written.update({e: name for e in frag.outputs})

    def _method(self, name: str, method: str, writers: Mapping[str, str]) -> Iterable[Edge]:
        for edge in self.by_name[name].method(method).inputs:
            target = f"{name}.{method}:{edge}"
            if edge in writers:
                kind = "priorities" if edge == TD_ERROR else "sample"
                source = writers[edge] if "." in writers[edge] else f"{writers[edge]}.{edge}"
                yield Edge(source, target, kind)
            else:
                yield self._edge(name, edge, {}, (ENV_STEPS,), {})._replace(target=target)

    def _edge(self, name, edge, written, outside, first) -> Edge:
        target = f"{name}.{edge}"
        if edge in written:
            return Edge(f"{written[edge]}.{edge}", target, "learn" if outside else "step")
        if edge in first:
            return Edge(first[edge], target, "sample")
        if edge in outside:
            source = "rollout" if edge == TRAJECTORY else "loop"
            return Edge(f"{source}.{edge}", target, source)
        if edge in self.published:
            return Edge(f"{self.published[edge]}.{edge}", target, "state")
        available = sorted(
            {*self.published, TRAJECTORY, ENV_STEPS, BATCH}
            | {e for f in self.fragments for e in f.outputs}
        )
        raise ValueError(
            f"input edge {edge!r} of fragment {name!r} has no producer; "
            f"edges available: {', '.join(available)}"
        )

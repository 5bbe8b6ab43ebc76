"""The schedule tree that :meth:`Graph.build <jaxrl_fdg.core.graph.Graph.build>` produces and
the loop interprets: one iteration is the :class:`Rollout` (the step body at every env step),
then the nodes after it (:class:`Node`), each a sequence of calls (:class:`Call`) of one
cadence."""

from __future__ import annotations

from typing import NamedTuple

from jaxrl_fdg.core.cadence import Cadence


class Call(NamedTuple):
    """One call of a fragment's entry point: ``method`` is ``"apply"`` or a method's name."""

    fragment: str
    method: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    index: int  # declaration order: fragments in order, each one's apply before its methods

    @property
    def label(self) -> str:
        return self.fragment if self.method == "apply" else f"{self.fragment}.{self.method}"


class Rollout(NamedTuple):
    """The step phase: ``calls`` in order at each of ``length`` env steps (a ``lax.scan``)."""

    length: int
    calls: tuple[Call, ...]


class Node(NamedTuple):
    """A node after the rollout: ``calls`` in order, as often as ``cadence`` says; ``owner`` is
    the label of the call that declared the cadence (the first call's where none did)."""

    cadence: Cadence
    calls: tuple[Call, ...]
    owner: str = ""

    @property
    def fragments(self) -> tuple[str, ...]:
        """The fragments called here, each once, in call order."""
        return tuple(dict.fromkeys(c.fragment for c in self.calls))


class Schedule(NamedTuple):
    """One iteration: the rollout, then the nodes after it, in order."""

    rollout: Rollout
    after: tuple[Node, ...]

    @property
    def step(self) -> tuple[str, ...]:
        """The labels of the rollout's calls, in order."""
        return tuple(c.label for c in self.rollout.calls)

    def lines(self) -> list[str]:
        """The tree, one line per node and call."""
        out = ["iteration", f"├─ rollout × {self.rollout.length} steps"]
        out += _branch("│  ", [c.label for c in self.rollout.calls])
        out.append("└─ after the rollout")
        for i, node in enumerate(self.after):
            last = i == len(self.after) - 1
            out.append(f"   {'└─' if last else '├─'} {node.cadence}")
            out += _branch("   " + ("   " if last else "│  "), [c.label for c in node.calls])
        return out


def _branch(indent: str, labels: list[str]) -> list[str]:
    return [f"{indent}{'└─' if i == len(labels) - 1 else '├─'} {x}" for i, x in enumerate(labels)]

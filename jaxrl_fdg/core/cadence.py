"""How often a fragment's entry point runs: its *cadence*.

A fragment (or one of its methods) declares a cadence; :meth:`Graph.build
<jaxrl_fdg.core.graph.Graph.build>` gathers the calls of one cadence into one node of the
schedule tree, which the loop interprets:

=================== ============================================================================
``STEP``            at every env step, inside the rollout (env, actor, observation transforms)
``ITERATION``       once per iteration, after the rollout (on-policy learners, a replay's store)
``every(n, when)``  once every ``n`` iterations, after the rollout, at the end of iterations
                    ``n, 2n, 3n, ...`` where ``when`` holds (an auxiliary phase, a target sync,
                    in-graph evaluation)
``rounds(k, when)`` ``k`` rounds per iteration, after the rollout, while ``when`` holds (an
                    off-policy learner's updates: sample, learn, new priorities)
=================== ============================================================================

A fragment that declares none gets one from its role and its edges (see
:func:`jaxrl_fdg.core.graph.Graph.build`). Cadences are values: two fragments that declare equal
cadences (``every(4)`` and ``every(4)``, or the same ``rounds`` object) share one node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import jax

from jaxrl_fdg.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Step:
    """At every env step, inside the rollout's ``lax.scan``."""

    def __str__(self) -> str:
        return "every step"


@dataclasses.dataclass(frozen=True)
class Iteration:
    """Once per iteration, after the rollout."""

    def __str__(self) -> str:
        return "every iteration"


@dataclasses.dataclass(frozen=True)
class Condition:
    """A predicate over edges: ``fn(edges) -> bool scalar``, where ``edges`` holds the edges
    named in ``reads`` (loop edges such as ``env_steps``, and edges fragments publish, as they
    are when the node is reached). ``label`` names it in ``jaxrl-fdg graph``."""

    fn: Callable[[Mapping[str, Any]], jax.Array]
    reads: tuple[str, ...]
    label: str = ""

    def __str__(self) -> str:
        return self.label or f"a condition on {', '.join(self.reads)}"


@dataclasses.dataclass(frozen=True)
class Every:
    """Once every ``n`` iterations, at the end of iterations ``n, 2n, ...`` (counted from 1),
    where ``when`` holds (always, if ``None``).

    Inside a compiled program the node is a ``lax.cond`` on the iteration counter (and the
    condition), so it costs nothing on the other iterations and every fusion mode runs it at the
    same iterations. An iteration where it is due but ``when`` does not hold is one where it does
    not run: its metrics say so (``<fragment>/runs`` is 0) and leave it out of their means."""

    n: int
    when: Condition | None = None

    def __str__(self) -> str:
        times = f"every {self.n} iteration{'s' if self.n != 1 else ''}"
        return times if self.when is None else f"{times}, when {self.when}"


@dataclasses.dataclass(frozen=True)
class Rounds:
    """``count`` rounds per iteration, each one call of the node's fragments in order, while
    ``when`` holds (always, if ``None``); skipped whole otherwise.

    An off-policy learner's updates are rounds: the replay's ``sample`` method writes the
    ``batch`` the learner reads, and the replay's ``update`` method reads the learner's
    ``td_error``; both join the learner's node by those edges."""

    count: int
    when: Condition | None = None

    def __str__(self) -> str:
        times = f"{self.count} round{'s' if self.count != 1 else ''} per iteration"
        return times if self.when is None else f"{times}, when {self.when}"


Cadence = Step | Iteration | Every | Rounds

STEP = Step()
ITERATION = Iteration()


def every(n: int, when: Condition | None = None) -> Every:
    """Once every ``n`` iterations (``n`` a positive integer), where ``when`` holds."""
    _positive("every", n)
    _condition("every", when)
    return Every(n, when)


def rounds(count: int, when: Condition | None = None) -> Rounds:
    """``count`` rounds per iteration while ``when`` holds."""
    _positive("rounds", count)
    _condition("rounds", when)
    return Rounds(count, when)


def gate(cadence: Cadence) -> Condition | None:
    """The condition a cadence's node runs under, if it has one."""
    return cadence.when if isinstance(cadence, Every | Rounds) else None


def _condition(name: str, when: Any) -> None:
    if when is not None and not isinstance(when, Condition):
        raise ConfigError(f"{name}(when=...) takes a Condition (see condition()), got {when!r}")


def condition(
    fn: Callable[[Mapping[str, Any]], jax.Array], reads: tuple[str, ...], label: str = ""
) -> Condition:
    """A :class:`Condition` that reads the edges ``reads``."""
    if not reads or not all(isinstance(name, str) and name for name in reads):
        raise ConfigError(f"a condition reads at least one named edge, got reads={reads!r}")
    return Condition(fn, tuple(reads), label)


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name}() takes a positive integer, got {value!r}")


__all__ = [
    "ITERATION",
    "STEP",
    "Cadence",
    "Condition",
    "Every",
    "Iteration",
    "Rounds",
    "Step",
    "condition",
    "every",
    "gate",
    "rounds",
]

"""A compiled program's operations by class, and how many of each one run of it executes.

Each instruction of an optimised HLO module falls in one class of :data:`CLASSES`, read from its
opcode, the opcodes inside it (a ``fusion`` calls a computation) and its ``op_name`` (JAX's random
bits are plain integer arithmetic, known by the names they were traced under):

- ``matmul``: ``dot`` and ``convolution``, and fusions holding one (XLA:CPU's library fusions);
- ``rng``: operations traced under ``random_bits`` or ``threefry`` (key splits, uniform draws);
- ``reduce/sort``: ``reduce``, ``reduce-window``, ``sort``, and fusions holding one;
- ``buffer read/write``: ``dynamic-slice``, ``dynamic-update-slice``, ``gather``, ``scatter``,
  and fusions holding one (trajectory and replay writes, minibatch reads);
- ``copy/layout``: ``copy``, ``transpose``, ``concatenate``, ``slice``, ``pad`` and fusions of
  nothing else (among them the copies of a loop's carry XLA inserts);
- ``elementwise``: every other fusion and arithmetic operation;
- ``other``: custom calls and what is left.

Control flow (``while``, ``conditional``, ``call``) runs the operations of other computations and
is no class of its own; instructions that emit no work (``parameter``, ``constant``,
``get-tuple-element``, ``tuple``, ``bitcast``) are not operations. :func:`executed` counts the
operations one run executes: a loop body times its known trip count, the larger branch of a
conditional (a learner under ``lax.cond`` counts as running). A loop whose trip count is known only
at run time (the ``scan`` plan's loop over iterations) counts once, as :mod:`.cost` does, so the
``scan`` program's count is one iteration's.
"""

from __future__ import annotations

import re
from collections import Counter

CLASSES = (
    "matmul",
    "elementwise",
    "reduce/sort",
    "buffer read/write",
    "copy/layout",
    "rng",
    "other",
)
CONTROL_FLOW = frozenset({"while", "conditional", "call", "async-start", "async-done"})
FREE = frozenset(
    {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "opt-barrier"}
)
_MATMUL = {"dot", "convolution"}
_REDUCE = {"reduce", "reduce-window", "sort", "reduce-precision", "select-and-scatter"}
_BUFFER = {"dynamic-slice", "dynamic-update-slice", "gather", "scatter"}
_LAYOUT = {"copy", "transpose", "concatenate", "slice", "pad", "reverse", "broadcast", "reshape"}
_RNG_NAMES = ("random_bits", "threefry", "rng_bit_generator")

_HEADER = re.compile(r"^(?P<entry>ENTRY\s+)?%?(?P<name>[\w.\-]+)\s*\(.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%(?P<name>[^\s=]+)\s*=\s*(?P<rest>.*)$")
_OP_NAME = re.compile(r'op_name="(?P<op_name>[^"]*)"')
_CALLS = re.compile(r"\bcalls=%?(?P<callee>[\w.\-]+)")
_WHILE = re.compile(r"\swhile\(.*?condition=%?(?P<cond>[\w.\-]+), body=%?(?P<body>[\w.\-]+)")
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(?P<n>\d+)"\}')
_CONDITIONAL = re.compile(r"\sconditional\(")
_BRANCHES = re.compile(r"branch_computations=\{(?P<names>[^}]*)\}")
_TRUE_FALSE = re.compile(r"(?:true|false)_computation=%?([\w.\-]+)")
_TO_APPLY = re.compile(r"\bto_apply=%?(?P<callee>[\w.\-]+)")


def opcode(rest: str) -> str:
    """The opcode of ``<shape> <opcode>(operands), attrs``; tuple shapes contain parentheses."""
    if rest.startswith("("):
        depth, end = 0, len(rest)
        for position, ch in enumerate(rest):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                end = position + 1
                break
    else:
        end = rest.find(" ")
    return rest[end:].lstrip().split("(", 1)[0].strip()


class Program:
    """An optimised HLO module's text read into computations of ``(name, opcode, rest)``."""

    def __init__(self, hlo_text: str):
        self.computations: dict[str, list[tuple[str, str, str]]] = {}
        self.entry = ""
        current: list[tuple[str, str, str]] | None = None
        for line in hlo_text.splitlines():
            header = _HEADER.match(line)
            if header:
                current = self.computations.setdefault(header["name"], [])
                self.entry = header["name"] if header["entry"] else self.entry
                continue
            match = _INSTRUCTION.match(line)
            if match and current is not None:
                current.append((match["name"], opcode(match["rest"]), match["rest"]))

    def op_class(self, op: str, rest: str) -> str | None:
        """The class of an instruction (``None`` for control flow and instructions that are no
        operation)."""
        if op in CONTROL_FLOW or op in FREE:
            return None
        if any(part in op_name(rest) for part in _RNG_NAMES):
            return "rng"
        inner = {op}
        if op == "fusion":
            callee = _CALLS.search(rest)
            inner = self._opcodes(callee["callee"]) if callee else set()
        inner -= FREE
        if inner & _MATMUL:
            return "matmul"
        if inner & _REDUCE:
            return "reduce/sort"
        if inner & _BUFFER:
            return "buffer read/write"
        if inner and inner <= _LAYOUT:
            return "copy/layout"
        if op == "custom-call":
            return "other"
        return "elementwise"

    def _opcodes(self, computation: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found = set()
        for _, op, rest in self.computations.get(computation, ()):
            found.add(op)
            callee = _CALLS.search(rest) if op == "fusion" else None
            if callee and callee["callee"] not in seen:
                found |= self._opcodes(callee["callee"], seen | {computation})
        return found

    def executed(self, computation: str | None = None) -> Counter:
        """Operations by class that one run of ``computation`` (default: the entry) executes
        (see the module docstring)."""
        return self._executed(computation or self.entry, frozenset())

    def _executed(self, computation: str, seen: frozenset[str]) -> Counter:
        if computation in seen:  # not in valid HLO; a guard against a text read wrongly
            return Counter()
        seen = seen | {computation}
        counts: Counter = Counter()
        for _, op, rest in self.computations.get(computation, ()):
            if op == "while":
                loop = while_loop(rest)
                if loop:
                    body, cond, n = loop
                    for part in (body, cond):
                        for key, value in self._executed(part, seen).items():
                            counts[key] += n * value
            elif op == "conditional":
                runs = [self._executed(b, seen) for b in branches(rest)]
                if runs:
                    counts.update(max(runs, key=lambda c: sum(c.values())))
            elif op == "call":
                callee = _TO_APPLY.search(rest)
                if callee:
                    counts.update(self._executed(callee["callee"], seen))
            else:
                kind = self.op_class(op, rest)
                if kind is not None:
                    counts[kind] += 1
        return counts


def op_name(rest: str) -> str:
    """The ``op_name`` metadata of an instruction (``""`` without one)."""
    found = _OP_NAME.search(rest)
    return found["op_name"] if found else ""


def while_loop(rest: str) -> tuple[str, str, int] | None:
    """``(body, condition, trip count)`` of a ``while`` instruction, the count 1 where XLA does
    not know it; ``None`` for any other instruction."""
    loop = _WHILE.search(rest)
    if loop is None:
        return None
    trips = _TRIPS.search(rest)
    return loop["body"], loop["cond"], int(trips["n"]) if trips else 1


def branches(rest: str) -> list[str]:
    """The branch computations of a ``conditional`` instruction."""
    if not _CONDITIONAL.search(rest):
        return []
    listed = _BRANCHES.search(rest)
    if listed:
        return [name.strip().lstrip("%") for name in listed["names"].split(",") if name.strip()]
    return _TRUE_FALSE.findall(rest)


def executed(hlo_text: str) -> Counter:
    """Operations by class one run of the program ``hlo_text`` executes (see
    :meth:`Program.executed`)."""
    return Program(hlo_text).executed()


__all__ = [
    "CLASSES",
    "CONTROL_FLOW",
    "FREE",
    "Program",
    "branches",
    "executed",
    "op_name",
    "opcode",
    "while_loop",
]

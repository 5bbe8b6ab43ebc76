"""Device time inside compiled programs, attributed to named scopes through a profiler trace.

A ``jax.profiler`` trace on CPU holds one event per executed HLO instruction (``hlo_module``,
``hlo_op``). The compiled program's text maps each instruction to its ``op_name`` metadata, which
keeps the ``jax.named_scope`` path it was traced under (``.../while/body/learner/...``). Matching
the two splits a fused program's device time by fragment: the innermost known scope on an op's
path gets its time (exclusive), every known scope on the path counts it (inclusive), and ops under
no known scope are the loop's own glue.

Control-flow instructions (``while``, ``conditional``, ``call``) span the ops they run; they are
left out so nothing is counted twice.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax

from jaxrl_fdg.profiling import ops

_WRAPPED = re.compile(r"^(?:[\w.-]+\()+([^()]*)\)+$")

# Device time under no known scope: while-loop control and the carry copies XLA inserts, key
# splits, trajectory and metric buffers. Measured on PPO/CartPole it is mostly `copy` ops.
LOOP = "loop"
_MODULE = re.compile(r"^HloModule\s+(?P<module>[^\s,]+)", re.MULTILINE)


@dataclass(frozen=True)
class Instruction:
    opcode: str
    op_name: str
    op_class: str | None = None  # :data:`ops.CLASSES`; None for control flow and non-operations


def module_name(hlo_text: str) -> str:
    """The module name of a compiled program's text (its ``HloModule`` header)."""
    module = _MODULE.search(hlo_text)
    if module is None:
        raise ValueError("not the text of a compiled HLO module (no 'HloModule' header)")
    return module["module"]


def index_program(hlo_text: str) -> tuple[str, dict[str, Instruction]]:
    """``(module name, {instruction name: Instruction})`` from a compiled program's text."""
    module = module_name(hlo_text)
    program = ops.Program(hlo_text)
    instructions = {}
    for computation in program.computations.values():
        for name, opcode, rest in computation:
            op_class = program.op_class(opcode, rest)
            instructions[name] = Instruction(opcode, ops.op_name(rest), op_class)
    return module, instructions


@dataclass
class Attribution:
    """Device seconds per scope over a trace window.

    Attributes:
      exclusive: ``{scope: s}``; every op counted once, under its innermost known scope or
        :data:`LOOP`.
      inclusive: ``{scope: s}``; an op counts for every known scope on its path.
      busy_s: the union of device op intervals (time the device was doing anything).
      window_s: the traced window's length.
      ops: number of op events attributed.
      modules: ``{hlo module: s}``; device seconds of each compiled program's operations.
      annotations: ``{name: n}``; host events (the timing layer's scopes among them) by name,
        so ``annotations["scan"]`` is how many times the ``scan`` program was called in the
        window.
      classes: ``{op class: s}`` (:data:`ops.CLASSES`), each event less the profiler's own cost
        per event (``tracer_s`` of :func:`attribute`).
      class_ops: ``{op class: n}``, operations executed in the window.
      module_ops: ``{hlo module: n}``, operations each compiled program executed in the window.
    """

    exclusive: dict[str, float] = field(default_factory=dict)
    inclusive: dict[str, float] = field(default_factory=dict)
    busy_s: float = 0.0
    window_s: float = 0.0
    ops: int = 0
    modules: dict[str, float] = field(default_factory=dict)
    annotations: dict[str, int] = field(default_factory=dict)
    classes: dict[str, float] = field(default_factory=dict)
    class_ops: dict[str, int] = field(default_factory=dict)
    module_ops: dict[str, int] = field(default_factory=dict)

    @property
    def device_busy(self) -> float:
        return self.busy_s / self.window_s if self.window_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "device_exclusive_s": self.exclusive,
            "device_inclusive_s": self.inclusive,
            "device_busy_s": self.busy_s,
            "window_s": self.window_s,
            "device_busy": self.device_busy,
            "ops": self.ops,
            "device_by_module_s": self.modules,
            "device_by_op_class_s": self.classes,
            "ops_by_class": self.class_ops,
        }


def attribute(
    events: Iterable[Mapping[str, Any]],
    programs: Iterable[str],
    scopes: Iterable[str],
    tracer_s: float = 0.0,
) -> tuple[Attribution, list[dict[str, Any]]]:
    """Split device op time among ``scopes``, and among operation classes.

    Args:
      events: Chrome-trace events (``ph == "X"``, microsecond ``ts``/``dur``).
      programs: compiled programs' HLO text (``Compiled.as_text()``).
      scopes: the scope names to attribute to (fragment names and user scopes).
      tracer_s: what tracing adds to each operation's event (:mod:`.overheads`), taken off each
        event's time in :attr:`Attribution.classes`.
    Returns:
      The attribution, and the events with a ``scope`` added to each attributed op's ``args``.
    """
    index = {}
    for text in programs:
        module, instructions = index_program(text)
        index[module] = instructions
    known = set(scopes)
    result = Attribution()
    intervals = []
    annotated = []
    first, last = float("inf"), float("-inf")
    for event in events:
        event = dict(event)
        annotated.append(event)
        if event.get("ph") != "X":
            continue
        first = min(first, event["ts"])
        last = max(last, event["ts"] + event.get("dur", 0.0))
        args = event.get("args") or {}
        if "hlo_op" not in args:
            name = event.get("name", "")
            result.annotations[name] = result.annotations.get(name, 0) + 1
        instruction = index.get(args.get("hlo_module"), {}).get(args.get("hlo_op"))
        if instruction is None or instruction.opcode in ops.CONTROL_FLOW:
            continue
        seconds = event.get("dur", 0.0) * 1e-6
        module = args["hlo_module"]
        result.modules[module] = result.modules.get(module, 0.0) + seconds
        kind = instruction.op_class
        if kind is not None:
            result.classes[kind] = result.classes.get(kind, 0.0) + max(seconds - tracer_s, 0.0)
            result.class_ops[kind] = result.class_ops.get(kind, 0) + 1
            result.module_ops[module] = result.module_ops.get(module, 0) + 1
        path = [name for name in _scope_names(instruction.op_name) if name in known]
        innermost = path[-1] if path else LOOP
        result.exclusive[innermost] = result.exclusive.get(innermost, 0.0) + seconds
        for name in set(path) or {LOOP}:
            result.inclusive[name] = result.inclusive.get(name, 0.0) + seconds
        result.ops += 1
        intervals.append((event["ts"], event["ts"] + event.get("dur", 0.0)))
        event["args"] = {**args, "scope": innermost}
    result.busy_s = _union(intervals) * 1e-6
    result.window_s = max(0.0, last - first) * 1e-6
    return result, annotated


def _scope_names(op_name: str) -> list[str]:
    """The scope names on an op's path, outermost first. A transformation wraps the names traced
    under it: the backward pass of scope ``learner`` is ``transpose(learner)``, its forward under
    ``jax.grad`` ``jvp(learner)``; both count as ``learner``."""
    return [_WRAPPED.sub(r"\1", part) for part in op_name.split("/")]


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for lo, hi in sorted(intervals):
        if hi <= end:
            continue
        total += hi - max(lo, end)
        end = hi
    return total


@contextlib.contextmanager
def capture() -> Iterator[list[dict[str, Any]]]:
    """Profile the block; afterwards the yielded list holds the trace's Chrome-format events."""
    events: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="jaxrl-fdg-trace-") as tmp:
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0  # Python-level tracing would dominate the window
        options.host_tracer_level = 2
        with jax.profiler.trace(tmp, create_perfetto_trace=True, profiler_options=options):
            yield events
        files = glob.glob(os.path.join(tmp, "**", "perfetto_trace.json.gz"), recursive=True)
        if not files:
            raise RuntimeError("jax.profiler wrote no perfetto trace")
        with gzip.open(files[0], "rt") as f:
            data = json.load(f)
        events.extend(data["traceEvents"] if isinstance(data, dict) else data)


def write_trace(path: str | os.PathLike, events: list[dict[str, Any]]) -> None:
    """Write events as a gzipped Chrome/Perfetto trace (opens in ui.perfetto.dev)."""
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)

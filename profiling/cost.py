"""What a compiled program costs, by XLA's own count: floating-point operations and bytes accessed.

``Compiled.cost_analysis()`` runs XLA's ``HloCostAnalysis`` over the optimised program. Two things
make its raw answer unfit to read as is:

- Its shape changed across JAX releases: a dict, a list of one dict per module, or ``None`` where
  a backend has no cost model. :func:`cost_analysis` reads every form.
- It costs the body of a ``while`` loop once, whatever the trip count, because it cannot know the
  count in general. A ``lax.scan`` over 128 environment steps is then charged for one step. XLA's
  optimised program does know many counts (``known_trip_count`` in the loop's backend config), so
  :func:`program_cost` re-costs each loop body as a program of its own and adds it
  ``trip count - 1`` more times, from the innermost loop out. A loop whose count is known only at
  run time (the ``scan`` plan's chunk length) stays counted once: that program's cost is then one
  pass of its loop body, which for the ``scan`` plan is one iteration.

XLA costs a ``conditional`` as its costliest branch. Loops inside branches are re-costed as loops
reached through a ``call`` are: a learner's loop of gradient steps under ``lax.cond`` (an
off-policy learner waiting for ``learning_starts``) counts as running, the run's steady state.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

from jaxrl_fdg.profiling import ops

FLOPS = "flops"
BYTES = "bytes accessed"


class Cost(NamedTuple):
    """One execution of a program, by XLA's cost model.

    Attributes:
      flops: floating-point operations (a multiply-add counts two).
      bytes: bytes read and written by the program's operations (XLA's ``bytes accessed``: each
        top-level operation's operands and result; a fusion's intermediates stay in registers).
      loops: ``"trip counts"`` when loop bodies were multiplied by their known trip counts,
        ``"once"`` when every loop body is counted once (XLA's raw answer, kept where the
        program text could not be re-costed), ``"none"`` when the program has no loop.
    """

    flops: float
    bytes: float
    loops: str = "none"

    def scaled(self, factor: float) -> Cost:
        return Cost(self.flops * factor, self.bytes * factor, self.loops)


def cost_analysis(compiled: Any) -> dict[str, float] | None:
    """``compiled.cost_analysis()`` as one dict of floats (summed over modules where a list is
    returned), or ``None`` where the backend gives none or it fails."""
    try:
        raw = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - a backend without a cost model raises its own errors
        return None
    return _merged(raw)


def _merged(raw: Any) -> dict[str, float] | None:
    if raw is None:
        return None
    parts = raw if isinstance(raw, list | tuple) else [raw]
    merged: dict[str, float] = {}
    for part in parts:
        if not part:
            continue
        for key, value in dict(part).items():
            if isinstance(value, int | float):
                merged[key] = merged.get(key, 0.0) + float(value)
    return merged if FLOPS in merged or BYTES in merged else None


def program_cost(compiled: Any) -> Cost | None:
    """One execution of ``compiled``, loop bodies multiplied by their known trip counts where the
    program's text can be re-costed (see the module docstring); ``None`` where the backend gives
    no cost analysis."""
    raw = cost_analysis(compiled)
    if raw is None:
        return None
    cost = Cost(raw.get(FLOPS, 0.0), raw.get(BYTES, 0.0))
    try:
        text = compiled.as_text()
    except Exception:  # noqa: BLE001
        return cost._replace(loops="once")
    module = _Module.parse(text)
    if not module.loops:
        return cost
    if _backend_multiplies_trip_counts():
        return cost._replace(loops="trip counts")
    try:
        flops, bytes_ = module.total(module.entry, cost.flops, cost.bytes)
    except Exception:  # noqa: BLE001 - private XLA bindings changed: keep XLA's own answer
        return cost._replace(loops="once")
    return Cost(flops, bytes_, "trip counts")


# -- the program's text --------------------------------------------------------------------------

_HEADER = re.compile(r"^(?P<entry>ENTRY\s+)?%?(?P<name>[\w.\-]+)\s*\(", re.MULTILINE)
_CALL = re.compile(r"\scall\(.*?to_apply=%?(?P<callee>[\w.\-]+)")
_NAME = re.compile(r"%([\w.\-]+)")
_FRAME = re.compile(r"\s*stack_frame_id=\d+")


class _Loop(NamedTuple):
    body: str
    cond: str
    trips: int  # 1 where the count is known only at run time


class _Module:
    """An HLO module's text cut into computations, with the loops each one runs."""

    def __init__(self, header: str, blocks: dict[str, str], entry: str):
        self.header, self.blocks, self.entry = header, blocks, entry
        self.loops = {name: _loops(block) for name, block in blocks.items()}
        self.loops = {name: loops for name, loops in self.loops.items() if loops}
        self.calls = {
            name: _CALL.findall(block) + _branches(block) for name, block in blocks.items()
        }

    @classmethod
    def parse(cls, text: str) -> _Module:
        lines = text.splitlines()
        header = lines[0] if lines else ""
        blocks: dict[str, str] = {}
        entry, current, body = "", None, []
        for line in lines[1:]:
            match = _HEADER.match(line) if current is None else None
            if match and line.rstrip().endswith("{"):
                current, body = match["name"], [line]
                entry = current if match["entry"] else entry
            elif current is not None:
                body.append(line)
                if line.startswith("}"):
                    blocks[current], current = "\n".join(body), None
        return cls(header, blocks, entry)

    def total(self, name: str, flops: float, bytes_: float) -> tuple[float, float]:
        """Computation ``name``'s flops and bytes with every known trip count applied, from its
        cost with each loop body counted once (``flops``, ``bytes_``)."""
        for loop in self._reachable_loops(name):
            if loop.trips <= 1:
                once = _costed(self.text(loop.body))
                total = self.total(loop.body, *once)
                flops += total[0] - once[0]
                bytes_ += total[1] - once[1]
                continue
            for part in (loop.body, loop.cond):
                once = _costed(self.text(part))
                total = self.total(part, *once)
                flops += loop.trips * total[0] - once[0]
                bytes_ += loop.trips * total[1] - once[1]
        return flops, bytes_

    def _reachable_loops(self, name: str) -> list[_Loop]:
        """Loops run by ``name`` itself or by computations it calls (``call`` and ``conditional``
        branches, not loops)."""
        found, seen, todo = [], set(), [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            found.extend(self.loops.get(current, ()))
            todo.extend(self.calls.get(current, ()))
        return found

    def text(self, entry: str) -> str:
        """A module whose entry is computation ``entry``, holding what it reaches."""
        keep, todo = [], [entry]
        while todo:
            name = todo.pop()
            if name in keep or name not in self.blocks:
                continue
            keep.append(name)
            todo.extend(n for n in _NAME.findall(self.blocks[name]) if n in self.blocks)
        header = re.sub(r",\s*(entry_computation_layout|is_scheduled)=(\{.*?\}->\S+|\w+)", "",
                        self.header)  # fmt: skip
        parts = []
        for name in reversed(keep):  # callees before callers, as XLA prints them
            block = re.sub(r"^ENTRY\s+", "", self.blocks[name])
            block = _FRAME.sub("", block)  # the stack frame table is not copied
            parts.append(("ENTRY " if name == entry else "") + block)
        return "\n\n".join([header, *parts]) + "\n"


def _branches(block: str) -> list[str]:
    """The branch computations of every ``conditional`` in ``block``."""
    return [name for line in block.splitlines() for name in ops.branches(line)]


def _loops(block: str) -> list[_Loop]:
    return [_Loop(*loop) for line in block.splitlines() if (loop := ops.while_loop(line))]


def _costed(text: str) -> tuple[float, float]:
    """XLA's cost of the module ``text`` (loops counted once), on the default backend."""
    import jax

    parse = _binding("hlo_module_from_text")
    analysis = _binding("hlo_module_cost_analysis")
    raw = _merged(analysis(jax.devices()[0].client, parse(text))) or {}
    return raw.get(FLOPS, 0.0), raw.get(BYTES, 0.0)


def _binding(name: str) -> Any:
    """A function of jaxlib's private bindings, wherever this release keeps it (it moved between
    releases); ``AttributeError`` where none has it, and :func:`program_cost` falls back."""
    from jax._src import lib

    places = (getattr(lib, "hlo", None), getattr(lib, "_jax", None), getattr(lib, "_xla", None))
    for place in (*places, getattr(lib.xla_client, "_xla", None), lib.xla_client):
        if hasattr(place, name):
            return getattr(place, name)
    raise AttributeError(f"no jaxlib binding {name!r}")


@functools.cache
def _backend_multiplies_trip_counts() -> bool:
    """Whether this XLA's cost analysis already multiplies loop bodies by their trip counts
    (then nothing is to be corrected): a loop of 8 matmuls, each needing the last, costed."""
    import jax
    import jax.numpy as jnp

    def eight(x):
        return jax.lax.fori_loop(0, 8, lambda _, y: jnp.tanh(y @ y), x)

    one = jax.jit(lambda x: jnp.tanh(x @ x)).lower(jnp.ones((32, 32))).compile()
    loop = jax.jit(eight).lower(jnp.ones((32, 32))).compile()
    once, looped = (cost_analysis(c) or {} for c in (one, loop))
    return looped.get(FLOPS, 0.0) > 4 * once.get(FLOPS, 1.0)


__all__ = ["Cost", "cost_analysis", "program_cost"]

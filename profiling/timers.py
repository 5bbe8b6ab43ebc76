"""Host-side timers: named scopes, and JAX compile events charged to the open scope.

A :class:`Timings` records, per scope name, the number of calls, the wall time spent inside the
scope and the compile time JAX reported while the scope was open (JAX's ``jax.monitoring``
duration events fire on the calling thread, so they can be charged to whichever scope that thread
has open). Scopes nest; wall time is inclusive.

Reading a clock around an asynchronously dispatched JAX call measures *host* time only (Python and
dispatch). Device time is what the host then spends waiting in ``block_until_ready``; the runner
opens a ``wait`` scope around that call so the two are reported apart.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import jax

# JAX's compile pipeline: tracing to a jaxpr, lowering to StableHLO, XLA backend compile.
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class ScopeStats:
    calls: int = 0
    wall: float = 0.0  # seconds, inclusive of nested scopes
    compile: float = 0.0  # seconds JAX spent tracing, lowering and compiling inside the scope
    compiles: int = 0  # XLA backend compilations inside the scope


class Timings:
    """Per-scope call counts, wall time and compile time for one run."""

    def __init__(self) -> None:
        self.scopes: dict[str, ScopeStats] = {}
        self._stack: list[str] = []

    @contextlib.contextmanager
    def scope(self, name: str) -> Iterator[None]:
        stats = self.scopes.setdefault(name, ScopeStats())
        self._stack.append(name)
        _ACTIVE.stack.append(self)
        start = time.perf_counter()
        try:
            yield
        finally:
            stats.wall += time.perf_counter() - start
            stats.calls += 1
            _ACTIVE.stack.pop()
            self._stack.pop()

    def _charge_compile(self, event: str, seconds: float) -> None:
        if not self._stack:
            return
        stats = self.scopes[self._stack[-1]]
        stats.compile += seconds
        stats.compiles += event == BACKEND_COMPILE

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            name: {
                "calls": s.calls,
                "wall_s": s.wall,
                "compile_s": s.compile,
                "compiles": s.compiles,
            }
            for name, s in self.scopes.items()
        }


class _Active(threading.local):
    def __init__(self) -> None:
        self.stack: list[Timings] = []


_ACTIVE = _Active()
_COMPILE_COUNT = {"count": 0}
_LISTENING = False


def _on_duration(event: str, duration: float, **_: object) -> None:
    if event not in COMPILE_EVENTS:
        return
    if event == BACKEND_COMPILE:
        _COMPILE_COUNT["count"] += 1
    if _ACTIVE.stack:
        _ACTIVE.stack[-1]._charge_compile(event, duration)


def install_compile_listener() -> None:
    """Register the (process-wide, idempotent) listener for JAX compile events."""
    global _LISTENING
    if not _LISTENING:
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        _LISTENING = True


def compile_count() -> int:
    """XLA backend compilations seen in this process since the listener was installed."""
    install_compile_listener()
    return _COMPILE_COUNT["count"]


install_compile_listener()

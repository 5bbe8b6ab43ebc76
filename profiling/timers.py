"""Host-side timers: named, nestable scopes, and JAX compile events charged to the open scope.

A :class:`Timings` records, per scope name: calls, inclusive and exclusive wall time, the compile
time JAX reported while the scope was open (``jax.monitoring`` duration events fire on the calling
thread, so they can be charged to whichever scope that thread has open), the time the host spent
blocked on the device, and explicit transfers. Scopes nest; a child's time is inclusive in its
parent and excluded from the parent's ``exclusive``.

Reading a clock around an asynchronously dispatched JAX call measures *host* time only (Python and
dispatch). Device time is what the host then spends in ``block_until_ready``: :meth:`Timings.wait`
records it against the open scope.

Modes (see :data:`MODES`): ``off`` records nothing per call; ``host`` records host timers and
compile events without ever synchronising; ``sync`` additionally blocks on each program's outputs
when its scope closes, so a program's device time is measured exactly (and overlap is destroyed);
``trace`` is ``host`` plus a profiler window whose device ops are attributed to scopes later.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import jax

MODES = ("off", "host", "sync", "trace")

# JAX's compile pipeline: tracing to a jaxpr, lowering to StableHLO, XLA backend compile.
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
# Scope of the time a run waited for programs still compiling in the background (``Plan.start``):
# compile time, not run time.
COMPILE_WAIT = "compile-wait"


@dataclass
class ScopeStats:
    """Seconds, per scope. ``wall`` is inclusive of nested scopes; ``exclusive`` is not."""

    calls: int = 0
    wall: float = 0.0
    exclusive: float = 0.0
    compile: float = 0.0  # tracing, lowering and compiling inside the scope
    compiles: int = 0  # XLA backend compilations inside the scope
    wait: float = 0.0  # host blocked on the device inside the scope
    d2h: float = 0.0  # explicit device→host copies inside the scope
    h2d: float = 0.0  # explicit host→device copies inside the scope
    events: int = 0  # scope events nested inside (for overhead correction)
    children: dict[str, int] = field(default_factory=dict)

    @property
    def host(self) -> float:
        """Exclusive time in Python and dispatch: not compiling, waiting or copying."""
        return max(0.0, self.exclusive - self.compile - self.wait - self.d2h - self.h2d)

    def as_dict(self) -> dict[str, float]:
        return {
            "calls": self.calls,
            "wall_s": self.wall,
            "exclusive_s": self.exclusive,
            "host_s": self.host,
            "compile_s": self.compile,
            "compiles": self.compiles,
            "wait_s": self.wait,
            "d2h_s": self.d2h,
            "h2d_s": self.h2d,
        }


class Timings:
    """Per-scope statistics for one run, in one of :data:`MODES`."""

    def __init__(self, mode: str = "host"):
        if mode not in MODES:
            raise ValueError(f"unknown profile mode {mode!r} (valid: {', '.join(MODES)})")
        self.mode = mode
        self.scopes: dict[str, ScopeStats] = {}
        self._stack: list[_Scope] = []
        # True while a profiler window is open: scopes then also emit TraceAnnotations, so they
        # appear in the trace on the profiler's clock. Outside the window they would cost for
        # nothing.
        self.annotating = False

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @property
    def synchronous(self) -> bool:
        return self.mode == "sync"

    def scope(self, name: str, *, always: bool = False) -> _Scope | contextlib.nullcontext:
        """Time the block as scope ``name``. In ``off`` mode only ``always`` scopes are timed."""
        if not (self.enabled or always):
            return _NULL
        return _Scope(self, name)

    def record(self, name: str, seconds: float, *, within: str | None = None) -> None:
        """Charge ``seconds`` measured elsewhere (on another thread) to scope ``name``, as one
        call that is part of scope ``within`` (default: the open scope). Its time is not taken
        out of that scope's ``exclusive``: work on other threads overlaps it. Recorded in every
        mode."""
        stats = self.scopes.setdefault(name, ScopeStats())
        stats.calls += 1
        stats.wall += seconds
        stats.exclusive += seconds
        if within is not None:
            parent = self.scopes.setdefault(within, ScopeStats())
        elif self._stack:
            parent = self._stack[-1].stats
        else:
            return
        parent.children[name] = parent.children.get(name, 0) + 1

    def wait(self, tree: Any) -> Any:
        """``block_until_ready(tree)``, charged as device waiting to the open scope."""
        start = time.perf_counter()
        block_until_ready(tree)
        self._charge("wait", time.perf_counter() - start)
        return tree

    def device_get(self, tree: Any) -> Any:
        """Wait for ``tree`` (charged as waiting), then copy it to the host (charged as d2h)."""
        self.wait(tree)
        start = time.perf_counter()
        host = jax.device_get(tree)
        self._charge("d2h", time.perf_counter() - start)
        return host

    def _charge(self, kind: str, seconds: float) -> None:
        if self._stack:
            stats = self._stack[-1].stats
            setattr(stats, kind, getattr(stats, kind) + seconds)

    def _charge_compile(self, event: str, seconds: float) -> None:
        if not self._stack:
            return
        stats = self._stack[-1].stats
        stats.compile += seconds
        stats.compiles += event == BACKEND_COMPILE

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {name: s.as_dict() for name, s in self.scopes.items()}


# The longest pause between two looks at a result the main thread waits for (see below).
_POLL_MAX_S = 0.005


def block_until_ready(tree: Any) -> Any:
    """``jax.block_until_ready(tree)``, in a way that a signal can interrupt on the main thread.

    The main thread runs Python's signal handlers only between bytecodes, never inside a C call
    such as JAX's own blocking wait: a Ctrl-C during a long program would wait for all of it. So
    the main thread looks whether the result is ready, sleeping between looks (a sleep that a
    signal's handler interrupts, by raising) a tenth of the time waited so far and never more
    than :data:`_POLL_MAX_S`, which costs a wait of a second at most 5 ms. Errors of the
    computation (out of memory, say) are raised by the last, blocking call, as JAX raises them.
    (A helper thread blocked in JAX's wait instead would abort the process at exit if a signal
    ended the run while it waited.)"""
    if threading.current_thread() is threading.main_thread():
        # Typed PRNG keys have no is_ready: their computations make other leaves too.
        leaves = [x for x in jax.tree.leaves(tree) if hasattr(x, "is_ready")]
        start = time.perf_counter()
        for leaf in leaves:
            while not leaf.is_ready():
                time.sleep(min(_POLL_MAX_S, max(1e-5, 0.1 * (time.perf_counter() - start))))
    return jax.block_until_ready(tree)


class _Scope:
    """One open scope. A plain class: a generator-based context manager costs several times more,
    and step mode opens two scopes per environment step."""

    __slots__ = ("timings", "name", "stats", "start", "child_time", "child_events", "annotation")

    def __init__(self, timings: Timings, name: str):
        self.timings = timings
        self.name = name
        self.stats = timings.scopes.get(name)
        if self.stats is None:
            self.stats = timings.scopes[name] = ScopeStats()
        self.child_time = 0.0
        self.child_events = 0
        self.annotation = None

    def __enter__(self) -> _Scope:
        timings = self.timings
        timings._stack.append(self)
        _ACTIVE.stack.append(timings)
        if timings.annotating:
            self.annotation = jax.profiler.TraceAnnotation(self.name)
            self.annotation.__enter__()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self.start
        if self.annotation is not None:
            self.annotation.__exit__(*exc)
        timings = self.timings
        _ACTIVE.stack.pop()
        stack = timings._stack
        stack.pop()
        stats = self.stats
        stats.calls += 1
        stats.wall += elapsed
        stats.exclusive += elapsed - self.child_time
        stats.events += self.child_events
        if stack:
            parent = stack[-1]
            parent.child_time += elapsed
            parent.child_events += 1 + self.child_events
            children = parent.stats.children
            children[self.name] = children.get(self.name, 0) + 1


_NULL = contextlib.nullcontext()


# -- user scopes ----------------------------------------------------------------------------


def scope(name: str):
    """Time a block (``with scope("replay"):``) or a function (``@scope("replay")``) in the
    active run's timings. Outside a profiled run it does nothing.

    Inside a jitted function a host timer measures tracing, not execution; there the scope name
    still reaches the compiled program (through ``jax.named_scope``), where ``trace`` mode
    attributes device time to it.
    """
    return _UserScope(name)


_USER_SCOPES: set[str] = set()


def user_scope_names() -> set[str]:
    """Every name given to :func:`scope` in this process (trace attribution looks for them)."""
    return set(_USER_SCOPES)


class _UserScope(contextlib.ContextDecorator):
    def __init__(self, name: str):
        _USER_SCOPES.add(name)
        self.name = name
        self._stack: list[contextlib.ExitStack] = []

    def __enter__(self):
        stack = contextlib.ExitStack()
        stack.enter_context(jax.named_scope(self.name))
        if _ACTIVE.stack:
            stack.enter_context(_ACTIVE.stack[-1].scope(self.name))
        self._stack.append(stack)
        return self

    def __exit__(self, *exc):
        return self._stack.pop().__exit__(*exc)


# -- process-wide compile listener -----------------------------------------------------------


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


# -- calibration ------------------------------------------------------------------------------


@functools.cache
def scope_overhead(mode: str = "host", samples: int = 2000) -> float:
    """Seconds one scope event costs (enter + exit, bookkeeping included), measured once.

    RL-Scope (Gleeson et al., MLSys 2021) calibrates each instrumentation event's cost and
    subtracts it from the time of the operation that contains it; :func:`corrected` does that.
    The figure is the median of 20 batches, so a descheduled batch does not skew it.
    """
    timings = Timings(mode if mode != "trace" else "host")
    batches = []
    # The events a scope counts are the scopes opened inside it, so calibrate nested scopes:
    # closing one also updates its parent's bookkeeping.
    with timings.scope("calibration:parent"):
        for _ in range(20):
            start = time.perf_counter()
            for _ in range(samples // 20):
                with timings.scope("calibration"):
                    pass
            batches.append((time.perf_counter() - start) / (samples // 20))
    baseline = []
    for _ in range(20):
        start = time.perf_counter()
        for _ in range(samples // 20):
            with contextlib.nullcontext():
                pass
        baseline.append((time.perf_counter() - start) / (samples // 20))
    batches.sort()
    baseline.sort()
    return max(0.0, batches[len(batches) // 2] - baseline[len(baseline) // 2])


def corrected(stats: ScopeStats, overhead: float) -> float:
    """A scope's inclusive wall time minus the calibrated cost of the scope events inside it."""
    return max(0.0, stats.wall - stats.events * overhead)


install_compile_listener()


__all__ = [
    "COMPILE_WAIT",
    "MODES",
    "ScopeStats",
    "Timings",
    "compile_count",
    "corrected",
    "install_compile_listener",
    "scope",
    "scope_overhead",
]

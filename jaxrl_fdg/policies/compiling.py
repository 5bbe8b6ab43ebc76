"""Compiling lowered programs ahead of time, on worker threads (XLA releases the GIL while it
compiles), each program's seconds charged to its ``compile:<name>`` scope."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import jax

from jaxrl_fdg.policies import exported
from jaxrl_fdg.profiling.timers import Timings

# XLA options for programs that run once (``init``), where how fast they run does not matter: no
# LLVM optimisation of their kernels, and on CPU XLA's older kernel emitters, which generate
# simpler code than the MLIR fusion emitters and do it in half the CPU time (the default PPO's
# init: 0.3 s against 0.5 s alone), all in one LLVM module rather than split for parallel
# codegen (about 20% less CPU again). The numbers are not those of the same ops fully optimised:
# LLVM's instruction choices and the two emitters' transcendental functions round the last bits
# of a float differently (an MJX reset's kinematics, the lagged loop's first rollout, DQN's
# initialisers vmapped over data-parallel shards; docs/decisions.md says what stays the same).
# So every placement and mode compiles ``init`` the same way, here, and they all start from the
# same bits. An option this jaxlib does not know is left out (XLA adds and retires them between
# releases).
RUN_ONCE_OPTIONS = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
    "xla_cpu_parallel_codegen_split_count": 1,
}

# Programs compiled with :data:`RUN_ONCE_OPTIONS`.
RUN_ONCE = frozenset({"init"})


class Compiler:
    """Lowered programs compiling on worker threads in the order :meth:`submit` hands them in,
    each starting as soon as it is lowered, so that XLA compiles one program while Python
    traces and lowers the next.

    :meth:`result` waits for a program and charges its own compile seconds (plus the lowering
    measured before) to ``compile:<name>``, as part of the ``compile`` scope's programs."""

    def __init__(self, timings: Timings, workers: int | None = None):
        self.timings = timings
        self.workers = workers or compile_workers()
        self.lowering: dict[str, float] = {}
        self.futures: dict[str, concurrent.futures.Future] = {}
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def submit(self, name: str, lowered: Any, lowering_s: float) -> None:
        """Start compiling ``lowered`` (which took ``lowering_s`` to trace and lower)."""
        self.lowering[name] = lowering_s
        self.futures[name] = self._workers().submit(compile_timed, lowered, name)

    def submit_load(self, name: str, saved: Any) -> None:
        """Start loading the executable :func:`~jaxrl_fdg.policies.exported.serialize` kept
        (XLA releases the GIL while it reads it in); charged to ``compile:<name>`` as a
        compile is."""
        self.lowering[name] = 0.0
        self.futures[name] = self._workers().submit(_load_timed, saved)

    def _workers(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self.workers, thread_name_prefix="compile"
            )
        return self._pool

    def close(self) -> None:
        """No more programs: the worker threads end when the queue is done."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def __contains__(self, name: str) -> bool:
        return name in self.futures

    def result(self, name: str) -> Any:
        compiled, seconds = self.futures.pop(name).result()
        self.timings.record(f"compile:{name}", self.lowering[name] + seconds, within="compile")
        return compiled


def compile_timed(lowered: Any, name: str = "") -> tuple[Any, float]:
    """``lowered`` compiled (with :data:`RUN_ONCE_OPTIONS` if ``name`` is in :data:`RUN_ONCE`),
    and the seconds that took."""
    start = time.perf_counter()
    with _watching_the_cache() as events:
        compiled = compile_with(lowered, RUN_ONCE_OPTIONS if name in RUN_ONCE else {})
    if _ASKED in events and _HIT not in events:
        _compiled_here.add(compiled)
    return compiled, time.perf_counter() - start


def compiled_here(compiled: Any) -> bool:
    """Whether XLA compiled ``compiled`` in this process: JAX's persistent cache was asked for
    it and did not have it. An executable that cache loaded instead (or that was not seen
    compiling) is ``False``: XLA:CPU serializes one loaded that way again without its kernels
    (a copy fails with "Function ... not found" when it runs), so only executables compiled
    here are kept by :mod:`jaxrl_fdg.run.executables`."""
    return compiled in _compiled_here


# The persistent cache's events, which JAX records in the thread that compiles: a compile that
# asked the cache, and one the cache answered. A JAX that names them otherwise keeps nothing.
_ASKED = "/jax/compilation_cache/compile_requests_use_cache"
_HIT = "/jax/compilation_cache/cache_hits"
_compiled_here: weakref.WeakSet = weakref.WeakSet()
_events = threading.local()
_listening = threading.Lock()
_listener: list[Callable] = []


@contextlib.contextmanager
def _watching_the_cache():
    """The persistent cache's events this thread records inside the block."""
    with _listening:
        if not _listener:
            _listener.append(_record)
            jax.monitoring.register_event_listener(_record)
    _events.seen = seen = set()
    try:
        yield seen
    finally:
        _events.seen = None


def _record(event: str, **_: Any) -> None:
    seen = getattr(_events, "seen", None)
    if seen is not None:
        seen.add(event)


def _load_timed(saved: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    loaded = exported.load(saved)
    return loaded, time.perf_counter() - start


_UNKNOWN_OPTION = re.compile(r"No such compile option: '(\w+)'")
_unknown_options: set[str] = set()  # options this jaxlib refused, not passed again
_unknown_lock = threading.Lock()


def compile_with(lowered: Any, options: dict[str, Any]) -> Any:
    """``lowered.compile(options)``, leaving out the options this jaxlib does not know."""
    while True:
        with _unknown_lock:
            known = {k: v for k, v in options.items() if k not in _unknown_options}
        try:
            return lowered.compile(known or None)
        except jax.errors.JaxRuntimeError as error:
            unknown = _UNKNOWN_OPTION.search(str(error))
            if unknown is None or unknown.group(1) not in known:
                raise
            with _unknown_lock:
                _unknown_options.add(unknown.group(1))


def unknown_options() -> frozenset[str]:
    """The options :func:`compile_with` has found this jaxlib does not know, and left out."""
    with _unknown_lock:
        return frozenset(_unknown_options)


def compile_workers() -> int:
    """Threads compiling at once: one per two usable cores (XLA:CPU spreads one compile over
    about two), and at least two, so that ``init``'s compile (short, and mostly on one core)
    runs beside the mode's program's instead of after it."""
    return max(2, usable_cores() // 2)


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1

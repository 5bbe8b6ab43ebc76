"""Compiling lowered programs ahead of time, on worker threads (XLA releases the GIL while it
compiles), each program's seconds charged to its ``compile:<name>`` scope."""

from __future__ import annotations

import concurrent.futures
import os
import time
from typing import Any

from jaxrl_fdg.profiling.timers import Timings


class Compiler:
    """Lowered programs compiling on worker threads, in the order given: one thread per two
    usable cores (XLA:CPU already spreads one compile over about two), at least one.

    :meth:`result` waits for a program and charges its own compile seconds (plus the lowering
    measured before) to ``compile:<name>``, as part of the ``compile`` scope's programs."""

    def __init__(self, lowered: dict[str, tuple[Any, float]], timings: Timings):
        self.timings = timings
        self.lowering = {name: seconds for name, (_, seconds) in lowered.items()}
        self.futures: dict[str, concurrent.futures.Future] = {}
        if not lowered:
            return
        workers = max(1, min(len(lowered), usable_cores() // 2))
        pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="compile")
        for name, (program, _) in lowered.items():
            self.futures[name] = pool.submit(compile_timed, program)
        pool.shutdown(wait=False)  # its threads end when the queue is done

    def __contains__(self, name: str) -> bool:
        return name in self.futures

    def result(self, name: str) -> Any:
        compiled, seconds = self.futures.pop(name).result()
        self.timings.record(f"compile:{name}", self.lowering[name] + seconds, within="compile")
        return compiled


def compile_timed(lowered: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    compiled = lowered.compile()
    return compiled, time.perf_counter() - start


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1

"""Turn a run's :class:`~jaxrl_fdg.profiling.timers.Timings` into a summary and a table.

Scope names follow the runner's conventions: ``compile:<program>`` for ahead-of-time compilation,
``wait`` for the host blocking on device results at host boundaries, ``host`` for host-side
bookkeeping at boundaries (metrics, logging, progress), and the program names of the fusion plan
for dispatch (the time a call takes to return, not the device time it enqueues).
"""

from __future__ import annotations

from typing import Any

from jaxrl_fdg.profiling.timers import Timings
from rich.console import Console
from rich.table import Table

_SPECIAL = ("wait", "host")


def summarize(timings: Timings, run_seconds: float) -> dict[str, Any]:
    """Per-program dispatch and compile time, and the run's split into host and device waiting.

    ``run_seconds`` is the wall time of the training loop (compilation ahead of time excluded).
    ``device_wait_s`` is a lower bound on device time: time the device computes while the host is
    still dispatching is hidden by asynchrony and counts as host time.
    """
    scopes = timings.scopes
    programs: dict[str, dict[str, float]] = {}
    aot_compile = 0.0
    for name, stats in scopes.items():
        if name.startswith("compile:"):
            program = name.split(":", 1)[1]
            programs.setdefault(program, _row())["compile_s"] += stats.wall
            aot_compile += stats.wall
        elif name not in _SPECIAL:
            row = programs.setdefault(name, _row())
            row["calls"] += stats.calls
            # Anything JAX compiled inside a call (eager mode compiles op by op) is compile time.
            row["compile_s"] += stats.compile
            row["dispatch_s"] += stats.wall - stats.compile
    in_run_compile = sum(s.compile for n, s in scopes.items() if not n.startswith("compile:"))
    wait = scopes["wait"].wall if "wait" in scopes else 0.0
    host = scopes["host"].wall if "host" in scopes else 0.0
    dispatch = sum(r["dispatch_s"] for r in programs.values())
    return {
        "programs": programs,
        "compile_s": aot_compile + in_run_compile,
        "run_s": run_seconds,
        "dispatch_s": dispatch,
        "device_wait_s": wait,
        "host_bookkeeping_s": host,
        "other_host_s": max(0.0, run_seconds - dispatch - wait - host - in_run_compile),
    }


def _row() -> dict[str, float]:
    return {"calls": 0, "dispatch_s": 0.0, "compile_s": 0.0}


def summary_table(summary: dict[str, Any], title: str = "where the time went") -> str:
    """Render :func:`summarize`'s result as a fixed-width table."""
    table = Table(title=title, title_justify="left")
    for column in ("program", "calls", "compile s", "dispatch s"):
        table.add_column(column, justify="left" if column == "program" else "right")
    for name, row in summary["programs"].items():
        table.add_row(
            name, f"{row['calls']:,}", f"{row['compile_s']:.2f}", f"{row['dispatch_s']:.3f}"
        )
    run = summary["run_s"] or 1.0
    table.add_section()
    for label, key in (
        ("host: dispatch (Python + launching programs)", "dispatch_s"),
        ("host: bookkeeping at boundaries", "host_bookkeeping_s"),
        ("host: waiting on the device", "device_wait_s"),
        ("host: other (loop, transfers)", "other_host_s"),
    ):
        table.add_row(label, "", "", f"{summary[key]:.3f} ({100 * summary[key] / run:.0f}%)")
    console = Console(width=100, record=True, file=_Null())
    console.print(table)
    return console.export_text()


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass

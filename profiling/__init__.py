"""Timing: scopes per fragment and program, compile time, device time, overhead correction.

The names below load on first use (PEP 562): a run imports the timers and the summary it writes,
and the analyses (``bound``, ``cost``, ``ops``, ``trace``, ...) only where it profiles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_fdg import lazy

if TYPE_CHECKING:
    from jaxrl_fdg.profiling import bound, chart, cost, ops, overheads, peaks, trace
    from jaxrl_fdg.profiling.report import machine_info, summarize, summary_table, write_report
    from jaxrl_fdg.profiling.timers import (
        MODES,
        ScopeStats,
        Timings,
        compile_count,
        corrected,
        install_compile_listener,
        scope,
        scope_overhead,
    )

__all__ = [
    "MODES",
    "ScopeStats",
    "Timings",
    "bound",
    "chart",
    "compile_count",
    "corrected",
    "cost",
    "install_compile_listener",
    "machine_info",
    "ops",
    "overheads",
    "peaks",
    "scope",
    "scope_overhead",
    "summarize",
    "summary_table",
    "trace",
    "write_report",
]

_REPORT = ("machine_info", "summarize", "summary_table", "write_report")
_TIMERS = ("MODES", "ScopeStats", "Timings", "compile_count", "corrected")
_TIMERS += ("install_compile_listener", "scope", "scope_overhead")
_MODULE_OF = {name: "jaxrl_fdg.profiling.report" for name in _REPORT}
_MODULE_OF |= {name: "jaxrl_fdg.profiling.timers" for name in _TIMERS}

__getattr__, __dir__ = lazy.names(__name__, _MODULE_OF, globals())

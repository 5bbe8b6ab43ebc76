"""Timing: scopes per fragment and program, compile time, device time, overhead correction."""

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

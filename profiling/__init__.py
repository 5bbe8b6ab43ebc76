"""Timing: host time per scope, JAX compile time charged to the open scope, summaries."""

from jaxrl_fdg.profiling.report import summarize, summary_table
from jaxrl_fdg.profiling.timers import (
    ScopeStats,
    Timings,
    compile_count,
    install_compile_listener,
)

__all__ = [
    "ScopeStats",
    "Timings",
    "compile_count",
    "install_compile_listener",
    "summarize",
    "summary_table",
]

"""Turn a run's :class:`~jaxrl_fdg.profiling.timers.Timings` into a summary and a table.

Scope names follow the runner's conventions: ``compile:<program>`` for ahead-of-time compilation,
``collect`` for reading metrics back at host boundaries (the host waits on the device there, then
copies), ``log`` and ``checkpoint`` for host-side bookkeeping (metrics rows, progress,
checkpoints), and the fusion plan's program names (``scan``, ``actor``, ``env``, ``learner``,
…) for dispatch.
"""

from __future__ import annotations

from typing import Any

from jaxrl_fdg.profiling.timers import COMPILE_WAIT, ScopeStats, Timings
from jaxrl_fdg.profiling.trace import Attribution

_BOUNDARY = ("collect", "log", "checkpoint")  # host work at boundaries, not programs


def machine_info() -> dict[str, Any]:
    """Where a measurement was taken: platform, Python, JAX, backend, devices, cores usable."""
    import os
    import platform

    import jax

    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "cpu_count": os.cpu_count(),
        "cpus_used": len(os.sched_getaffinity(0)),
    }


def recorded(where: str = ".") -> dict[str, Any]:
    """When a measurement was taken: the UTC date and time, the git commit of the checkout
    ``where`` is in (``None`` outside one) and whether it had uncommitted changes, and the load
    average (1, 5, 15 min) at the time of writing."""
    import datetime
    import os
    import subprocess

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", *args], cwd=where, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "dirty": bool(status),
        "loadavg": list(os.getloadavg()),
    }


def write_report(path: str, benchmark: str, config: dict, results: dict, **extra: Any) -> None:
    """Write a benchmark's results as JSON (with :func:`machine_info` and :func:`recorded`: date,
    the commit of the code measured, load) and say where."""
    import json
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    report = {
        "benchmark": benchmark,
        "config": config,
        "machine": machine_info(),
        # The checkout of the code measured, wherever the file is written (a temp folder too).
        "recorded": recorded(str(Path(__file__).resolve().parent)),
        "results": results,
        **extra,
    }
    Path(path).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")


def summarize(
    timings: Timings,
    run_seconds: float,
    *,
    overhead: float = 0.0,
    attribution: Attribution | None = None,
) -> dict[str, Any]:
    """Per-program and per-run figures, seconds unless stated.

    ``run_seconds`` is the wall time of the training loop (compilation ahead of time excluded).
    ``device_wait_s`` is what the host spent blocked on the device: in ``sync`` mode it includes a
    wait after every program call (that program's device time); otherwise only the waits at host
    boundaries, a lower bound on device time since device work that overlaps host work is hidden.
    ``overhead_s`` is the calibrated cost of the timing layer's own scope events, subtracted in
    ``corrected_run_s``.
    """
    scopes = timings.scopes
    programs, aot_compile = _programs(scopes)
    run_scopes = [s for n, s in scopes.items() if not _is_compile(n)]
    in_run_compile = sum(s.compile for s in run_scopes)
    collect = scopes.get("collect", ScopeStats())
    log = scopes.get("log", ScopeStats())
    bookkeeping = log.wall + scopes.get("checkpoint", ScopeStats()).wall
    dispatch = sum(r["dispatch_s"] for r in programs.values())
    wait = collect.wait + sum(r["device_s"] for r in programs.values())
    events = sum(s.calls for s in run_scopes)
    accounted = dispatch + wait + collect.d2h + bookkeeping + in_run_compile
    empty = ScopeStats()
    together = scopes.get("compile", empty).wall + scopes.get(COMPILE_WAIT, empty).wall
    summary: dict[str, Any] = {
        "mode": timings.mode,
        "programs": programs,
        "compile_s": aot_compile + in_run_compile,
        # compile_s = compile_together_s + compile_one_at_a_time_s. The programs compiled at the
        # same time on worker threads overlap: their own seconds sum to more than the wall the
        # run waited for them (compile_together_s), so compile_programs_s, the sum of every
        # program's own compile seconds, can exceed compile_s.
        "compile_together_s": together,
        "compile_one_at_a_time_s": aot_compile + in_run_compile - together,
        "compile_programs_s": sum(row["compile_s"] for row in programs.values()),
        "compiled_together": [name for name, row in programs.items() if row.get("together")],
        "run_s": run_seconds,
        "dispatch_s": dispatch,
        "device_wait_s": wait,
        "d2h_s": collect.d2h,
        "host_bookkeeping_s": bookkeeping,
        "other_host_s": max(0.0, run_seconds - accounted),
        "scope_events": events,
        "overhead_per_event_s": overhead,
        "overhead_s": events * overhead,
        "corrected_run_s": max(0.0, run_seconds - events * overhead),
        "device_busy": None,
        "device_by_scope": None,
    }
    if timings.synchronous and run_seconds > 0:
        summary["device_busy"] = wait / run_seconds
    if attribution is not None:
        summary["device_busy"] = attribution.device_busy
        summary["device_by_scope"] = attribution.as_dict()
    return summary


def _programs(scopes: dict[str, ScopeStats]) -> tuple[dict[str, dict[str, float]], float]:
    """Per-program rows (calls, compile, dispatch and device seconds) from the scopes named after
    programs and their ``compile:<program>`` scopes, and the wall time of ahead-of-time
    compilation (programs compiled at the same time count once, by their ``compile`` scope).
    Boundary scopes (``collect``, ``log``, ``checkpoint``) are host work, not programs."""
    programs: dict[str, dict[str, float]] = {}
    aot_compile = 0.0
    together = scopes.get("compile", ScopeStats())  # programs compiled at the same time
    for name, stats in scopes.items():
        if name.startswith("compile:"):
            program = name.split(":", 1)[1]
            row = programs.setdefault(program, _row())
            row["compile_s"] += stats.wall
            if name in together.children:  # compiled on a worker thread, beside the others
                row["together"] = True
            else:
                aot_compile += stats.wall
        elif name not in _BOUNDARY and not _is_compile(name):
            row = programs.setdefault(name, _row())
            row["calls"] += stats.calls
            row["compile_s"] += stats.compile  # eager mode compiles op by op, inside calls
            row["dispatch_s"] += stats.host
            row["device_s"] += stats.wait
    waited = scopes.get(COMPILE_WAIT, ScopeStats()).wall
    return programs, aot_compile + together.wall + waited


def _is_compile(name: str) -> bool:
    return name in ("compile", COMPILE_WAIT) or name.startswith("compile:")


def _row() -> dict[str, Any]:
    return {"calls": 0, "dispatch_s": 0.0, "compile_s": 0.0, "device_s": 0.0, "together": False}


TOGETHER = "∥"  # marks the programs compiled at the same time on worker threads


def summary_table(summary: dict[str, Any], title: str = "where the time went") -> str:
    """Render :func:`summarize`'s result as fixed-width tables: where the time went, then (where
    the run measured it) each program's bound analysis (:mod:`~jaxrl_fdg.profiling.bound`)."""
    from rich.console import Console
    from rich.table import Table

    sync = summary["mode"] == "sync"
    table = Table(
        title=f"{title} (profile: {summary['mode']})",
        title_justify="left",
        caption=compile_note(summary),
        caption_justify="left",
    )
    columns = ["program", "calls", "compile s", "dispatch s"] + (["device s"] if sync else [])
    for column in columns:
        table.add_column(column, justify="left" if column == "program" else "right")
    for name, row in summary["programs"].items():
        label = f"{name} {TOGETHER}" if row.get("together") else name
        cells = [label, f"{row['calls']:,}", f"{row['compile_s']:.2f}", f"{row['dispatch_s']:.3f}"]
        table.add_row(*cells, *([f"{row['device_s']:.3f}"] if sync else []))
    run = summary["run_s"] or 1.0
    pad = [""] * (len(columns) - 2)

    def line(label: str, seconds: float, share: float | None = None) -> None:
        share = seconds / run if share is None else share
        table.add_row(label, *pad, f"{seconds:.3f} ({100 * share:.0f}%)")

    table.add_section()
    line("host: dispatch (Python + launching programs)", summary["dispatch_s"])
    line("host: waiting on the device", summary["device_wait_s"])
    line("host: device→host copies", summary["d2h_s"])
    line("host: bookkeeping at boundaries", summary["host_bookkeeping_s"])
    line("host: other (loop, Python)", summary["other_host_s"])
    if summary["overhead_s"] >= 1e-3:  # shown where it matters (many scope events)
        line("timing layer's own cost (subtracted)", summary["overhead_s"])
    if summary.get("profiler_session_s"):
        session = summary["profiler_session_s"]
        table.add_row("profiler start/stop/export (not in run)", *pad, f"{session:.3f}")
    scoped = summary.get("device_by_scope")
    if scoped:
        table.add_section()
        busy = scoped["device_busy_s"] or 1.0
        for name, seconds in sorted(scoped["device_exclusive_s"].items(), key=lambda kv: -kv[1]):
            line(f"device: {name} (traced window)", seconds, seconds / busy)
    if summary["device_busy"] is not None:
        table.add_row("device busy", *pad, f"{100 * summary['device_busy']:.0f}%")
    console = Console(width=110, record=True, file=_Null())
    console.print(table)
    if summary.get("bound"):
        from jaxrl_fdg.profiling.bound import bound_table, breakdown_table

        console.print(bound_table(summary["bound"]))
        if summary["bound"].get("breakdown"):
            console.print(breakdown_table(summary["bound"]["breakdown"]))
    elif summary["mode"] == "host":
        console.print(
            "bound analysis (FLOPs, bytes, % of peak, compute/memory/overhead, H100 prediction): "
            "--profile sync or trace, which measure each program's device time."
        )
    return console.export_text()


def compile_note(summary: dict[str, Any]) -> str | None:
    """Why the compile column can sum to more than the headline's compile seconds: a line under
    the table where programs compiled at the same time (``None`` where none did)."""
    together = summary.get("compiled_together")
    if not together:
        return None
    own = sum(summary["programs"][name]["compile_s"] for name in together)
    names = " + ".join(f"{name} {TOGETHER}" for name in together)
    total, headline = summary["compile_programs_s"], summary["compile_s"]
    return (
        f"{TOGETHER} compiled at the same time, on worker threads: {names} = {own:.2f} s of their "
        f"own, while the run waited {summary['compile_together_s']:.2f} s for them. So the "
        f"compile column sums to {total:.2f} s, {'more than' if total > headline else 'against'} "
        f"the headline's {headline:.2f} s compile = {summary['compile_together_s']:.2f} s waited "
        f"for them + {summary['compile_one_at_a_time_s']:.2f} s of programs compiled one at a "
        "time."
    )


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass

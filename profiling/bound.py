"""Bound analysis: is each compiled program bound by compute, by memory, or by overhead?

For each program, XLA's cost model (:mod:`~jaxrl_fdg.profiling.cost`) gives the FLOPs and bytes
one run of it does; the timing layer measures its device time (``--profile sync``: a block after
every call; ``--profile trace``: the device operations of the program's module in the traced
window). Their quotients are the achieved FLOP/s and bytes/s, and divided by the device's roofs
(:mod:`~jaxrl_fdg.profiling.peaks`), the fractions of peak. The verdict, :func:`verdict`:

1. ``overhead`` if the host's dispatch time per run of the program is at least its device time
   per run (the device waits on Python and launching), or if neither fraction of peak reaches
   :data:`OVERHEAD_BELOW` (5%): the device is busy but near neither roof, so its time goes to
   what the cost model does not count (kernel launches, loop control, many tiny operations,
   synchronisation);
2. otherwise ``compute`` if the fraction of peak FLOP/s is at least the fraction of peak
   bandwidth, else ``memory``. This is the roofline's rule: the fraction of peak FLOP/s over the
   fraction of peak bandwidth is the program's arithmetic intensity (FLOPs per byte) over the
   device's ridge point (peak FLOP/s per peak byte/s).

The roofline time of a program, ``max(flops / peak FLOP/s, bytes / peak bytes/s)``, is the least
time the device could take for it, and no prediction: an RL iteration runs thousands of small
operations, each with a floor of its own. The prediction adds the device's fixed costs
(:mod:`~jaxrl_fdg.profiling.overheads`): per program launch, and per operation executed (counted
in the trace window where there is one, else from the program's text,
:mod:`~jaxrl_fdg.profiling.ops`). On this device the costs are measured; for the H100 line they
are stated assumptions, and the line says "predicted on H100" only as that.

With a trace, :func:`breakdown` splits one iteration's time by operation class.
"""

from __future__ import annotations

from typing import Any

from jaxrl_fdg.profiling import ops as op_classes
from jaxrl_fdg.profiling.cost import Cost, program_cost
from jaxrl_fdg.profiling.overheads import GPU_ASSUMED, Overheads, device_overheads, predicted_s
from jaxrl_fdg.profiling.peaks import H100, Peak, device_peak, matmul_precision
from jaxrl_fdg.profiling.trace import Attribution, module_name

MODES = ("sync", "trace")  # the timing modes that measure each program's device time
OVERHEAD_BELOW = 0.05  # neither fraction of peak reaching this: overhead
VERDICTS = ("compute", "memory", "overhead")
ONCE = "init"  # the program run once before the run's clock starts, not per iteration


def verdict(compute_fraction: float, memory_fraction: float, device_s: float, host_s: float) -> str:
    """``compute``, ``memory`` or ``overhead`` for a program that achieved these fractions of
    the device's peak FLOP/s and bandwidth, taking ``device_s`` on the device and ``host_s`` to
    dispatch, per run (the rule is in the module docstring)."""
    if host_s >= device_s or max(compute_fraction, memory_fraction) < OVERHEAD_BELOW:
        return "overhead"
    return "compute" if compute_fraction >= memory_fraction else "memory"


def roofline_s(flops: float, bytes_: float, peak: Peak) -> float:
    """The least time ``peak``'s device needs for ``flops`` and ``bytes_``."""
    return max(flops / peak.flops_s, bytes_ / peak.bytes_s)


def analyse(
    programs: dict[str, dict[str, Any]],
    costs: dict[str, Cost],
    *,
    iterations: int,
    peak: Peak | None,
    per_iteration: frozenset[str] = frozenset(),
    window: dict[str, tuple[float, float]] | None = None,
    sync: bool = False,
    run_s: float = 0.0,
    ops: dict[str, tuple[float, str]] | None = None,
    overheads: Overheads | None = None,
) -> dict[str, Any]:
    """Per-program cost, achieved rates, fractions of peak and verdict; roofline predictions.

    Args:
      programs: :func:`~jaxrl_fdg.profiling.summarize`'s rows (calls, dispatch, device seconds).
      costs: each program's :class:`Cost` per run (one call; one iteration for the programs in
        ``per_iteration``, whose loop over iterations has a trip count known only at run time).
      iterations: iterations this run did (a program's runs per iteration are its calls over it).
      peak: this device's roofs (``None``: no fractions or verdicts).
      window: ``--profile trace``: ``{program: (device seconds, runs)}`` in the traced window.
      sync: ``--profile sync``: each row's ``device_s`` is that program's device time.
      run_s: the run's wall seconds (for the measured time per iteration).
      ops: ``{program: (operations per run, "trace" | "program")}``, where they were counted.
      overheads: this device's fixed costs (``None``: no prediction here).
    """
    h100_peak = H100.peak(matmul_precision())
    rows: dict[str, dict[str, Any]] = {}
    for name, cost in costs.items():
        row = programs.get(name, {})
        runs = iterations if name in per_iteration else row.get("calls", 0)
        per_it = None if name == ONCE or not iterations else runs / iterations
        entry = {**cost._asdict(), "runs": runs, "runs_per_iteration": per_it}
        entry["h100_s"] = roofline_s(cost.flops, cost.bytes, h100_peak)
        device = _device_per_run(name, row, runs, window, sync)
        if device is not None and device > 0:
            host = _host_per_run(row, runs, name in per_iteration)
            entry.update(_achieved(cost, device, host, peak))
        if peak is not None:
            entry["roofline_s"] = roofline_s(cost.flops, cost.bytes, peak)
        if ops and name in ops:
            entry.update(_predicted(entry, row.get("calls", 0), *ops[name], overheads))
        rows[name] = entry
    return {
        "programs": rows,
        "peak": None if peak is None else peak._asdict(),
        "h100": h100_peak._asdict(),
        "overhead_below": OVERHEAD_BELOW,
        "iteration_s": run_s / iterations if iterations and run_s else None,
        "roofline_iteration_s": _per_iteration(rows, "roofline_s") if peak is not None else None,
        "h100_iteration_s": _per_iteration(rows, "h100_s"),
        "ops_per_iteration": _per_iteration(rows, "ops") if ops else None,
        "predicted_iteration_s": _per_iteration(rows, "predicted_s") if ops else None,
        "h100_predicted_iteration_s": _per_iteration(rows, "h100_predicted_s") if ops else None,
        "overheads": None if overheads is None else overheads._asdict(),
        "h100_overheads": GPU_ASSUMED._asdict(),
        "measured": "sync" if sync else "trace" if window else None,
    }


def _predicted(
    entry: dict[str, Any], calls: int, count: float, counted: str, overheads: Overheads | None
) -> dict[str, Any]:
    """A program's operations per run and the model's time per run, here (with ``overheads``
    and a roofline here) and on an H100 (assumed costs)."""
    runs = entry["runs"]
    launches = calls / runs if runs else 1.0
    found = {"ops": count, "ops_counted": counted, "launches_per_run": launches}
    found["h100_predicted_s"] = predicted_s(entry["h100_s"], count, GPU_ASSUMED, launches)
    if overheads is not None and "roofline_s" in entry:
        found["predicted_s"] = predicted_s(entry["roofline_s"], count, overheads, launches)
    return found


def _per_iteration(rows: dict[str, dict[str, Any]], key: str) -> float | None:
    """The sum over programs of ``key`` times runs per iteration (``None`` where no program has
    ``key``; ``init``, run once, adds nothing)."""
    have = [row for row in rows.values() if key in row]
    if not have:
        return None
    return sum(row[key] * (row["runs_per_iteration"] or 0.0) for row in have)


def of_run(
    compiled: dict[str, Any],
    timing: dict[str, Any],
    *,
    iterations: int,
    per_iteration: frozenset[str] = frozenset(),
    attribution: Attribution | None = None,
    traced_iterations: int = 0,
) -> dict[str, Any]:
    """:func:`analyse` for a run: ``compiled`` its executables by program name, ``timing``
    :func:`~jaxrl_fdg.profiling.summarize`'s result, ``iterations`` those it ran; with a
    trace's ``attribution`` (of ``traced_iterations`` iterations), device time per program from
    the window."""
    costs = {}
    for name, program in compiled.items():
        cost = program_cost(program)
        if cost is not None:
            costs[name] = cost
    # Operations per run: counted in the trace window where it ran the program, else from text.
    window = None if attribution is None else {}
    counts = {}
    for name in costs:
        text = compiled[name].as_text()
        if window is not None:
            module = module_name(text)
            calls = attribution.annotations.get(name, 0)
            runs = traced_iterations if name in per_iteration else calls
            window[name] = (attribution.modules.get(module, 0.0), runs)
            if runs:
                counts[name] = (attribution.module_ops.get(module, 0) / runs, "trace")
                continue
        counts[name] = (float(sum(op_classes.executed(text).values())), "program")
    overheads = device_overheads()
    analysis = analyse(
        timing["programs"],
        costs,
        iterations=iterations,
        peak=device_peak(),
        per_iteration=per_iteration,
        window=window,
        sync=timing["mode"] == "sync",
        run_s=timing["run_s"],
        ops=counts,
        overheads=overheads,
    )
    if attribution is not None and traced_iterations and analysis["iteration_s"]:
        dispatch = timing.get("dispatch_s", 0.0) / max(iterations, 1)
        analysis["breakdown"] = breakdown(
            attribution, traced_iterations, analysis["iteration_s"], dispatch, overheads
        )
    return analysis


def breakdown(
    attribution: Attribution,
    traced_iterations: int,
    iteration_s: float,
    dispatch_s: float,
    overheads: Overheads | None,
) -> dict[str, dict[str, float]]:
    """One iteration's time by operation class: ``{row: {"s": seconds, "ops": count}}``.

    The trace window counts each class's operations and their time, less the profiler's own cost
    per event. Tracing still slows a window, so its times are read as shares: the iteration's
    measured time, less the host's dispatch (``dispatch_s``) and the operations' floors (their
    count times the device's ``op_s``), is split among the classes in proportion to their traced
    time. Rows: each class of :data:`~jaxrl_fdg.profiling.ops.CLASSES` seen,
    ``operation floors`` and ``host dispatch``; their seconds sum to ``iteration_s``.
    """
    per_it = {k: n / traced_iterations for k, n in attribution.class_ops.items()}
    floors = sum(per_it.values()) * (overheads.op_s if overheads else 0.0)
    dispatch_s = min(dispatch_s, iteration_s)
    floors = min(floors, iteration_s - dispatch_s)
    work = iteration_s - dispatch_s - floors
    traced = sum(attribution.classes.values())
    rows = {}
    for kind in op_classes.CLASSES:
        if kind in per_it:
            share = attribution.classes.get(kind, 0.0) / traced if traced > 0 else 0.0
            rows[kind] = {"s": work * share, "ops": per_it[kind]}
    rows["operation floors"] = {"s": floors, "ops": sum(per_it.values())}
    rows["host dispatch"] = {"s": dispatch_s, "ops": 0.0}
    return rows


def _host_per_run(row: dict[str, Any], runs: int, per_iteration: bool) -> float:
    """Dispatch seconds per run: per call, spread over the call's iterations for a program
    whose one call runs several (``per_iteration``)."""
    host = row.get("dispatch_s", 0.0) / max(row.get("calls", 0), 1)
    if per_iteration:
        host *= row.get("calls", 0) / max(runs, 1)
    return host


def _achieved(cost: Cost, device: float, host: float, peak: Peak | None) -> dict[str, Any]:
    """Device and dispatch seconds per run, the FLOP/s and bytes/s achieved and, with ``peak``,
    their fractions of it and the verdict."""
    entry = {"device_s": device, "host_s": host}
    entry.update(flops_s=cost.flops / device, bytes_s=cost.bytes / device)
    if peak is not None:
        fc, fm = entry["flops_s"] / peak.flops_s, entry["bytes_s"] / peak.bytes_s
        entry.update(peak_flops=fc, peak_bytes=fm, bound=verdict(fc, fm, device, host))
    return entry


def _device_per_run(name, row, runs, window, sync) -> float | None:
    if window and name in window:
        seconds, window_runs = window[name]
        return seconds / window_runs if window_runs else None
    if sync and runs:
        return row.get("device_s", 0.0) / runs
    return None


__all__ = [
    "MODES",
    "OVERHEAD_BELOW",
    "VERDICTS",
    "analyse",
    "breakdown",
    "of_run",
    "roofline_s",
    "verdict",
]


# -- the table -------------------------------------------------------------------------------


def bound_table(analysis: dict[str, Any]):
    """:func:`analyse`'s result as a ``rich`` table, its rules and predictions in the caption."""
    from rich.table import Table

    measured = analysis["measured"]
    table = Table(
        title="bound analysis, per run of each program" + (f" (device time: {measured})"
                                                           if measured else ""),
        title_justify="left",
        caption="\n".join(_notes(analysis)),
        caption_justify="left",
    )  # fmt: skip
    columns = ("program", "runs/it", "MFLOP", "MB", "device ms", "GFLOP/s", "GB/s")
    for column in (*columns, "% peak FLOP/s", "% peak B/s", "bound", "H100 ms/it"):
        table.add_column(column, justify="left" if column == "program" else "right")
    for name, row in analysis["programs"].items():
        per_it = row["runs_per_iteration"]
        table.add_row(
            name,
            "once" if per_it is None else _num(per_it, "{:.3g}"),
            _num(row["flops"] / 1e6, "{:,.3g}"),
            _num(row["bytes"] / 1e6, "{:,.3g}"),
            _num(row.get("device_s") and row["device_s"] * 1e3, "{:.3g}"),
            _num(row.get("flops_s") and row["flops_s"] / 1e9, "{:,.3g}"),
            _num(row.get("bytes_s") and row["bytes_s"] / 1e9, "{:,.3g}"),
            _percent(row.get("peak_flops")),
            _percent(row.get("peak_bytes")),
            row.get("bound", "—"),
            _num(per_it and row["h100_s"] * per_it * 1e3, "{:.3g}"),
        )
    return table


def _notes(analysis: dict[str, Any]) -> list[str]:
    peak, h100 = analysis["peak"], analysis["h100"]
    rows = analysis["programs"].values()
    notes = [
        "per run: one call of the program; of a program looping over iterations (scan), one "
        "iteration. FLOPs and bytes: XLA's cost analysis"
        + (
            ", loop bodies × their trip counts."
            if all(r["loops"] != "once" for r in rows)
            else "; loop bodies counted once (this XLA's program text could not be re-costed)."
        )
    ]
    if peak:
        notes.append(
            f"peak here: {peak['name']} {peak['flops_s'] / 1e9:,.0f} GFLOP/s, "
            f"{peak['bytes_s'] / 1e9:,.1f} GB/s ({peak['source']})."
        )
    else:
        notes.append("peak here: unknown for this device (no datasheet entry): no verdicts.")
    if analysis["measured"] is None:
        notes.append(
            "device time per program: --profile sync or trace measures it (host mode does not), "
            "so no achieved rates or verdicts here."
        )
    notes.append(
        f"bound: overhead if dispatch ≥ device time per run, or both % of peak < "
        f"{100 * analysis['overhead_below']:.0f}%; else compute if % peak FLOP/s ≥ % peak B/s, "
        "else memory."
    )
    parts = []
    if analysis["iteration_s"]:
        parts.append(f"{analysis['iteration_s'] * 1e3:.3g} ms measured here")
    if analysis["roofline_iteration_s"] is not None:
        parts.append(f"roofline {analysis['roofline_iteration_s'] * 1e3:.3g} ms here")
    if analysis.get("predicted_iteration_s") is not None:
        costs = analysis["overheads"]
        parts.append(
            f"predicted {analysis['predicted_iteration_s'] * 1e3:.3g} ms here (roofline + "
            f"{costs['op_s'] * 1e6:.2g} µs an operation + {costs['launch_s'] * 1e6:.2g} µs a "
            f"launch, {costs['source']})"
        )
    if parts:
        notes.append("per iteration: " + "; ".join(parts) + ".")
    if analysis["h100_iteration_s"] is not None:
        line = (
            f"on an {h100['name']} ({h100['flops_s'] / 1e12:.1f} TFLOP/s, "
            f"{h100['bytes_s'] / 1e12:.2f} TB/s, datasheet): roofline "
            f"{analysis['h100_iteration_s'] * 1e3:.3g} ms"
        )
        if analysis.get("h100_predicted_iteration_s") is not None:
            costs = analysis["h100_overheads"]
            line += (
                f"; predicted on H100 {analysis['h100_predicted_iteration_s'] * 1e3:.3g} ms, "
                f"{costs['source']}; this program's operation count"
            )
        notes.append(line + ". A roofline is a lower bound: no launches, no host work.")
    return notes


def breakdown_table(rows: dict[str, dict[str, float]]):
    """:func:`breakdown`'s rows as a ``rich`` table."""
    from rich.table import Table

    total = sum(row["s"] for row in rows.values()) or 1.0
    table = Table(
        title="one iteration by operation class (trace window's shares of the measured time)",
        title_justify="left",
    )
    for column in ("class", "ops/it", "ms/it", "share"):
        table.add_column(column, justify="left" if column == "class" else "right")
    for name, row in rows.items():
        table.add_row(
            name,
            f"{row['ops']:,.0f}" if row["ops"] else "—",
            f"{row['s'] * 1e3:.3g}",
            f"{100 * row['s'] / total:.0f}%",
        )
    return table


def _percent(fraction: float | None) -> str:
    if fraction is None:
        return "—"
    return f"{100 * fraction:.0f}" if fraction >= 0.1 else f"{100 * fraction:.2g}"


def _num(value: float | None, spec: str) -> str:
    return "—" if value is None else spec.format(value)

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
time the device could take for it. Summed over one iteration's programs, on the H100's datasheet
figures, it predicts a lower bound on an iteration's time there (launches and host work not
included).
"""

from __future__ import annotations

from typing import Any

from jaxrl_fdg.profiling.cost import Cost, program_cost
from jaxrl_fdg.profiling.peaks import H100, Peak, device_peak, matmul_precision
from jaxrl_fdg.profiling.trace import Attribution, index_program

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
    """
    h100_peak = H100.peak(matmul_precision())
    rows: dict[str, dict[str, Any]] = {}
    here = h100 = 0.0
    for name, cost in costs.items():
        row = programs.get(name, {})
        runs = iterations if name in per_iteration else row.get("calls", 0)
        per_it = None if name == ONCE or not iterations else runs / iterations
        entry: dict[str, Any] = {
            "flops": cost.flops,
            "bytes": cost.bytes,
            "loops": cost.loops,
            "runs": runs,
            "runs_per_iteration": per_it,
            "h100_s": roofline_s(cost.flops, cost.bytes, h100_peak),
        }
        device = _device_per_run(name, row, runs, window, sync)
        if device is not None and device > 0:
            host = _host_per_run(row, runs, name in per_iteration)
            entry.update(_achieved(cost, device, host, peak))
        if peak is not None:
            entry["roofline_s"] = roofline_s(cost.flops, cost.bytes, peak)
            here += entry["roofline_s"] * (per_it or 0.0)
        h100 += entry["h100_s"] * (per_it or 0.0)
        rows[name] = entry
    return {
        "programs": rows,
        "peak": None if peak is None else peak._asdict(),
        "h100": h100_peak._asdict(),
        "overhead_below": OVERHEAD_BELOW,
        "iteration_s": run_s / iterations if iterations and run_s else None,
        "roofline_iteration_s": here if peak is not None and rows else None,
        "h100_iteration_s": h100 if rows else None,
        "measured": "sync" if sync else "trace" if window else None,
    }


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
    window = None
    if attribution is not None:
        window = {}
        for name, program in compiled.items():
            module, _ = index_program(program.as_text())
            calls = attribution.annotations.get(name, 0)
            runs = traced_iterations if name in per_iteration else calls
            window[name] = (attribution.modules.get(module, 0.0), runs)
    return analyse(
        timing["programs"],
        costs,
        iterations=iterations,
        peak=device_peak(),
        per_iteration=per_iteration,
        window=window,
        sync=timing["mode"] == "sync",
        run_s=timing["run_s"],
    )


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


__all__ = ["MODES", "OVERHEAD_BELOW", "VERDICTS", "analyse", "of_run", "roofline_s", "verdict"]


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
    if analysis["h100_iteration_s"] is not None:
        parts.append(
            f"roofline {analysis['h100_iteration_s'] * 1e3:.3g} ms on an {h100['name']}: "
            f"{h100['flops_s'] / 1e12:.1f} TFLOP/s, {h100['bytes_s'] / 1e12:.2f} TB/s (datasheet)"
        )
    if parts:
        notes.append(
            "per iteration: " + "; ".join(parts) + ". A roofline is a lower bound: no launches, "
            "no host work."
        )
    return notes


def _percent(fraction: float | None) -> str:
    if fraction is None:
        return "—"
    return f"{100 * fraction:.0f}" if fraction >= 0.1 else f"{100 * fraction:.2g}"


def _num(value: float | None, spec: str) -> str:
    return "—" if value is None else spec.format(value)

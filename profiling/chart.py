"""``profile.png``: where a run's time went, one panel per kind of time, each on its own scale.

- compile: each program's compile seconds; the title gives compilation's share of compile + run.
- run: the run's wall time split as the summary table splits it (dispatch per program, waiting on
  the device, device→host copies, bookkeeping at boundaries, other host work); the title says
  what share of the run's wall time the bars explain.
- device by fragment (``--profile trace`` only): device time of each fragment in the traced
  window; the title gives the device's busy share of that window.

Compile seconds are often ten times the run's, and the run's parts a tenth of a second each: on
one axis the compile bar runs off the chart and the run's split cannot be seen. Each bar carries
its value and share as text, and each panel's axis leaves room for it, so nothing is clipped.

matplotlib is imported when a chart is drawn, never when the library is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_HOST = (
    ("waiting on the device at boundaries", "device_wait_s"),
    ("device→host copies", "d2h_s"),
    ("bookkeeping at boundaries", "host_bookkeeping_s"),
    ("other host (loop, Python)", "other_host_s"),
)


def profile_chart(summary: dict[str, Any], path: str | Path, title: str = "") -> Path:
    """Draw the panels for ``summary`` (:func:`~jaxrl_fdg.profiling.summarize`'s result) and
    save them to ``path``."""
    fig = figure(summary, title)
    path = Path(path)
    fig.savefig(path, dpi=100)
    return path


stacked_bars = profile_chart  # the name run folders have called it by


def figure(summary: dict[str, Any], title: str = ""):
    """The chart as a matplotlib ``Figure`` (Agg canvas), not yet saved."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = [_compile_panel(summary), _run_panel(summary)]
    if summary.get("device_by_scope"):
        panels.append(_device_panel(summary["device_by_scope"]))
    rows = max(len(bars) for _, bars, _ in panels)
    fig = Figure(figsize=(4.6 * len(panels), 1.7 + 0.32 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels))
    for ax, (heading, bars, unit) in zip(axes, panels, strict=True):
        _bars(ax, bars, unit)
        ax.set_title(heading, fontsize=10)
    fig.suptitle(f"{title} (profile: {summary['mode']})" if title else summary["mode"])
    return fig


def _compile_panel(summary: dict[str, Any]):
    compile_s, run_s = summary["compile_s"], summary["run_s"]
    share = compile_s / (compile_s + run_s) if compile_s + run_s > 0 else 0.0
    bars = [
        (name, row["compile_s"], None)
        for name, row in summary["programs"].items()
        if row["compile_s"] > 0
    ]
    heading = f"compile: {compile_s:.2f} s\n{share:.0%} of compile + run"
    if summary.get("compiled_together"):  # overlapping seconds: the bars sum to more
        heading += f"\n∥ compiled at once: bars sum to {summary['compile_programs_s']:.2f} s"
        bars = [
            (f"{name} ∥" if summary["programs"][name].get("together") else name, s, share)
            for name, s, share in bars
        ]
    return heading, bars, "s"


def _run_panel(summary: dict[str, Any]):
    run_s = summary["run_s"]
    share = (lambda s: s / run_s) if run_s > 0 else (lambda s: 0.0)
    bars = []
    for name, row in summary["programs"].items():
        if row["calls"]:
            bars.append((f"dispatch: {name}", row["dispatch_s"], share(row["dispatch_s"])))
            if row["device_s"] > 0:  # sync mode: the wait after each call
                bars.append((f"device: {name}", row["device_s"], share(row["device_s"])))
    programs_device = sum(row["device_s"] for row in summary["programs"].values())
    for label, key in _HOST:
        seconds = summary[key] - (programs_device if key == "device_wait_s" else 0.0)
        bars.append((label, seconds, share(seconds)))
    explained = sum(seconds for _, seconds, _ in bars)
    heading = (
        f"run: {run_s:.2f} s wall\nthese parts explain {share(explained):.0%} of it"
        if run_s > 0
        else "run: no time measured"
    )
    return heading, bars, "s"


def _device_panel(scoped: dict[str, Any]):
    busy = scoped["device_busy_s"] or 0.0
    window = scoped["window_s"] or 0.0
    bars = [
        (name, seconds * 1e3, seconds / busy if busy else 0.0)
        for name, seconds in sorted(scoped["device_exclusive_s"].items(), key=lambda kv: -kv[1])
    ]
    share = busy / window if window else 0.0
    heading = (
        f"device by fragment (traced window)\nbusy {busy * 1e3:.1f} of {window * 1e3:.1f} ms "
        f"({share:.0%})"
    )
    return heading, bars, "ms"


def _bars(ax, bars: list[tuple[str, float, float | None]], unit: str) -> None:
    """Horizontal bars, largest scale first, each labelled with its value and share; the axis
    runs far enough past the longest bar for its label."""
    names = [name for name, _, _ in bars]
    values = [max(0.0, value) for _, value, _ in bars]
    ax.barh(range(len(bars)), values, color="tab:blue" if unit == "s" else "tab:orange")
    ax.set_yticks(range(len(bars)), names, fontsize=8)
    ax.invert_yaxis()
    top = max(values, default=0.0) or 1.0
    for i, (value, (_, _, share)) in enumerate(zip(values, bars, strict=True)):
        text = f"{value:.3g} {unit}" + ("" if share is None else f" ({share:.0%})")
        ax.text(value + 0.02 * top, i, text, va="center", fontsize=8)
    ax.set_xlim(0, top * 1.55)  # room for the longest bar's label
    ax.set_xlabel(unit)
    ax.grid(axis="x", alpha=0.3)

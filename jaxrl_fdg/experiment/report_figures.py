"""The report's figures: aggregate intervals, performance profiles, probability of
improvement, sample efficiency and per-environment curves, drawn from the numbers
:mod:`jaxrl_fdg.experiment.report` computed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl_fdg import plots
from jaxrl_fdg.compare import TITLES, interval_bars
from jaxrl_fdg.experiment.report_text import scale


def draw(result: dict[str, Any], labels: Mapping[str, list[plots.Run]], out: Path) -> dict:
    """Draw the figures into ``out/figures``; ``{name: path relative to out}``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    folder = out / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    colors = {label: f"C{i}" for i, label in enumerate(labels)}
    figures = {"curves": _curves(result, labels, colors)}
    if "aggregates" in result:
        figures = {
            "aggregates": _aggregates(result, colors),
            "profiles": _profiles(result, colors),
            "improvement": _improvement(result, colors),
            "sample_efficiency": _sample_efficiency(result, colors),
            **figures,
        }
    made = {}
    for name, fig in figures.items():
        if fig is None:
            continue
        FigureCanvasAgg(fig)
        fig.savefig(folder / f"{name}.png", dpi=90)
        made[name] = f"figures/{name}.png"
    return made


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _aggregates(result: dict[str, Any], colors: Mapping[str, str]):
    aggregates = result["aggregates"]
    names = list(next(iter(aggregates.values())))
    fig = _figure(2.6 * len(names), 1.2 + 0.4 * len(aggregates))
    axes = np.atleast_1d(fig.subplots(1, len(names)))
    for ax, name in zip(axes, names, strict=True):
        interval_bars(
            ax, [(*_bounds(est[name]), colors[label]) for label, est in aggregates.items()]
        )
        ax.set_yticks(range(len(aggregates)), list(aggregates) if ax is axes[0] else [])
        ax.set_title(TITLES[name])
        ax.grid(axis="x", alpha=0.3)
    return fig


def _profiles(result: dict[str, Any], colors: Mapping[str, str]):
    profiles = result["profiles"]
    series = {k: (profiles[k]["fraction"], profiles[k]["low"], profiles[k]["high"]) for k in colors}
    x_label = f"{scale(result)} score τ"
    return _bands(
        profiles["thresholds"], series, colors, x_label, "fraction of runs with score > τ"
    )


def _improvement(result: dict[str, Any], colors: Mapping[str, str]):
    """One direction of each pair (P(Y > X) is 1 − P(X > Y)): X before Y in the order."""
    order = list(result["aggregates"])
    pairs = [p for p in result["improvement"] if order.index(p["x"]) < order.index(p["y"])]
    if not pairs:
        return None
    fig = _figure(5, 0.8 + 0.35 * len(pairs))
    ax = fig.subplots()
    interval_bars(ax, [(*_bounds(p), colors[p["x"]]) for p in pairs])
    ax.set_yticks(range(len(pairs)), [f"P({p['x']} > {p['y']})" for p in pairs])
    ax.axvline(0.5, color="gray", linestyle="--", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("probability of improvement")
    return fig


def _sample_efficiency(result: dict[str, Any], colors: Mapping[str, str]):
    eff = result["sample_efficiency"]
    series = {k: (eff[k]["iqm"], eff[k]["low"], eff[k]["high"]) for k in colors}
    y_label = f"IQM of {scale(result)} {eff['metric']}"
    return _bands(eff["env_steps"], series, colors, "env steps (per seed)", y_label)


def _bands(x, series: Mapping[str, tuple], colors: Mapping[str, str], x_label, y_label):
    """One panel: a line and its band per algorithm (env steps in engineering notation)."""
    from matplotlib.ticker import EngFormatter

    fig = _figure(5, 3.4)
    ax = fig.subplots()
    for label, (center, low, high) in series.items():
        _line(ax, np.asarray(x), center, low, high, colors[label], label)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if "env steps" in x_label:
        ax.xaxis.set_major_formatter(EngFormatter())
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def _curves(result: dict[str, Any], labels: Mapping[str, list[plots.Run]], colors):
    """A panel per environment: each algorithm's curve over its seeds, with an IQM band."""
    from matplotlib.ticker import EngFormatter

    envs = sorted({str(r.config.get("env")) for runs in labels.values() for r in runs})
    columns = min(3, len(envs))
    fig = _figure(4.2 * columns, 3.0 * math.ceil(len(envs) / columns))
    axes = np.atleast_1d(fig.subplots(math.ceil(len(envs) / columns), columns)).ravel()
    metric = result["curve_metric"]
    for ax, env in zip(axes, envs, strict=False):
        for label, runs in labels.items():
            mine = [r for r in runs if str(r.config.get("env")) == env]
            if mine:
                b = plots.band(mine, metric, "step", ci="iqm" if len(mine) > 1 else "std")
                _line(ax, b.x, b.center, b.low, b.high, colors[label], label)
        ax.set_title(env, fontsize=9)
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(EngFormatter())
        ax.grid(alpha=0.3)
    for ax in axes[len(envs) :]:
        ax.set_visible(False)
    axes[0].set_ylabel(metric)
    axes[0].legend(fontsize=8)
    return fig


def _bounds(e: Mapping[str, float]) -> tuple[float, float, float]:
    return e["point"], e["low"], e["high"]


def _line(ax, x, center, low, high, color: str, label: str) -> None:
    ax.plot(x, center, color=color, label=label)
    ax.fill_between(x, low, high, color=color, alpha=0.2)

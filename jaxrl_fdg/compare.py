"""``jaxrl-fdg compare``: groups of runs side by side, with robust statistics over seeds.

Runs are found and grouped as ``jaxrl-fdg plot`` finds and groups them (:mod:`jaxrl_fdg.plots`):
a run of several seeds or sweep points stands for its lanes' folders, and runs whose settings
differ only in the seed are one group. Each run scores the last value its rows hold of the
metric (by default ``eval_return``, the deterministic policy at the end, where every run
evaluated, else ``episode_return``); ``--normalize lo:hi``
maps scores to ``(score − lo) / (hi − lo)``. Per group: the IQM, mean, median and (normalized
scores only) optimality gap, each with a 95% stratified bootstrap interval
(:mod:`jaxrl_fdg.stats`), printed as a table and drawn beside the groups' performance profiles.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxrl_fdg import plots, stats
from jaxrl_fdg.errors import ConfigError, warn

DEFAULT_OUTPUT = "comparison.png"
DEFAULT_METRIC = "eval_return"  # the deterministic policy's return: runs with --eval-every
FALLBACK_METRIC = "episode_return"  # what every run logs
TITLES = {"median": "Median", "iqm": "IQM", "mean": "Mean", "optimality_gap": "Optimality gap"}


class GroupScores(NamedTuple):
    """One group's label, its runs' scores by environment (the bootstrap's strata, ``[runs]``
    each) and its aggregates with their intervals."""

    label: str
    strata: dict[str, np.ndarray]
    estimates: dict[str, stats.Interval]

    @property
    def runs(self) -> int:
        return sum(len(s) for s in self.strata.values())


class Comparison(NamedTuple):
    metric: str
    normalize: tuple[float, float] | None
    groups: list[GroupScores]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs", nargs="+", metavar="RUN_GROUP", help="a run folder, or a folder of them"
    )
    parser.add_argument(
        "--metric",
        help=f"metrics column (default: {DEFAULT_METRIC} where every run evaluated, "
        f"else {FALLBACK_METRIC})",
    )
    parser.add_argument(
        "--normalize",
        metavar="MIN:MAX",
        help="score s counts as (s - MIN) / (MAX - MIN); adds the optimality gap",
    )
    parser.add_argument("--out", metavar="PNG", help=f"image file (default: {DEFAULT_OUTPUT} here)")


def run(args: argparse.Namespace) -> int:
    """The command: compare, print the table, draw the figure."""
    output = Path(args.out or DEFAULT_OUTPUT)
    plots.check_image_path(output)
    comparison = compare(args.runs, args.metric, parse_normalize(args.normalize))
    print(table(comparison))
    draw(comparison, output)
    print(f"comparison: {output}")
    return 0


def parse_normalize(text: str | None) -> tuple[float, float] | None:
    """``"MIN:MAX"`` as two numbers with ``MIN < MAX`` (``None`` for no text)."""
    return None if text is None else parse_bounds(text)


def parse_bounds(text: str) -> tuple[float, float]:
    """``"MIN:MAX"`` as two numbers with ``MIN < MAX``."""
    try:
        low, high = (float(part) for part in text.split(":"))
    except ValueError:
        raise ConfigError(f"--normalize takes MIN:MAX (e.g. 0:500), got {text!r}") from None
    if not np.isfinite([low, high]).all() or low >= high:
        raise ConfigError(f"--normalize needs finite MIN < MAX, got {text!r}")
    return low, high


def compare(
    paths: Sequence[str | Path],
    metric: str | None = None,
    normalize: tuple[float, float] | None = None,
    *,
    resamples: int = stats.RESAMPLES,
    seed: int = 0,
) -> Comparison:
    """Score every run under ``paths`` and aggregate each group's scores. ``metric``:
    :data:`DEFAULT_METRIC` where every run's rows have it (runs that evaluate), else
    :data:`FALLBACK_METRIC` (with a warning saying so)."""
    runs = plots.find_runs(paths)
    metric = scored_metric(runs, metric)
    names = stats.AGGREGATES if normalize else stats.AGGREGATES[:-1]
    groups = []
    grouped = plots.group_runs(runs)
    for label, members in zip(plots.short_labels(grouped), (g.runs for g in grouped), strict=True):
        strata: dict[str, list[float]] = {}
        for member in members:
            score = final_score(member, metric)
            if normalize:
                score = (score - normalize[0]) / (normalize[1] - normalize[0])
            strata.setdefault(str(member.config.get("env")), []).append(score)
        scores = {env: np.asarray(values) for env, values in strata.items()}
        estimates = stats.interval_estimates(
            list(scores.values()), names, resamples=resamples, seed=seed
        )
        groups.append(GroupScores(label, scores, estimates))
    return Comparison(metric, normalize, groups)


def scored_metric(runs: Sequence[plots.Run], metric: str | None, *, say: bool = True) -> str:
    """The metric runs are scored by: ``metric`` where given (every run must have it), else
    :data:`DEFAULT_METRIC` where every run's rows have it, else :data:`FALLBACK_METRIC` (with
    a warning saying so, unless not ``say``)."""
    if metric is None:
        metric = DEFAULT_METRIC
        if not all(any(metric in row for row in run.rows) for run in runs):
            metric = FALLBACK_METRIC
            if say:
                warn(
                    f"comparing {FALLBACK_METRIC}: not every run has {DEFAULT_METRIC} (runs "
                    f"evaluate with --eval-every); give --metric {DEFAULT_METRIC} to require it"
                )
    plots.check_column(runs, metric)
    return metric


def final_score(run: plots.Run, metric: str) -> float:
    """The last finite value of ``metric`` in ``run``'s rows (a NaN or infinite one is passed
    over, with a warning naming its step)."""
    values = [r for r in run.rows if plots.is_number(r.get(metric))]
    finite = [r for r in values if math.isfinite(r[metric])]
    if values and not math.isfinite(values[-1][metric]):
        last = values[-1]
        warn(
            f"{str(run.path)!r}: {metric} at step {last.get('step', '?')} is {last[metric]}; "
            "the last finite value is its score"
        )
    if not finite:
        kind = "finite value" if values else "value"
        raise ConfigError(f"run {str(run.path)!r} has no {kind} of {metric!r} yet")
    return float(finite[-1][metric])


def table(comparison: Comparison) -> str:
    """The aggregates of each group, ``point [low, high]``, as a fixed-width table."""
    from rich.table import Table

    first = comparison.groups[0].estimates
    scale = " (normalized)" if comparison.normalize else ""
    title = f"{comparison.metric}{scale}: 95% stratified bootstrap intervals"
    out = Table(title=title, title_justify="left")
    out.add_column("group")
    out.add_column("runs", justify="right")
    for name in first:
        out.add_column(TITLES[name], justify="right")
    fmt = ".3f" if comparison.normalize else ".4g"
    for group in comparison.groups:
        cells = [
            f"{e.point:{fmt}} [{e.low:{fmt}}, {e.high:{fmt}}]" for e in group.estimates.values()
        ]
        out.add_row(group.label, str(group.runs), *cells)
    return as_text(out)


def as_text(table: Any) -> str:
    """A rich ``Table`` as plain fixed-width text, 120 columns, no trailing spaces."""
    from rich.console import Console

    console = Console(width=120, record=True, file=_Null())
    console.print(table)
    return "\n".join(line.rstrip() for line in console.export_text().rstrip().splitlines())


def draw(comparison: Comparison, path: Path, *, resamples: int = 2000) -> Path:
    """One panel per aggregate (each group's point and interval) and the performance profiles:
    the fraction of a group's runs that score above each threshold, with its interval band."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    groups = comparison.groups
    names = list(groups[0].estimates)
    height = 1.2 + 0.35 * len(groups)
    fig = Figure(figsize=(2.6 * len(names) + 4.2, max(3.0, height)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(names) + 1, width_ratios=[1] * len(names) + [1.6])
    colors = [f"C{i}" for i in range(len(groups))]
    for ax, name in zip(axes, names, strict=False):
        interval_bars(ax, [(*g.estimates[name], colors[i]) for i, g in enumerate(groups)])
        ax.set_yticks(range(len(groups)), [g.label for g in groups] if ax is axes[0] else [])
        ax.set_title(TITLES[name])
        ax.grid(axis="x", alpha=0.3)
    scale = " (normalized)" if comparison.normalize else ""
    axes[len(names) // 2].set_xlabel(f"{comparison.metric}{scale}")
    _profiles(axes[-1], comparison, colors, resamples)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    return path


def interval_bars(ax, rows: Sequence[tuple[float, float, float, str]]) -> None:
    """One bar per ``(point, low, high, color)``, top to bottom: the interval shaded, the point
    a black tick."""
    for i, (point, low, high, color) in enumerate(rows):
        ax.barh(i, high - low, left=low, height=0.6, color=color, alpha=0.6)
        ax.plot([point, point], [i - 0.3, i + 0.3], color="black", linewidth=1.5)
    ax.invert_yaxis()


def _profiles(ax, comparison: Comparison, colors: list[str], resamples: int) -> None:
    everything = np.concatenate([s for g in comparison.groups for s in g.strata.values()])
    low, high = (0.0, 1.0) if comparison.normalize else (everything.min(), everything.max())
    thresholds = np.linspace(low, high, 101)
    for group, color in zip(comparison.groups, colors, strict=True):
        fraction, lo, hi = stats.performance_profile(
            list(group.strata.values()), thresholds, resamples=resamples
        )
        ax.plot(thresholds, fraction, color=color, label=f"{group.label} ({group.runs} runs)")
        ax.fill_between(thresholds, lo, hi, color=color, alpha=0.2, linewidth=0)
    scale = " (normalized)" if comparison.normalize else ""
    ax.set_xlabel(f"{comparison.metric}{scale} τ")
    ax.set_ylabel("fraction of runs with score > τ")
    ax.set_title("Performance profile")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass

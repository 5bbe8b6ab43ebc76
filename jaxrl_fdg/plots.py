"""Learning curves from run folders (``jaxrl-fdg plot``).

Runs whose configurations are identical except for the seed (and where and under what name they
were written) are replicates of one experiment, drawn as one curve: the mean over seeds with a
±1 standard deviation band. Seeds log at their own steps (``log_every``, a shorter interrupted
run), so each is interpolated onto the union of its group's x values; at each x only the seeds
whose rows reach that far count, since extrapolating a seed that stopped early would flatten the
curve. Rows where the metric is empty (no episode finished yet) are skipped. Legend labels name
only the settings that differ between groups.

matplotlib is imported when a plot is drawn, never when the library is imported.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxrl_fdg.config import NOT_COMPUTED
from jaxrl_fdg.errors import ConfigError

DEFAULT_OUTPUT = "learning_curve.png"

# Settings that do not make two runs different experiments: the replicate's seed, and those that
# do not change what a run computes.
NOT_COMPARED = ("seed", *NOT_COMPUTED)

_UNSET = "unset"  # a setting one run's config has and another's lacks


class Run(NamedTuple):
    """One run folder: its settings (hyperparameters flattened in) and its metrics rows."""

    path: Path
    config: dict[str, Any]
    rows: list[dict[str, Any]]


class Group(NamedTuple):
    """Replicates of one experiment; ``label`` names what sets it apart from the other groups."""

    label: str
    runs: list[Run]


class Curve(NamedTuple):
    """A group's mean and standard deviation over seeds at each ``x``; ``seeds`` counts the
    seeds that reach each ``x``."""

    x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    seeds: np.ndarray


def plot_runs(
    paths: Sequence[str | Path],
    metric: str = "episode_return",
    x: str = "step",
    output: str | Path | None = None,
) -> Path:
    """Draw ``metric`` against ``x`` for the runs under ``paths``, one curve per group of seeds,
    and save it to ``output`` (default: :data:`DEFAULT_OUTPUT` in the run folder when there is
    one run, in the current directory otherwise). Returns the file written."""
    runs = find_runs(paths)
    columns = numeric_columns(runs)
    if metric not in columns:
        raise ConfigError(f"unknown metric {metric!r} (valid: {', '.join(columns)})")
    if x not in columns:
        raise ConfigError(f"unknown x-axis column {x!r} (valid: {', '.join(columns)})")
    if output is None:
        output = (runs[0].path if len(runs) == 1 else Path.cwd()) / DEFAULT_OUTPUT
    output = Path(output)

    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if output.suffix[1:].lower() not in formats:
        raise ConfigError(
            f"cannot write an image to {str(output)!r} (valid suffixes: {', '.join(formats)})"
        )
    curves = [(group, curve(group.runs, metric, x)) for group in group_runs(runs)]
    curves = [(group, c) for group, c in curves if len(c.x)]
    if not curves:
        raise ConfigError(f"metric {metric!r} has no values yet in the {len(runs)} run(s) given")
    _draw(curves, metric, x, _title(runs), output)
    return output


def find_runs(paths: Iterable[str | Path]) -> list[Run]:
    """Load each path as a run folder; a folder holding run folders stands for all of them. A run
    named twice (``runs runs/a``) counts once, or it would count as two seeds."""
    folders: dict[Path, Path] = {}
    for path in map(Path, paths):
        if not path.is_dir():
            raise ConfigError(f"run folder {str(path)!r} does not exist")
        if (path / "metrics.jsonl").is_file():
            inner = [path]
        else:
            inner = sorted(p for p in path.iterdir() if (p / "metrics.jsonl").is_file())
        if not inner:
            raise ConfigError(f"{str(path)!r} is not a run folder (no metrics.jsonl) nor holds one")
        for folder in inner:
            folders.setdefault(folder.resolve(), folder)
    return [load_run(folder) for folder in folders.values()]


def load_run(path: Path) -> Run:
    """Read ``config.toml`` and ``metrics.jsonl``. A last line without its newline is a row still
    being written, and is left out."""
    config_file, metrics_file = path / "config.toml", path / "metrics.jsonl"
    if not config_file.is_file():
        raise ConfigError(f"{str(path)!r} is not a run folder (no config.toml)")
    try:
        config = tomllib.loads(config_file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{str(config_file)!r} is not valid toml: {e}") from None
    lines = metrics_file.read_text().split("\n")[:-1]
    try:
        rows = [json.loads(line) for line in lines if line]
    except json.JSONDecodeError as e:
        raise ConfigError(f"{str(metrics_file)!r} is not valid JSON lines: {e}") from None
    if not rows:
        raise ConfigError(f"run folder {str(path)!r} has no metrics rows yet")
    return Run(path, _flatten(config), rows)


def numeric_columns(runs: Sequence[Run]) -> list[str]:
    """Columns every run has whose values are all numbers or empty, in the first run's order."""
    common = [key for key in runs[0].rows[0] if all(key in run.rows[0] for run in runs)]
    return [
        key
        for key in common
        if all(v is None or _is_number(v) for run in runs for v in (r.get(key) for r in run.rows))
    ]


def group_runs(runs: Sequence[Run]) -> list[Group]:
    """Group runs whose settings are equal apart from :data:`NOT_COMPARED`, in order of first
    appearance; label each group with ``key=value`` for every setting that differs between
    groups (empty when there is one group)."""
    keys = list(dict.fromkeys(k for run in runs for k in run.config if k not in NOT_COMPARED))
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        signature = tuple(_freeze(run.config.get(k, _UNSET)) for k in keys)
        groups.setdefault(signature, []).append(run)
    differing = [i for i in range(len(keys)) if len({sig[i] for sig in groups}) > 1]
    return [
        Group(", ".join(f"{keys[i]}={_format(sig[i])}" for i in differing), members)
        for sig, members in groups.items()
    ]


def curve(runs: Sequence[Run], metric: str, x: str) -> Curve:
    """Mean and standard deviation over ``runs`` of ``metric`` at each ``x`` any run logged,
    each run interpolated linearly between its own rows and absent outside them."""
    series = []
    for run in runs:
        points = {r[x]: r.get(metric) for r in run.rows if _is_number(r.get(x))}
        points = sorted((float(k), float(v)) for k, v in points.items() if _is_number(v))
        if points:
            series.append(np.asarray(points).T)
    if not series:
        empty = np.zeros(0)
        return Curve(empty, empty, empty, np.zeros(0, int))
    grid = np.unique(np.concatenate([xs for xs, _ in series]))
    values = np.full((len(series), len(grid)), np.nan)
    for i, (xs, ys) in enumerate(series):
        inside = (grid >= xs[0]) & (grid <= xs[-1])
        values[i, inside] = np.interp(grid[inside], xs, ys)
    return Curve(
        grid,
        np.nanmean(values, axis=0),
        np.nanstd(values, axis=0),
        np.sum(~np.isnan(values), axis=0),
    )


def _draw(curves: list[tuple[Group, Curve]], metric: str, x: str, title: str, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for group, c in curves:
        seeds = f"{c.seeds.max()} seed{'s' if c.seeds.max() > 1 else ''}"
        label = f"{group.label} ({seeds})" if group.label else seeds
        (line,) = ax.plot(c.x, c.mean, label=label)
        ax.fill_between(
            c.x, c.mean - c.std, c.mean + c.std, color=line.get_color(), alpha=0.2, linewidth=0
        )
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.set_title(f"{title}: mean ± 1 std over seeds" if title else "mean ± 1 std over seeds")
    ax.grid(alpha=0.3)
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def _title(runs: Sequence[Run]) -> str:
    """What every run shares of algorithm and environment, e.g. ``ppo on CartPole-v1``."""
    shared = [
        str(runs[0].config[key])
        for key in ("algo", "env")
        if key in runs[0].config and all(r.config.get(key) == runs[0].config[key] for r in runs)
    ]
    return " on ".join(shared)


def _flatten(config: dict[str, Any]) -> dict[str, Any]:
    """Top-level settings, then the hyperparameters by their own names (``lr``, not
    ``hparams.lr``) unless a top-level setting has the same name."""
    flat = {k: v for k, v in config.items() if k != "hparams"}
    for key, value in config.get("hparams", {}).items():
        flat[f"hparams.{key}" if key in flat else key] = value
    return flat


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a setting's value (TOML arrays become tuples)."""
    if isinstance(value, list):
        return tuple(map(_freeze, value))
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _format(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_format, value)) + ")"
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

"""Learning curves from run folders (``jaxrl-fdg plot``).

Runs whose configurations are identical except for the seed (and where and under what name they
were written) are replicates of one experiment, drawn as one curve: the mean over seeds with a
±1 standard deviation band, or (``ci="iqm"``) the interquartile mean with its 95% bootstrap
interval. A run of several seeds or sweep points stands for its lanes' own folders. Each seed
is interpolated onto the union of its group's x values (seeds log at their own steps); at each
x only the seeds whose rows reach that far count (extrapolating one that stopped early would
flatten the curve). Rows where the metric is empty are skipped. Legend labels name only the
settings that differ between groups.

matplotlib is imported when a plot is drawn, never when the library is imported.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxrl_fdg import plugins
from jaxrl_fdg.config import NOT_COMPUTED
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.run.metrics import WALL_CLOCK

DEFAULT_OUTPUT = "learning_curve.png"
CI_KINDS = ("std", "iqm")  # the band around each curve (``--ci``)
_BANDS = {"std": "mean ± 1 std over seeds", "iqm": "IQM, 95% bootstrap interval over seeds"}
BAND_RESAMPLES = 1000  # per x value: enough for a band drawn, not for a table

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
    """Replicates of one experiment; ``label`` names what sets it apart from the other groups,
    ``settings`` the same as ``(name, value)`` pairs."""

    label: str
    runs: list[Run]
    settings: tuple[tuple[str, Any], ...] = ()


class Curve(NamedTuple):
    """A group's mean and standard deviation over seeds at each ``x``; ``seeds`` counts the
    seeds that reach each ``x``."""

    x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    seeds: np.ndarray


class Band(NamedTuple):
    """A group's curve as drawn: its centre line and band at each ``x``, and the seeds that reach
    each ``x``."""

    x: np.ndarray
    center: np.ndarray
    low: np.ndarray
    high: np.ndarray
    seeds: np.ndarray


def plot_runs(
    paths: Sequence[str | Path],
    metric: str = "episode_return",
    x: str = "step",
    output: str | Path | None = None,
    ci: str = "std",
) -> Path:
    """Draw ``metric`` against ``x`` for the runs under ``paths``, one curve per group of seeds
    (a panel per environment), and save it to ``output`` (default: :data:`DEFAULT_OUTPUT` in the
    run folder when there is one run, else in the folder the paths share, ``runs/`` for
    ``plot runs``). ``ci`` is the band: ``std`` (mean ± 1 standard
    deviation) or ``iqm`` (the IQM and its 95% bootstrap interval). Returns the file written."""
    if ci not in CI_KINDS:
        raise ConfigError(f"unknown band {ci!r} (valid: {', '.join(CI_KINDS)})")
    runs = find_runs(paths)
    check_column(runs, metric)
    check_column(runs, x, "x-axis column")
    if output is None:
        output = _folder_of(paths, runs) / DEFAULT_OUTPUT
    output = check_image_path(Path(output))
    curves = [(group, band(group.runs, metric, x, ci)) for group in group_runs(runs)]
    curves = [(group, c) for group, c in curves if len(c.x)]
    if not curves:
        raise ConfigError(f"metric {metric!r} has no values yet in the {len(runs)} run(s) given")
    _draw(curves, metric, x, _title(runs, ci, max(c.seeds.max() for _, c in curves)), output)
    return output


def check_image_path(output: Path) -> Path:
    """``output``, if matplotlib can write an image of its suffix."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if output.suffix[1:].lower() not in formats:
        raise ConfigError(
            f"cannot write an image to {str(output)!r} (valid suffixes: {', '.join(formats)})"
        )
    return output


def find_runs(paths: Iterable[str | Path]) -> list[Run]:
    """Load each path as a run folder; a folder holding run folders stands for all of them, and
    a run of several lanes (``--num-seeds``, a sweep) for its lanes' own folders (``seed-<seed>``,
    ``<name>=<value>-seed-<seed>``), or its lanes' table (more lanes than
    ``run.lanes.LANE_FOLDERS_MAX``), not for its rows averaged over them. A run named twice
    (``runs runs/a``) counts once, or it would count as two seeds."""
    folders: dict[Path, Path | Run] = {}
    for path in map(Path, paths):
        if path.exists() and not path.is_dir():
            hint = f" (give its folder, {str(path.parent)!r})" if _is_run(path.parent) else ""
            raise ConfigError(f"{str(path)!r} is a file, not a run folder{hint}")
        if not path.is_dir():
            raise ConfigError(f"run folder {str(path)!r} does not exist")
        try:
            if _is_run(path):
                inner = _lanes(path)
            else:
                inner = [lane for p in sorted(path.iterdir()) if _is_run(p) for lane in _lanes(p)]
        except OSError as e:
            raise ConfigError(f"cannot read {str(path)!r}: {e.strerror}") from None
        if not inner:
            raise ConfigError(f"{str(path)!r} is not a run folder (no metrics.jsonl) nor holds one")
        for folder in inner:
            folders.setdefault(
                (folder if isinstance(folder, Path) else folder.path).resolve(), folder
            )
    runs = []
    for folder in folders.values():
        if isinstance(folder, Run):  # a lane of a table, read already
            runs.append(folder)
            continue
        try:
            runs.append(load_run(folder))
        except OSError as e:
            raise ConfigError(f"cannot read run folder {str(folder)!r}: {e.strerror}") from None
    return runs


def _is_run(path: Path) -> bool:
    return (path / "metrics.jsonl").is_file()


def _lanes(run: Path) -> list[Path | Run]:
    """The run folders of a run's lanes in the order of their numbers (``seed-2`` before
    ``seed-10``, ``lr=0.0003`` before ``lr=0.001``), or its lanes read from their table (in the
    lanes' order, each at ``<run>/<lane name>``), or the run itself when it has one lane."""
    from jaxrl_fdg.run import lanes

    if (run / lanes.INDEX).is_file() and (run / f"{lanes.TABLE}.jsonl").is_file():
        found = []
        for name, config, rows in lanes.read_table(run):
            if not rows:
                raise ConfigError(f"lane {name!r} of {str(run)!r} has no metrics rows yet")
            found.append(Run(run / name, _flatten(config), rows))
        return found
    return sorted((p for p in run.iterdir() if _is_run(p)), key=_by_numbers) or [run]


def _by_numbers(path: Path) -> tuple:
    pieces = re.split(r"(\d+(?:\.\d+)?(?:e-?\d+)?)", path.name)
    return tuple((1, piece) if i % 2 == 0 else (0, float(piece)) for i, piece in enumerate(pieces))


def load_run(path: Path) -> Run:
    """Read ``config.toml`` and ``metrics.jsonl``. A last line without its newline is a row still
    being written, and is left out."""
    config_file, metrics_file = path / "config.toml", path / "metrics.jsonl"
    if not config_file.is_file():
        raise ConfigError(f"{str(path)!r} is not a run folder (no config.toml)")
    try:
        config = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{str(config_file)!r} is not valid toml: {e}") from None
    lines = metrics_file.read_text(encoding="utf-8", errors="replace").split("\n")[:-1]
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{str(metrics_file)!r} line {number} is not JSON: {e}") from None
        if not isinstance(row, dict):
            raise ConfigError(
                f"{str(metrics_file)!r} line {number} is not a metrics row (a JSON object of "
                f"columns), it is {type(row).__name__} {line[:40]!r}"
            )
        rows.append(row)
    if not rows:
        raise ConfigError(f"run folder {str(path)!r} has no metrics rows yet")
    return Run(path, _flatten(config), rows)


def check_column(runs: Sequence[Run], name: str, what: str = "metric") -> None:
    """Raise :class:`ConfigError` unless every run's rows hold ``name`` as numbers (or empty),
    naming the run that lacks it or the row whose value is not a number."""
    if name in numeric_columns(runs):
        return
    for run in runs:
        if not any(name in row for row in run.rows):
            if not any(name in row for r in runs for row in r.rows):
                break
            raise ConfigError(
                f"{what} {name!r} is not in the rows of {str(run.path)!r} "
                f"(its columns: {', '.join(run.rows[0])})"
            )
        for number, row in enumerate(run.rows, 1):
            value = row.get(name)
            if value is not None and not is_number(value):
                raise ConfigError(
                    f"{what} {name!r} is not a number in row {number} of "
                    f"{str(run.path / 'metrics.jsonl')!r}: {value!r}"
                )
    valid = ", ".join(numeric_columns(runs))
    raise ConfigError(f"unknown {what} {name!r} (valid: {valid})")


def numeric_columns(runs: Sequence[Run]) -> list[str]:
    """Columns every run has (in some row: a row without one is empty there) whose values are
    all numbers or empty, in the order they first appear."""
    keys = [list(dict.fromkeys(k for row in run.rows for k in row)) for run in runs]
    common = [key for key in keys[0] if all(key in other for other in keys[1:])]
    return [
        key
        for key in common
        if all(v is None or is_number(v) for run in runs for v in (r.get(key) for r in run.rows))
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
    out = []
    for sig, members in groups.items():
        settings = tuple((keys[i], sig[i]) for i in differing)
        out.append(Group(format_settings(settings), _one_per_seed(members), settings))
    return out


def _one_per_seed(runs: list[Run]) -> list[Run]:
    """Runs of one experiment with one seed are one replicate: the one with the most all-finite
    rows counts, and a warning names the others unless their rows agree beyond wall-clock time."""

    def results(run: Run) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in WALL_CLOCK} for r in run.rows]

    by_seed: dict[Any, list[Run]] = {}
    for run in runs:
        by_seed.setdefault(_freeze(run.config.get("seed")), []).append(run)
    kept = []
    for seed, same in by_seed.items():
        best = max(same, key=_finite_rows)
        kept.append(best)
        others = [str(run.path) for run in same if results(run) != results(best)]
        if others:
            warn(
                f"{', '.join(others)} and {str(best.path)!r} are one experiment with seed "
                f"{seed}, with other results: counted once, as {str(best.path)!r}"
            )
    return kept


def _finite_rows(run: Run) -> int:
    return sum(all(not is_number(v) or math.isfinite(v) for v in row.values()) for row in run.rows)


def short_labels(groups: Sequence[Group], skip: Sequence[str] = ()) -> list[str]:
    """Each group's shortest label that still tells it apart: the fewest of the settings that
    differ between groups, in order (``algo=ppo`` rather than every hyperparameter in which PPO
    and A2C differ), leaving out the settings in ``skip`` (what a panel's title says already);
    ``all runs`` for a single group."""
    if len(groups) < 2:
        return [group.label or "all runs" for group in groups]
    settings = [tuple(kv for kv in group.settings if kv[0] not in skip) for group in groups]
    for n in range(1, max(map(len, settings), default=0) + 1):
        labels = [format_settings(kept[:n]) for kept in settings]
        if len(set(labels)) == len(labels):
            return labels
    return [group.label for group in groups]


def format_settings(settings: Sequence[tuple[str, Any]]) -> str:
    """``name=value`` for each setting, e.g. ``fusion=scan, lr=0.001``."""
    return ", ".join(f"{name}={_format(value)}" for name, value in settings)


def curve(runs: Sequence[Run], metric: str, x: str) -> Curve:
    """Mean and standard deviation over ``runs`` of ``metric`` at each ``x`` any run logged,
    each run interpolated linearly between its own rows and absent outside them."""
    grid, values = _aligned(runs, metric, x)
    return Curve(
        grid,
        np.nanmean(values, axis=0) if len(grid) else grid,
        np.nanstd(values, axis=0) if len(grid) else grid,
        np.sum(~np.isnan(values), axis=0),
    )


def band(runs: Sequence[Run], metric: str, x: str, ci: str = "std") -> Band:
    """The curve drawn for ``runs``: mean ± 1 standard deviation (``ci="std"``), or the IQM
    with its 95% bootstrap interval over the seeds that reach each ``x`` (``ci="iqm"``; see
    :mod:`jaxrl_fdg.stats`)."""
    if ci == "std":
        c = curve(runs, metric, x)
        return Band(c.x, c.mean, c.mean - c.std, c.mean + c.std, c.seeds)
    from jaxrl_fdg import stats

    grid, values = _aligned(runs, metric, x)
    estimates = [
        stats.interval_estimates([column[~np.isnan(column)]], ("iqm",), resamples=BAND_RESAMPLES)
        for column in values.T
    ]
    center, low, high = (np.array([e["iqm"][i] for e in estimates]) for i in range(3))
    return Band(grid, center, low, high, np.sum(~np.isnan(values), axis=0))


def _aligned(runs: Sequence[Run], metric: str, x: str) -> tuple[np.ndarray, np.ndarray]:
    """The union of the runs' ``x`` values (``[X]``) and each run's ``metric`` interpolated there
    (``[runs, X]``; NaN outside a run's own rows). Runs with no value at all are left out."""
    series = []
    for run in runs:
        points = {r[x]: r.get(metric) for r in run.rows if is_number(r.get(x))}
        bad = sorted(k for k, v in points.items() if is_number(v) and not math.isfinite(v))
        if bad:
            at = ", ".join(map(_format, bad[:5])) + (" and more" if len(bad) > 5 else "")
            warn(f"{str(run.path)!r}: {metric} is NaN or infinite at {x} {at}; left out")
        points = sorted(
            (float(k), float(v)) for k, v in points.items() if is_number(v) and math.isfinite(v)
        )
        if points:
            series.append(np.asarray(points).T)
    if not series:
        return np.zeros(0), np.zeros((0, 0))
    grid = np.unique(np.concatenate([xs for xs, _ in series]))
    values = np.full((len(series), len(grid)), np.nan)
    for i, (xs, ys) in enumerate(series):
        inside = (grid >= xs[0]) & (grid <= xs[-1])
        values[i, inside] = np.interp(grid[inside], xs, ys)
    return grid, values


def _draw(curves: list[tuple[Group, Band]], metric: str, x: str, title: str, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # One panel per environment: returns of CartPole and Pendulum share no scale.
    panels: dict[str, list[tuple[Group, Band]]] = {}
    for group, band_ in curves:
        panels.setdefault(str(group.runs[0].config.get("env", "")), []).append((group, band_))
    faceted = len(panels) > 1
    fig = Figure(figsize=(7 if not faceted else 5 * len(panels), 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (env, members) in zip(axes, panels.items(), strict=True):
        groups = [group for group, _ in members]
        labels = (
            short_labels(groups, skip=("env",) if faceted else ()) if len(members) > 1 else [""]
        )
        for (_, c), name in zip(members, labels, strict=True):
            seeds = f"{c.seeds.max()} seed{'s' if c.seeds.max() > 1 else ''}"
            label = f"{name} ({seeds})" if name else seeds
            (line,) = ax.plot(c.x, c.center, label=label)
            ax.fill_between(c.x, c.low, c.high, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_xlabel(x)
        ax.set_ylabel(metric)
        ax.set_title(plugins.display_name(env) if faceted else title)
        ax.grid(alpha=0.3)
        ax.legend()
    if faceted:
        fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def _folder_of(paths: Sequence[str | Path], runs: Sequence[Run]) -> Path:
    """Where a plot goes by default: one run's folder, else the one the paths share (``runs/``)."""
    if len(runs) == 1:
        return runs[0].path
    return Path(os.path.commonpath([Path(p).resolve() for p in paths]))


def _title(runs: Sequence[Run], ci: str, seeds: int) -> str:
    """What every run shares of algorithm and environment (``ppo on CartPole-v1``), then what the
    band is; a curve of one seed has no band, and the title claims none."""
    shared = [
        plugins.display_name(str(runs[0].config[key]))
        for key in ("algo", "env")
        if key in runs[0].config and all(r.config.get(key) == runs[0].config[key] for r in runs)
    ]
    what = _BANDS[ci] if seeds > 1 else "one seed"
    return f"{' on '.join(shared)}: {what}" if shared else what


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


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

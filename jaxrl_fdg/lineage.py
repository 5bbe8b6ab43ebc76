"""A population's lineage (``jaxrl-fdg plot RUN --lineage``): each lane's metric and swept
hyperparameters over the run, and each copy a lane made of another.

A run with population-based training (``--pbt-every``) writes ``population.json`` (its lanes in
the order of the vmapped axis) and, in each lane's rows, ``pbt/<name>`` (its hyperparameters),
``pbt/parent`` (the index of the lane it last copied) and ``pbt/copied_at`` (the iteration it
did). :func:`lineage` reads them back; :func:`plot_lineage` draws them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.plots import check_image_path, load_run
from jaxrl_fdg.run import lanes
from jaxrl_fdg.run.run_folder import POPULATION_FILE

DEFAULT_OUTPUT = "lineage.png"


class Copy(NamedTuple):
    """Lane ``child`` copied lane ``parent`` (indices) at ``iteration``, ``step`` env steps; under
    successive halving, started a new point there (``parent`` -1)."""

    child: int
    parent: int
    iteration: int
    step: float


class Lineage(NamedTuple):
    """A population read back: lane names in vmapped order, each lane's rows, the swept
    hyperparameters' names, every copy (or restart) in order, and its column prefix."""

    names: list[str]
    rows: list[list[dict[str, Any]]]
    hparams: list[str]
    copies: list[Copy]
    prefix: str = "pbt/"


def lineage(run: str | Path) -> Lineage:
    """Read the lineage of the population in run folder ``run`` (``--pbt-every`` or
    ``--halving-every``)."""
    run = Path(run)
    path = run / POPULATION_FILE
    if not path.is_file():
        raise ConfigError(
            f"{str(run)!r} is not a population's run (no {POPULATION_FILE}; train with "
            "--pbt-every or --halving-every)"
        )
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["lanes"]
        names = [entry["name"] for entry in sorted(entries, key=lambda entry: entry["lane"])]
    except (ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{str(path)!r} is not a population file: {e}") from None
    if (run / lanes.INDEX).is_file():  # the lanes' rows in one table
        tabled = {name: rows for name, _, rows in lanes.read_table(run)}
        rows = [tabled[name] for name in names]
    else:
        rows = [load_run(run / name).rows for name in names]
    halving = any(k.startswith("halving/") for k in rows[0][0])
    prefix, since = ("halving/", "started_at") if halving else ("pbt/", "copied_at")
    own = {"parent", "copied_at", "score", "seed", "started_at"}
    hparams = sorted({k[len(prefix) :] for k in rows[0][0] if k.startswith(prefix)} - own)
    copies = []
    for child, lane_rows in enumerate(rows):
        last = 0 if halving else -1  # a lane's first point starts at 0; it has copied no one
        for row in lane_rows:
            at = int(row.get(prefix + since, -1))
            if at >= 0 and at != last:
                step = at * row["step"] / row["iteration"]
                copies.append(Copy(child, int(row.get("pbt/parent", -1)), at, step))
            last = at
    copies.sort(key=lambda c: (c.iteration, c.child))
    return Lineage(names, rows, hparams, copies, prefix)


def plot_lineage(
    run: str | Path, metric: str = "episode_return", output: str | Path | None = None
) -> Path:
    """Draw the population of ``run``: ``metric`` of each lane, then each swept hyperparameter,
    against env steps; a copy is a dashed line from the parent's value to the child's, a
    restart (successive halving) a dot at the new point's value. Saves to
    ``output`` (default: :data:`DEFAULT_OUTPUT` in the run folder); returns the file written."""
    found = lineage(run)
    if metric not in found.rows[0][0]:
        columns = sorted(k for k in found.rows[0][0] if not k.startswith(found.prefix))
        raise ConfigError(
            f"metric {metric!r} is not a column of the lanes' rows ({', '.join(columns)})"
        )
    output = check_image_path(Path(output) if output is not None else Path(run) / DEFAULT_OUTPUT)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [metric, *(found.prefix + name for name in found.hparams)]
    fig, axes = plt.subplots(
        len(panels), 1, sharex=True, figsize=(8, 2.2 * len(panels) + 0.6), squeeze=False
    )
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(found.names)))
    for ax, column in zip(axes[:, 0], panels, strict=True):
        for lane, (name, rows) in enumerate(zip(found.names, found.rows, strict=True)):
            x, y = _series(rows, column)
            ax.plot(x, y, color=colors[lane], lw=1.2, label=name, drawstyle="steps-post")
        if column != metric:
            for c in found.copies:
                after = _value_at(found.rows[c.child], column, c.step)
                if c.parent >= 0:  # a copy: from the parent's value to the child's
                    before = _value_at(found.rows[c.parent], column, c.step)
                    ax.plot([c.step, c.step], [before, after], color="0.4", ls="--", lw=0.8)
                ax.plot([c.step], [after], "o", color=colors[c.child], ms=3)
            values = np.concatenate([_series(rows, column)[1] for rows in found.rows])
            values = values[np.isfinite(values)]
            if len(values) and values.min() > 0 and values.max() / values.min() > 20:
                ax.set_yscale("log")
        ax.set_ylabel(column.removeprefix(found.prefix))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("env steps")
    events = "copies (dashed)" if found.prefix == "pbt/" else "restarts on new points (dots)"
    axes[0, 0].set_title(
        f"{Path(run).name}: {len(found.names)} lanes, {len(found.copies)} {events}"
    )
    if len(found.names) <= 16:
        axes[0, 0].legend(fontsize=6, ncol=2, loc="best")
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)
    return output


def _series(rows: list[dict[str, Any]], column: str) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(r["step"], r[column]) for r in rows if r.get(column) is not None]
    if not pairs:
        return np.zeros(0), np.zeros(0)
    x, y = zip(*pairs, strict=True)
    return np.asarray(x, float), np.asarray(y, float)


def _value_at(rows: list[dict[str, Any]], column: str, step: float) -> float:
    """The lane's value of ``column`` in its last row up to ``step`` (its first, if none)."""
    x, y = _series(rows, column)
    earlier = np.flatnonzero(x <= step)
    return float(y[earlier[-1]] if len(earlier) else y[0])

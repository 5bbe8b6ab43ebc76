"""Where a run of several lanes (``--num-seeds``, a sweep) writes each lane's own rows.

Up to :data:`LANE_FOLDERS_MAX` lanes, each lane gets a run folder of its own inside the run's
folder, ``seed-<seed>/`` or ``<name>=<value>-seed-<seed>/``: its config (that run alone) and its
metrics files. Beyond it (a population of hundreds or thousands of lanes), a folder per lane would
be thousands of small files written at every host boundary; the lanes' rows go to one table in
the run folder instead:

- :data:`INDEX` (``lanes.json``): each lane's index, folder name, seed and sweep point;
- :data:`TABLE` (``lane_metrics.jsonl`` and ``lane_metrics.csv``): every lane's rows, each with
  a ``lane`` column, in order of iteration and lane.

A lane's config is then the run's with its seed and point (``num_seeds = 1``). ``jaxrl-fdg
plot`` and ``compare`` read both layouts as one run per lane (:func:`read_table`); a resume keeps
the layout the run has.
"""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

from jaxrl_fdg.config import Resolved, make_hparams, to_mapping
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run.run_folder import POPULATION_FILE, RunFolder

# More lanes than this write one table (INDEX, TABLE) instead of a run folder per lane.
LANE_FOLDERS_MAX = 64
INDEX = "lanes.json"
TABLE = "lane_metrics"


class LaneLog:
    """The lanes' rows of one run: into a folder per lane (``folders``) or one ``table``."""

    def __init__(self, folders: list[RunFolder], table: RunFolder | None = None):
        self.folders, self.table = folders, table

    def append(self, rows: list[dict[str, Any]]) -> None:
        """One row per lane, in the lanes' order."""
        if self.table is not None:
            for lane, row in enumerate(rows):
                self.table.append_metrics({"lane": lane, **row})
        else:
            for folder, row in zip(self.folders, rows, strict=True):
                folder.append_metrics(row)

    def close(self) -> None:
        for folder in self.folders if self.table is None else [self.table]:
            folder.close()


def open_lanes(
    folder: RunFolder | None, resolved: Resolved, resume, iteration: int
) -> LaneLog | None:
    """The run's :class:`LaneLog` (``None`` for a run of one lane, or without a folder): made
    once the programs compile (a run refused for its size writes none); a resume keeps each
    lane's rows up to ``iteration``, and the layout the run has."""
    if folder is None or len(resolved.lanes) == 1:
        return None
    config = resolved.config
    if (config.pbt_every or config.halving_every) and not (
        resume is not None and (folder.path / POPULATION_FILE).is_file()
    ):  # a resumed population keeps the names its folders were made with
        folder.write_json(POPULATION_FILE, population(resolved))
    tabled = (folder.path / INDEX).is_file()
    if resume is None or not (tabled or (folder.path / resolved.lanes[0].name).is_dir()):
        tabled = len(resolved.lanes) > LANE_FOLDERS_MAX  # a fresh run (or none made yet)
    if not tabled:
        return LaneLog(_lane_folders(folder, resolved, resume, iteration))
    table = RunFolder(folder.path, metrics=TABLE)
    table.tensorboard = False  # thousands of lanes' scalars: the run's own rows have events
    if resume is not None and (folder.path / INDEX).is_file():
        table.truncate_metrics(iteration, quiet=True)
    else:
        folder.write_json(INDEX, index(resolved))
    return LaneLog([], table)


def index(resolved: Resolved) -> dict[str, Any]:
    """What :data:`INDEX` holds: each lane's index, folder name, seed and sweep point."""
    lanes = [
        {"lane": i, "name": lane.name, "seed": lane.seed, "point": dict(lane.point)}
        for i, lane in enumerate(resolved.lanes)
    ]
    return {"lanes": lanes}


def population(resolved: Resolved) -> dict[str, Any]:
    """What ``population.json`` holds: a population's settings and its lanes in the order of
    the vmapped axis, whose index ``pbt/parent`` gives (the lane folders sort otherwise)."""
    config = resolved.config
    settings = (
        ("halving_every", "halving_drop")
        if config.halving_every
        else ("pbt_every", "pbt_quantile", "pbt_perturb", "pbt_resample")
    )
    settings = {k: getattr(config, k) for k in (*settings, "rank_metric")}
    return {"settings": settings, "lanes": index(resolved)["lanes"]}


def _lane_folders(folder: RunFolder, resolved: Resolved, resume, iteration: int) -> list:
    """A run folder of its own for each lane: its config (that run alone) and its metrics."""
    config, folders = resolved.config, []
    for lane in resolved.lanes:
        path = folder.path / lane.name
        if resume is not None and not path.exists() and (folder.path / lane.point_name).is_dir():
            path = folder.path / lane.point_name  # a population's folder named before lane-<i>
        if resume is not None and (path / "config.toml").is_file():
            folders.append(RunFolder.open(path))
            folders[-1].truncate_metrics(iteration, quiet=True)
            continue
        try:
            path.mkdir(exist_ok=resume is not None)
        except (FileExistsError, NotADirectoryError):
            raise ConfigError(f"{str(path)!r} is a file, not a lane's run folder") from None
        hparams = {**config.hparams, **lane.point}
        single = resolved._replace(  # that run alone; nothing to check or build again
            config=config.replace(seed=lane.seed, num_seeds=1, num_lanes=0, hparams=hparams),
            hparams=make_hparams(resolved.spec, hparams),
            sweep={},
        )
        folders.append(RunFolder(path))
        folders[-1].write_config(to_mapping(single))
    return folders


def read_table(run: Path) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """``(name, config, rows)`` of each lane of a run whose lanes' rows are one table: the
    config as the lane's own folder would hold it, the rows without their ``lane`` column.
    A row still being written (no newline yet) is left out."""
    try:
        config = tomllib.loads((run / "config.toml").read_text(encoding="utf-8"))
        lanes = json.loads((run / INDEX).read_text(encoding="utf-8"))["lanes"]
        names = [(lane["name"], lane["seed"], dict(lane["point"])) for lane in lanes]
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{str(run)!r}: its lanes cannot be read ({e})") from None
    rows: list[list[dict[str, Any]]] = [[] for _ in names]
    table = run / f"{TABLE}.jsonl"
    lines = table.read_text(encoding="utf-8", errors="replace").split("\n")[:-1]
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            lane = row.pop("lane")
            rows[lane].append(row)
        except (ValueError, AttributeError, KeyError, TypeError, IndexError):
            raise ConfigError(f"{str(table)!r} line {number} is not a lane's metrics row") from None
    found = []
    for (name, seed, point), lane_rows in zip(names, rows, strict=True):
        lane_config = copy.deepcopy(config)
        lane_config.update(seed=seed, num_seeds=1, num_lanes=0)
        lane_config.setdefault("hparams", {}).update(point)
        found.append((name, lane_config, lane_rows))
    return found

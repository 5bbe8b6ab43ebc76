"""An experiment's folder, and what each cell's state is read from.

Layout::

    DIR/experiment.json     the file as given, its cells (each with the digest of its
                            definition), the cells left out and why, the versions at creation
    DIR/configs/CELL.toml   each cell's run configuration: ``jaxrl-fdg train --config`` runs it
    DIR/cells/CELL/         each cell's run folder, as ``jaxrl-fdg train`` writes it
    DIR/logs/CELL.log       what each attempt at the cell printed
    DIR/attempts.jsonl      one line per attempt: cell, command, executor, start, end, exit
    DIR/report.md ...       written by ``jaxrl-fdg report DIR``

Nothing holds a cell's state but its run folder: ``done`` (its summary says completed),
``running`` (a process holds its lock), ``resumable`` (a checkpoint is there), ``failed``
(its last attempt ended with an error) or ``missing``. So the state is right after any crash,
``kill -9`` included, and two commands reading it agree.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from jaxrl_fdg.config import dump_toml
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.experiment.spec import Cell, Experiment, LeftOut, algo_label, plain
from jaxrl_fdg.run import checkpoint
from jaxrl_fdg.run.lock import FILE as LOCK_FILE
from jaxrl_fdg.run.lock import FolderLock, is_held
from jaxrl_fdg.run.run_folder import atomic_write

RECORD = "experiment.json"
ATTEMPTS = "attempts.jsonl"
STATES = ("done", "running", "resumable", "failed", "missing")


class ExperimentFolder:
    """The folder ``path`` of one experiment."""

    def __init__(self, path: str | Path):
        self.path = Path(path).absolute()  # commands run from anywhere (a cluster's job)
        self.cells_dir = self.path / "cells"
        self.configs_dir = self.path / "configs"
        self.logs_dir = self.path / "logs"

    # -- the record --------------------------------------------------------------------------

    def read(self) -> dict[str, Any]:
        """``experiment.json``, or raise :class:`ConfigError` if the folder holds none."""
        try:
            return json.loads((self.path / RECORD).read_text())
        except FileNotFoundError:
            raise ConfigError(
                f"{str(self.path)!r} is not an experiment folder (it has no {RECORD})"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{self.path / RECORD}: not readable: {e}") from None

    def lock(self) -> FolderLock:
        """The folder's lock, for the one command that runs its cells: a second is refused
        with a line naming the first (a process that died holds nothing)."""
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"--out {str(self.path)!r} is a file, not a folder")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot create --out {str(self.path)!r}: {e.strerror}") from None
        return FolderLock.acquire(self.path, "experiment")

    def exists(self) -> bool:
        return (self.path / RECORD).is_file()

    def record(
        self,
        experiment: Experiment,
        cells: Sequence[Cell],
        left_out: Sequence[LeftOut],
        *,
        new: bool = False,
    ) -> list[str]:
        """Write (or bring up to date) ``experiment.json`` and each cell's config file.

        A cell recorded before whose definition changed is refused, naming what changed, unless
        ``new``: then its old run folder moves to ``DIR/replaced/`` (nothing is deleted) and the
        cell starts over. Cells added to the file are added; cells dropped from it stay on disk
        and leave the record. Returns the names of the cells replaced."""
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"--out {str(self.path)!r} is a file, not a folder")
        before = self.read() if self.exists() else None
        replaced = self._replace_changed(before, cells, new)
        self.configs_dir.mkdir(parents=True, exist_ok=True)
        for cell in cells:
            _write(self.configs_dir / f"{cell.name}.toml", dump_toml(plain(cell.config)))
        record = {
            "name": experiment.name,
            "file": _jsonable(experiment.source),
            "suite": experiment.suite,
            "normalize": {k: list(v) for k, v in experiment.normalize.items()},
            "cells": {c.name: _cell_record(c) for c in cells},
            "left_out": [
                {"cell": c.name, "algo": c.algo, "env": c.env, "reason": c.reason} for c in left_out
            ],
            "created": (before or {}).get("created", _now()),
            "updated": _now(),
            "versions": _versions(),
        }
        _write(self.path / RECORD, json.dumps(record, indent=2) + "\n")
        return replaced

    def _replace_changed(self, before: dict | None, cells: Sequence[Cell], new: bool) -> list[str]:
        """The cells whose definition changed since ``before``: refused, or with ``new`` set
        aside to start over. A folder that is not an experiment's must be empty."""
        if before is None:
            if self.path.is_dir() and any(p.name != LOCK_FILE for p in self.path.iterdir()):
                raise ConfigError(
                    f"--out {str(self.path)!r} is a folder with other files in it, not an "
                    "experiment folder; give an empty or new folder"
                )
            return []
        changed = {
            c.name: _changes(before["cells"][c.name]["definition"], c.definition())
            for c in cells
            if c.name in before["cells"] and before["cells"][c.name]["digest"] != c.digest()
        }
        if changed and not new:
            shown = "; ".join(f"{name}: {what}" for name, what in changed.items())
            raise ConfigError(
                f"{str(self.path)!r} ran these cells with other settings ({shown}); "
                "give --new to start them over (their folders move to replaced/), or "
                "another --out"
            )
        for name in changed:
            self._set_aside(name, "replaced")
        return list(changed)

    # -- cells ----------------------------------------------------------------------------

    def run_dir(self, name: str) -> Path:
        return self.cells_dir / name

    def state(self, name: str) -> str:
        """One of :data:`STATES`, read from the cell's run folder and its last attempt."""
        run = self.run_dir(name)
        if not run.is_dir():
            return "missing"
        if is_held(run):
            return "running"
        summary = _read_json(run / "summary.json")
        if summary and summary.get("status") == "completed":
            return "done"
        if checkpoints(run):
            return "resumable"
        last = self.last_attempt(name)
        if (summary and summary.get("status") == "failed") or (
            last is not None and last.get("exit") not in (0, None) and not last.get("signal")
        ):
            return "failed"
        return "missing"

    def start_argv(self, name: str) -> list[str]:
        """The ``jaxrl-fdg`` arguments that take the cell from where its folder is: resume from
        its checkpoint, or start it (a folder without a checkpoint is set aside first)."""
        run = self.run_dir(name)
        if run.is_dir() and checkpoints(run):
            return ["train", "--resume", str(run)]
        if run.exists():
            self._set_aside(name, "abandoned")
        config = self.configs_dir / f"{name}.toml"
        return ["train", "--config", str(config), "--out", str(self.cells_dir), "--run-name", name]

    def _set_aside(self, name: str, why: str) -> None:
        run = self.run_dir(name)
        if not run.exists():
            return
        place = self.path / why
        place.mkdir(exist_ok=True)
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        target = place / f"{name}-{stamp}"
        n = 1
        while target.exists():
            n += 1
            target = place / f"{name}-{stamp}-{n}"
        shutil.move(str(run), str(target))

    # -- attempts ---------------------------------------------------------------------------

    def log_file(self, name: str) -> Path:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        return self.logs_dir / f"{name}.log"

    def add_attempt(self, entry: dict[str, Any]) -> None:
        with open(self.path / ATTEMPTS, "a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def attempts(self) -> list[dict[str, Any]]:
        try:
            lines = (self.path / ATTEMPTS).read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a crash
                continue
        return out

    def last_attempt(self, name: str) -> dict[str, Any] | None:
        ended = [a for a in self.attempts() if a.get("cell") == name and "exit" in a]
        return ended[-1] if ended else None

    # -- status -----------------------------------------------------------------------------

    def status(self) -> list[dict[str, Any]]:
        """One row per recorded cell: its state, env steps done of its budget, seeds, final
        return (the seeds' mean, as the run's summary has it) and run seconds."""
        record = self.read()
        rows = []
        for name, cell in record["cells"].items():
            summary = _read_json(self.run_dir(name) / "summary.json") or {}
            definition = cell["definition"]
            rows.append(
                {
                    "cell": name,
                    "algo": cell["algo"],
                    "env": cell["env"],
                    "setting": cell["setting"],
                    "state": self.state(name),
                    "env_steps": summary.get("env_steps", _last_step(self.run_dir(name))),
                    "total_steps": definition["total_steps"],
                    "seeds": definition.get("num_seeds", 1),
                    "final_return": summary.get("final_return"),
                    "run_s": summary.get("run_s"),
                }
            )
        return rows


def _cell_record(cell: Cell) -> dict[str, Any]:
    return {
        "algo": cell.algo,
        "label": algo_label(cell.algo),
        "env": cell.env,
        "setting": cell.setting,
        "digest": cell.digest(),
        "definition": cell.definition(),
    }


def checkpoints(run: Path) -> list[int]:
    """The steps of the whole checkpoints in ``run`` (one a crash cut short has no manifest)."""
    folder = run / checkpoint.FOLDER
    if not folder.is_dir():
        return []
    return sorted(
        int(p.name)
        for p in folder.iterdir()
        if p.name.isdigit() and (p / checkpoint.MANIFEST).is_file()
    )


def write_status(rows: Iterable[dict[str, Any]], path: Path) -> None:
    _write(path, json.dumps(list(rows), indent=2) + "\n")


def _last_step(run: Path) -> int:
    try:
        with open(run / "metrics.jsonl", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return 0
    for line in reversed(lines):
        try:
            return int(json.loads(line).get("step", 0))
        except (ValueError, AttributeError):
            continue
    return 0


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)


def _changes(before: dict[str, Any], now: dict[str, Any]) -> str:
    keys = sorted(set(before) | set(now))
    diffs = []
    for key in keys:
        if key in ("hparams", "env_options"):
            old, new = before.get(key, {}), now.get(key, {})
            diffs += [
                f"{key}.{k} {old.get(k, 'unset')} -> {new.get(k, 'unset')}"
                for k in sorted(set(old) | set(new))
                if old.get(k) != new.get(k)
            ]
        elif before.get(key) != now.get(key):
            diffs.append(f"{key} {before.get(key, 'unset')} -> {now.get(key, 'unset')}")
    return ", ".join(diffs) or "its definition"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _versions() -> dict[str, str]:
    from jaxrl_fdg.run.versions import installed

    return installed(("jaxrl-fdg", "jax", "jaxlib", "flax", "optax", "numpy"))

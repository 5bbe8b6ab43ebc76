"""The run folder: ``config.toml``, ``metrics.jsonl``, ``metrics.csv``, ``summary.json``, and
TensorBoard event files when ``tensorboardX`` is installed (the ``tensorboard`` extra).

Every file is complete at every moment: the config and summary are written to a temporary file
and renamed into place, and each metrics row is one line flushed as it is written, so a run that
is interrupted leaves a folder that can be read (its summary says ``"status": "interrupted"``).

``metrics.csv`` holds the rows of ``metrics.jsonl`` for spreadsheets and pandas: its header is the
first row's keys (a run's rows share them), and an empty value (``None``, as ``episode_return``
before any episode has finished) is an empty cell. The event files hold every numeric column as a
scalar at x = the row's ``step``; ``tensorboard --logdir runs`` then shows each run by its folder's
name. tensorboardX is imported when the first row is written, never when the library is imported.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from jaxrl_fdg import plugins
from jaxrl_fdg.config import TrainConfig, dump_toml
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.run.lock import FolderLock

# A population-based training run's settings and lanes, in its run folder.
POPULATION_FILE = "population.json"


def default_name(config: TrainConfig, algo: str | None = None) -> str:
    """``{algo}-{env}-{fusion}-s{seed}-{time}``, one folder name even for an environment named
    with a prefix (``gym/CartPole-v1`` gives ``gym_CartPole-v1``) or by reference
    (``mylab.envs:Maze-v0`` gives ``Maze-v0``). ``algo``: the algorithm's own name, where the
    config names it by reference."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    env = plugins.display_name(config.env).replace("/", "_").replace(os.sep, "_")
    algo = (algo or plugins.display_name(config.algo)).replace("/", "_").replace(os.sep, "_")
    return f"{algo}-{env}-{config.fusion}-s{config.seed}-{stamp}"


class RunFolder:
    """A run folder's files. ``metrics``: the name of its metrics files without the suffix;
    another than ``metrics`` makes a second table in the folder (the lanes' rows of a run of
    many lanes, ``jaxrl_fdg.run.lanes``), whose rows may share an iteration where their ``lane``
    differs."""

    def __init__(self, path: Path, metrics: str = "metrics"):
        self.path = path
        self.jsonl_file, self.csv_file = path / f"{metrics}.jsonl", path / f"{metrics}.csv"
        self._jsonl = None
        self._csv = None
        self._csv_writer: csv.DictWriter | None = None
        self._events = None  # a tensorboardX SummaryWriter, when tensorboardX is installed
        self._purge_step: int | None = None
        self.tensorboard = True  # event files, if tensorboardX is installed (``logger``)
        self.loggers: list = []  # more loggers (``jaxrl_fdg.run.loggers``): rows, then summary
        self._lock: FolderLock | None = None

    @classmethod
    def create(cls, config: TrainConfig, algo: str | None = None) -> RunFolder:
        """A new folder ``out/run_name`` (``-2``, ``-3``... appended if taken), locked for
        training. ``mkdir`` itself decides who gets a name, so two runs started at once with
        the same name never share a folder."""
        parent = Path(config.out)
        name = config.run_name or default_name(config, algo)
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise ConfigError(f"--out {str(parent)!r} is a file, not a folder") from None
        except OSError as e:
            raise ConfigError(f"cannot create --out {str(parent)!r}: {e.strerror}") from None
        for n in itertools.count(1):
            path = parent / (name if n == 1 else f"{name}-{n}")
            try:
                path.mkdir()
                break
            except FileExistsError:  # never write into an earlier run's folder
                continue
            except OSError as e:
                raise ConfigError(
                    f"cannot create a run folder in {str(parent)!r}: {e.strerror}"
                ) from None
        folder = cls(path)
        folder.lock("train")
        return folder

    def lock(self, purpose: str, read_only: bool = False) -> None:
        """Hold the folder's lock until :meth:`release`: one writer at a time (``read_only``:
        a folder nobody can write to is read without it)."""
        if self._lock is None:
            self._lock = FolderLock.acquire(self.path, purpose, read_only)

    def remove(self) -> None:
        """Delete this folder, which :meth:`create` made and nothing else has written to: a run
        refused before it trained leaves no half folder."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def release(self) -> None:
        self.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def write_config(self, data: dict[str, Any]) -> None:
        atomic_write(self.path / "config.toml", dump_toml(data))

    def append_metrics(self, row: dict[str, Any]) -> None:
        """Append ``row`` to ``metrics.jsonl``, ``metrics.csv`` and the event files."""
        if self._jsonl is None:
            self._open_metrics(row)
        self._jsonl.write(json.dumps(row) + "\n")
        self._jsonl.flush()
        self._csv_writer.writerow(row)
        self._csv.flush()
        if self._events is not None:
            for key, value in row.items():
                if key != "step" and isinstance(value, int | float) and not isinstance(value, bool):
                    self._events.add_scalar(key, value, global_step=row["step"])
            self._events.flush()
        for logger in self.loggers:
            logger.log(row)

    def _open_metrics(self, first: dict[str, Any]) -> None:
        self._jsonl = open(self.jsonl_file, "a", encoding="utf-8")
        self._csv = open(self.csv_file, "a", encoding="utf-8", newline="")
        # Keys the first row lacks stay in metrics.jsonl only; missing ones are empty cells.
        self._csv_writer = csv.DictWriter(self._csv, fieldnames=list(first), extrasaction="ignore")
        if self._csv.tell() == 0:
            self._csv_writer.writeheader()
        if not self.tensorboard:
            return
        try:
            from tensorboardX import SummaryWriter
        except ImportError:  # the optional dependency is not installed: no event files
            return
        # A resumed run drops the events logged after its checkpoint (they are logged again).
        self._events = SummaryWriter(logdir=str(self.path), purge_step=self._purge_step)

    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        """An existing run folder, to resume into."""
        path = Path(path)
        if not (path / "config.toml").is_file():
            raise ConfigError(f"{str(path)!r} is not a run folder (it has no config.toml)")
        return cls(path)

    def read_metrics(self) -> list[dict[str, Any]]:
        """The rows of ``metrics.jsonl`` (none if it does not exist yet)."""
        file = self.jsonl_file
        if not file.is_file():
            return []
        text = file.read_text(encoding="utf-8", errors="replace")
        # The piece after the last newline is empty, or a row cut short (the writer died while
        # writing it): logged after the last checkpoint, so a resume drops it and logs it again.
        complete = text.split("\n")[:-1]
        rows = []
        for number, line in enumerate(complete, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
            if not _is_row(row):
                raise ConfigError(f"{str(file)!r} line {number} is not a metrics row")
            rows.append(row)
        return rows

    def truncate_metrics(self, iteration: int, quiet: bool = False) -> list[dict[str, Any]]:
        """Drop the rows logged after ``iteration`` (a resumed run logs them again) from
        ``metrics.jsonl`` and ``metrics.csv``; return the rows kept.

        Neither file is ever left with fewer rows up to ``iteration`` than either held: rows
        only ``metrics.csv`` still has (``metrics.jsonl`` deleted or cut short by hand) are read
        back from it, and each file is rewritten whole, from the rows kept, in one rename. Where
        the rows stop short of ``iteration`` the checkpoint is trusted, and a warning names the
        iterations without rows (``quiet``: no warnings, for a lane of a run that gives them)."""
        rows = self._rows_of_both_files(quiet)
        kept = [r for r in rows if r["iteration"] <= iteration]
        last = kept[-1]["iteration"] if kept else 0
        if last < iteration and not quiet:
            warn(
                f"{str(self.path)!r}: the metrics rows stop at iteration {last}, its checkpoint "
                f"is at iteration {iteration}: the checkpoint is trusted, and iterations "
                f"{last + 1}-{iteration} have no rows"
            )
        self.close()
        self._purge_step = kept[-1]["step"] + 1 if kept else 0
        atomic_write(self.jsonl_file, "".join(json.dumps(r) + "\n" for r in kept))
        if kept:
            table = io.StringIO(newline="")
            writer = csv.DictWriter(table, fieldnames=list(kept[0]), extrasaction="ignore")
            writer.writeheader()
            writer.writerows(kept)
            atomic_write(self.csv_file, table.getvalue())
        else:
            self.csv_file.unlink(missing_ok=True)
        return kept

    def _rows_of_both_files(self, quiet: bool = False) -> list[dict[str, Any]]:
        """The rows of ``metrics.jsonl``, and those of ``metrics.csv`` at iterations it lacks
        (with a warning), in order of iteration."""
        rows = {_row_key(r): r for r in self.read_metrics()}
        extra = [r for r in self._read_csv() if _row_key(r) not in rows]
        if extra and not quiet:
            warn(
                f"{str(self.path)!r}: {self.jsonl_file.name} lacks {len(extra)} row(s) that "
                f"{self.csv_file.name} holds (iterations {extra[0]['iteration']}-"
                f"{extra[-1]['iteration']}); they are read back from {self.csv_file.name}"
            )
            rows.update((_row_key(r), r) for r in extra)
        return [rows[k] for k in sorted(rows)]

    def _read_csv(self) -> list[dict[str, Any]]:
        """The complete rows of ``metrics.csv`` that read as metrics rows (numbers as numbers,
        empty cells as ``None``); none if it is missing or unreadable."""
        file = self.csv_file
        if not file.is_file():
            return []
        text = file.read_text(encoding="utf-8", errors="replace")
        complete = text[: text.rfind("\n") + 1]  # a last line without its newline is cut short
        rows = []
        for raw in csv.DictReader(io.StringIO(complete, newline="")):
            row = {k: _cell(v) for k, v in raw.items() if k is not None}
            if _is_row(row):
                rows.append(row)
        return rows

    def write_summary(self, summary: dict[str, Any]) -> None:
        self.write_json("summary.json", summary)
        while self.loggers:  # the summary is a logger's last entry
            self.loggers.pop(0).finish(summary)

    def write_json(self, name: str, data: Any) -> None:
        atomic_write(self.path / name, json.dumps(data, indent=2) + "\n")

    def close(self) -> None:
        for handle in (self._jsonl, self._csv, self._events):
            if handle is not None:
                handle.close()
        self._jsonl = self._csv = self._csv_writer = self._events = None


def _row_key(row: dict[str, Any]) -> tuple[int, int]:
    """Where a row sorts: by iteration, then by lane (a table of lanes' rows)."""
    lane = row.get("lane")
    return row["iteration"], lane if isinstance(lane, int) else -1


def _is_row(row: Any) -> bool:
    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    return (
        isinstance(row, dict)
        and all(isinstance(row.get(k), int) for k in ("iteration", "step"))
        and number(row.get("wall_s"))
    )


def _cell(text: str | None) -> Any:
    """A ``metrics.csv`` cell as the value ``metrics.jsonl`` holds: an int, a float, ``None``
    for an empty cell, else the text."""
    if text is None or text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def atomic_write(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all: a temporary file, synced, then renamed."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:  # a full disk, a lost permission: the old file stays, no stray .tmp
        tmp.unlink(missing_ok=True)
        raise

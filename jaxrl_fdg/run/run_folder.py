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
import json
import os
import time
from pathlib import Path
from typing import Any

from jaxrl_fdg.config import TrainConfig, dump_toml
from jaxrl_fdg.errors import ConfigError


def default_name(config: TrainConfig) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{config.algo}-{config.env}-{config.fusion}-s{config.seed}-{stamp}"


class RunFolder:
    def __init__(self, path: Path):
        self.path = path
        self._jsonl = None
        self._csv = None
        self._csv_writer: csv.DictWriter | None = None
        self._events = None  # a tensorboardX SummaryWriter, when tensorboardX is installed
        self._purge_step: int | None = None

    @classmethod
    def create(cls, config: TrainConfig) -> RunFolder:
        parent = Path(config.out)
        name = config.run_name or default_name(config)
        path, n = parent / name, 1
        while path.exists():  # never write into an earlier run's folder
            n += 1
            path = parent / f"{name}-{n}"
        path.mkdir(parents=True)
        return cls(path)

    def write_config(self, data: dict[str, Any]) -> None:
        _atomic_write(self.path / "config.toml", dump_toml(data))

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

    def _open_metrics(self, first: dict[str, Any]) -> None:
        self._jsonl = open(self.path / "metrics.jsonl", "a", encoding="utf-8")
        self._csv = open(self.path / "metrics.csv", "a", encoding="utf-8", newline="")
        # Keys the first row lacks stay in metrics.jsonl only; missing ones are empty cells.
        self._csv_writer = csv.DictWriter(self._csv, fieldnames=list(first), extrasaction="ignore")
        if self._csv.tell() == 0:
            self._csv_writer.writeheader()
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
        file = self.path / "metrics.jsonl"
        if not file.is_file():
            return []
        return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]

    def truncate_metrics(self, iteration: int) -> list[dict[str, Any]]:
        """Drop the rows logged after ``iteration`` (a resumed run logs them again) from
        ``metrics.jsonl`` and ``metrics.csv``; return the rows kept."""
        rows = [r for r in self.read_metrics() if r["iteration"] <= iteration]
        self.close()
        self._purge_step = rows[-1]["step"] + 1 if rows else 0
        _atomic_write(self.path / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        (self.path / "metrics.csv").unlink(missing_ok=True)
        if rows:
            with open(self.path / "metrics.csv", "w", encoding="utf-8", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]), extrasaction="ignore")
                writer.writeheader()
                writer.writerows(rows)
        return rows

    def write_summary(self, summary: dict[str, Any]) -> None:
        self.write_json("summary.json", summary)

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        _atomic_write(self.path / name, json.dumps(data, indent=2) + "\n")

    def close(self) -> None:
        for handle in (self._jsonl, self._csv, self._events):
            if handle is not None:
                handle.close()
        self._jsonl = self._csv = self._csv_writer = self._events = None


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)

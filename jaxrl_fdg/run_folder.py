"""The run folder: ``config.toml``, ``metrics.jsonl``, ``summary.json``.

Every file is complete at every moment: the config and summary are written to a temporary file
and renamed into place, and each metrics row is one line flushed as it is written, so a run that
is interrupted leaves a folder that can be read (its summary says ``"status": "interrupted"``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from jaxrl_fdg.config import TrainConfig, dump_toml


def default_name(config: TrainConfig) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{config.algo}-{config.env}-{config.fusion}-s{config.seed}-{stamp}"


class RunFolder:
    def __init__(self, path: Path):
        self.path = path
        self._metrics = None

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
        if self._metrics is None:
            self._metrics = open(self.path / "metrics.jsonl", "a", encoding="utf-8")
        self._metrics.write(json.dumps(row) + "\n")
        self._metrics.flush()

    def write_summary(self, summary: dict[str, Any]) -> None:
        self.write_json("summary.json", summary)

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        _atomic_write(self.path / name, json.dumps(data, indent=2) + "\n")

    def close(self) -> None:
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)

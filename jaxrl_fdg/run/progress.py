"""Live progress at host boundaries: a bar on a terminal, one plain line per boundary otherwise."""

from __future__ import annotations

import sys
from typing import Any


def _fmt_return(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


class ProgressDisplay:
    """``update`` once per host boundary with the latest metrics row."""

    def __init__(self, total_steps: int, label: str, enabled: bool = True):
        self.total = total_steps
        self.enabled = enabled
        self._progress: Any = None
        self.live = False
        if not enabled:  # rich is not imported for a display that shows nothing
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        self.live = self.console.is_terminal
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:,}/{task.total:,} steps"),
                TextColumn("return {task.fields[ret]}"),
                TextColumn("{task.fields[sps]} steps/s"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self._task = self._progress.add_task(label, total=total_steps, ret="—", sps="—")
            self._progress.start()
        else:
            print(f"{label}: {total_steps:,} steps", file=sys.stderr, flush=True)

    def update(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        ret, sps = _fmt_return(row.get("episode_return")), f"{row['steps_per_s']:,.0f}"
        if self._progress is not None:
            self._progress.update(self._task, completed=row["step"], ret=ret, sps=sps)
        else:
            print(
                f"  step {row['step']:>10,}/{self.total:,}  return {ret:>7}  {sps:>10} steps/s",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

"""Loggers beside the run folder's own files, as ``TrainConfig.logger`` names them.

``tensorboard``: the event files :class:`~jaxrl_fdg.run.run_folder.RunFolder` writes (in the run
folder and each lane's) when tensorboardX is installed.

``wandb``: one Weights & Biases run per run folder. It gets the resolved config (``config.toml``)
when it starts, every metrics row at each host boundary (plotted against env steps, ``step``),
and at the end the summary, the timing table, the learning curve (``learning_curve.png``, drawn
as ``jaxrl-fdg plot`` draws it) and ``profile.png`` when the run drew one. A run of several seeds
or sweep points logs its own rows (averaged over lanes); each lane's stay in its folder. The W&B
run's id is kept in the run folder (:data:`WANDB_ID_FILE`), so a resumed run continues the same
W&B run; the rows a resume logs again (those after the checkpoint) are logged again there too.
Its files go under ``WANDB_DIR`` when that is set, in the run folder otherwise;
``WANDB_MODE=offline`` keeps them there for a later ``wandb sync``; ``WANDB_PROJECT`` picks the
project (default :data:`PROJECT`).

wandb is imported when a W&B run starts, never when the library is imported.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from pathlib import Path
from typing import Any

from jaxrl_fdg.config import TrainConfig
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run.run_folder import RunFolder

PROJECT = "jaxrl-fdg"
WANDB_ID_FILE = "wandb_run_id"

_HOST_PARTS = (
    ("host: dispatch", "dispatch_s"),
    ("host: waiting on the device", "device_wait_s"),
    ("host: device→host copies", "d2h_s"),
    ("host: bookkeeping at boundaries", "host_bookkeeping_s"),
    ("host: other", "other_host_s"),
)


def attach(config: TrainConfig, folder: RunFolder | None, lanes: list[RunFolder]) -> None:
    """Give ``folder`` (and its lanes' folders) the loggers ``config.logger`` names."""
    names = config.loggers
    for each in (folder, *lanes) if folder is not None else ():
        each.tensorboard = "tensorboard" in names
    if folder is not None and "wandb" in names:
        folder.loggers.append(WandbLogger(folder.path))


class WandbLogger:
    """A Weights & Biases run that follows one run folder."""

    def __init__(self, path: Path):
        import wandb

        self.path = path
        id_file = path / WANDB_ID_FILE
        if id_file.is_file():  # a resumed run: the same W&B run
            run_id = id_file.read_text().strip()
        else:
            run_id = secrets.token_hex(4)
            id_file.write_text(run_id + "\n")
        try:
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", PROJECT),
                name=path.name,
                id=run_id,
                resume="allow",
                config=tomllib.loads((path / "config.toml").read_text()),
                dir=None if os.environ.get("WANDB_DIR") else str(path),
            )
        except wandb.errors.Error as e:  # not logged in, no network: before anything compiles
            message = " ".join(str(e).split())
            raise ConfigError(f"logger 'wandb' could not start a run: {message}") from None
        self.run.define_metric("step")
        self.run.define_metric("*", step_metric="step")

    def log(self, row: dict[str, Any]) -> None:
        """One metrics row; empty values (no episode finished yet) are left out."""
        self.run.log({k: v for k, v in row.items() if v is not None})

    def finish(self, summary: dict[str, Any]) -> None:
        """The summary, the timing table and the learning curve; then the W&B run ends."""
        import wandb

        timing = summary["timing"]
        self.run.summary.update({k: v for k, v in summary.items() if k != "timing"})
        self.run.summary.update(
            {f"timing/{k}": v for k, v in timing.items() if isinstance(v, int | float)}
        )
        logged: dict[str, Any] = {
            "step": summary["env_steps"],
            "timing": _timing_table(wandb, timing),
        }
        curve = self._learning_curve()
        if curve is not None:
            logged["learning_curve"] = wandb.Image(str(curve))
        if (self.path / "profile.png").is_file():  # --profile sync or trace
            logged["profile"] = wandb.Image(str(self.path / "profile.png"))
        self.run.log(logged)
        self.run.finish(exit_code=0 if summary["status"] == "completed" else 1)

    def _learning_curve(self) -> Path | None:
        from jaxrl_fdg import plots

        try:
            return plots.plot_runs([self.path], output=self.path / plots.DEFAULT_OUTPUT)
        except ConfigError:  # no episode has finished yet: nothing to draw
            return None


def _timing_table(wandb, timing: dict[str, Any]):
    """Where the run's time went, as ``jaxrl-fdg train`` prints it: each program's compile and
    dispatch seconds, then the host's share of the run."""
    table = wandb.Table(columns=["part", "seconds", "share of run"])
    run = timing["run_s"] or 1.0
    for name, row in timing["programs"].items():
        table.add_data(f"compile: {name}", row["compile_s"], None)
        table.add_data(f"dispatch: {name} ({row['calls']} calls)", row["dispatch_s"], None)
    together = timing.get("compiled_together")
    if together:  # compiled at the same time: their seconds overlap, the sum exceeds the wall
        names = ", ".join(together)
        label = f"compile: every program's own seconds, summed ({names} at the same time)"
        table.add_data(label, timing["compile_programs_s"], None)
        table.add_data("compile: wall time the run waited", timing["compile_s"], None)
    for label, key in _HOST_PARTS:
        table.add_data(label, timing[key], timing[key] / run)
    return table

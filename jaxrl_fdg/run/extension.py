"""Extending a run: ``train --resume RUN --total-steps N`` with a budget other than the one the
run was started with.

Nothing a run has computed is computed again, nor differently. The schedules that depend on the
budget (``AlgorithmContext.num_iterations``: PPO's annealed learning rate, DQN's epsilon decay,
prioritized replay's beta) keep the horizon they ran under, the run's first budget, which the
extended run records as ``schedule_steps``; past it each holds its last value (an annealed
learning rate stays 0). So a run of budget A extended to B computes, bit for bit, what a run
started with ``total_steps = B, schedule_steps = A`` computes, and an algorithm without such a
schedule what a run started with ``total_steps = B`` computes: however a run's budget is raised,
in one step or several, its result depends on its final budget and its schedules' horizon only.

A budget smaller than the iterations done is refused, naming them; one smaller than the budget
but not than the iterations done ends the run there. The run folder's ``config.toml`` (and each
lane's) shows the budget the run now has, and :data:`FILE` lists each change: the iteration it
took effect at, the budgets before and after, and the schedules' horizon.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxrl_fdg.config import Resolved, TrainConfig, load
from jaxrl_fdg.errors import ConfigError, warn

FILE = "extensions.json"
BUDGET_KEYS = ("total_steps", "schedule_steps")


def horizon(config: Mapping[str, Any]) -> Any:
    """The env steps a recorded config's schedules span: its ``schedule_steps``, else its
    budget."""
    steps = config.get("schedule_steps")
    return config.get("total_steps") if steps is None else steps


def recorded(path: str | Path) -> dict[str, Any] | None:
    """The config a run folder records (``config.toml``), or ``None`` where it has none that
    reads (the resume then says why, as it would without an extension)."""
    try:
        return load(Path(path) / "config.toml")
    except (ConfigError, OSError):
        return None


def extended(config: TrainConfig, saved: Mapping[str, Any] | None) -> TrainConfig:
    """``config`` (resolved) for resuming a run that recorded ``saved``: where the budget
    differs and ``config`` names no horizon of its own, its schedules keep the one recorded."""
    if saved is None or config.schedule_steps is not None:
        return config
    if config.total_steps == saved.get("total_steps") or horizon(saved) is None:
        return config
    return config.replace(schedule_steps=horizon(saved))


def comparable(saved: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[dict, dict]:
    """``saved`` and ``current`` (configs as ``to_mapping`` gives them) as a resume compares
    them: the budget may differ, the schedules' horizon may not (an unset one is the budget)."""
    saved = {**saved, "total_steps": current.get("total_steps"), "schedule_steps": horizon(saved)}
    return saved, {**current, "schedule_steps": horizon(current)}


def check_budget(path: Path, done: int, resolved: Resolved) -> None:
    """Refuse a budget smaller than the ``done`` iterations the run's checkpoint holds."""
    config = resolved.config
    if config.num_iterations >= done:
        return
    steps = done * config.steps_per_iteration
    raise ConfigError(
        f"{str(path)!r} has done {done:,} iterations ({steps:,} env steps) already; "
        f"total_steps = {config.total_steps:,} is fewer (give at least {steps:,})"
    )


def record(path: Path, resolved: Resolved, done: int) -> None:
    """Where ``resolved`` gives the run at ``path`` another budget than its ``config.toml``
    records: record the new budget there (and in each lane's folder) and add the change to
    :data:`FILE`."""
    saved = recorded(path)
    config = resolved.config
    budget = (config.total_steps, config.schedule_steps)
    if saved is None or tuple(saved.get(key) for key in BUDGET_KEYS) == budget:
        return
    from jaxrl_fdg.run.run_folder import RunFolder

    entries = read(path)
    entries.append(
        {
            "from_iteration": done,
            "from_total_steps": saved.get("total_steps"),
            "total_steps": config.total_steps,
            "schedule_steps": config.schedule_steps,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )
    lanes = [path / lane.name for lane in resolved.lanes] if len(resolved.lanes) > 1 else []
    for folder in [path, *lanes]:
        data = recorded(folder)
        if data is not None:  # a lane folder not made yet is made with the new budget
            data.update(zip(BUDGET_KEYS, budget, strict=True))
            RunFolder(folder).write_config(data)
    RunFolder(path).write_json(FILE, entries)


def read(path: Path) -> list[dict[str, Any]]:
    """The extensions :data:`FILE` lists (none for a run never extended)."""
    try:
        entries = json.loads((Path(path) / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def warn_of_schedules(resolved: Resolved) -> None:
    """A learning rate annealed to 0 over fewer steps than the run takes: the iterations past
    its horizon do not learn, which the user should hear of."""
    config = resolved.config
    if config.schedule_iterations >= config.num_iterations:
        return
    if getattr(resolved.hparams, "anneal_lr", False) is True:
        horizon_steps = config.schedule_iterations * config.steps_per_iteration
        warn(
            f"{resolved.spec.name} anneals its learning rate to 0 over the first "
            f"{horizon_steps:,} env steps (schedule_steps) and holds it there: the last "
            f"{config.num_iterations - config.schedule_iterations:,} iterations do not learn "
            "(give runs you mean to extend --anneal-lr false, or --schedule-steps as large as "
            "their budget may grow)"
        )

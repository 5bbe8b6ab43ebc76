"""A resume is the same run: it goes on only with the configuration its checkpoints were written
with (settings that change nothing it computes aside, ``config.NOT_COMPUTED``), and says so when
the versions it runs under are not those its checkpoint was written under."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxrl_fdg.config import NOT_COMPUTED, Resolved, TrainConfig, load, to_mapping
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.run import extension, versions
from jaxrl_fdg.run.checkpoint import Checkpointer


def check(path: Path, checkpointer: Checkpointer, resolved: Resolved) -> None:
    """Refuse to resume the run folder ``path`` with a configuration other than the one its
    latest intact checkpoint stored (its ``config.toml`` where none did), naming each changed
    key; warn where the versions differ from those it was written under; check an extended
    budget (:func:`~jaxrl_fdg.run.extension.check_budget`)."""
    current = to_mapping(resolved)
    saved, source, written, done = None, "its config.toml", None, None
    for step in reversed(checkpointer.steps()):
        if checkpointer.damage(step) is None:
            done = step if done is None else done  # where the resume goes on from
            saved = checkpointer.stored_config(step)
            if saved is not None:
                source = f"its checkpoint at iteration {step}"
                written = checkpointer.stored_versions(step)
                break
    if saved is None:  # no checkpoint yet, or one written before configs were stored
        saved = load(path / "config.toml")
    if written is None:  # then the versions its folder last ran under, if it says
        stretches = versions.read(path)
        written = stretches[-1]["versions"] if stretches else None
    changed_versions = versions.differences(written or {}, checkpointer.versions)
    if changed_versions:
        warn(
            f"resuming {str(path)!r} under other versions or settings than {source}'s "
            f"({', '.join(changed_versions)}): the same bits are promised for the same versions, "
            "settings and code only"
        )
    changed = changed_keys(*extension.comparable(saved, current))
    if changed:
        details = ", ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in changed)
        raise ConfigError(
            f"cannot resume {str(path)!r} with a configuration other than {source}'s ({details})"
        )
    extension.check_budget(path, done or 0, resolved)


def changed_keys(saved: dict, current: dict, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, saved value, current value)`` for every computed setting that differs.

    A top-level key in ``NOT_COMPUTED`` is never compared; a setting the saved mapping lacks
    had its default then (``TrainConfig``'s), and a hyperparameter it lacks is newer than it;
    a tuple equals the list of its items (TOML has no tuples)."""
    changed = []
    for key in sorted(set(saved) | set(current)):
        if not prefix and key in NOT_COMPUTED:
            continue
        if key not in saved and prefix:  # a hyperparameter newer than the checkpoint
            continue
        # A setting newer than the checkpoint (or unset there) had its default then.
        a = saved[key] if key in saved else getattr(TrainConfig, key, None)
        b = current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            changed += changed_keys(a, b, f"{prefix}{key}.")
        elif _normal(a) != _normal(b):
            changed.append((f"{prefix}{key}", a, b))
    return changed


def _normal(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def record_settings(path: Path, resolved: Resolved) -> list[str]:
    """Write the settings that change nothing computed (``--keep``, ``--eval-every``,
    ``--checkpoint-every``, ``--profile``, ...) that this resume runs under into the run's
    ``config.toml`` (and each lane's) where they differ from what it records; return their
    names. The budget is :func:`~jaxrl_fdg.run.extension.record`'s."""
    from jaxrl_fdg.run.run_folder import RunFolder

    current = to_mapping(resolved)  # an unset setting is left out, as in config.toml
    names = [k for k in NOT_COMPUTED if k not in ("out", "run_name")]
    lanes = [path / lane.name for lane in resolved.lanes] if len(resolved.lanes) > 1 else []
    changed: list[str] = []
    for folder in [path, *lanes]:
        saved = extension.recorded(folder)
        if saved is None:
            continue
        differ = [k for k in names if saved.get(k) != current.get(k)]
        if differ:
            saved.update({k: current[k] for k in differ if k in current})
            for k in differ:
                if k not in current:
                    del saved[k]
            RunFolder(folder).write_config(saved)
            changed = changed or differ
    return changed

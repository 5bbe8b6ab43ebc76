"""What a run ran under: the package's, JAX's and its libraries' versions and the device kind,
recorded in the run folder (``versions.json``, one entry per stretch of the run: where it started
and under what) and with every checkpoint. The same bits are promised for the same versions
only: a resume under others says which differ, and refuses only where a checkpoint cannot be
read, naming both sets."""

from __future__ import annotations

import importlib.metadata
import json
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax

if TYPE_CHECKING:
    from jaxrl_fdg.run.run_folder import RunFolder

FILE = "versions.json"
# Distributions whose versions decide the bits a run computes (or whether a checkpoint reads).
PACKAGES = ("jaxrl-fdg", "jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy")


def current() -> dict[str, str]:
    """This process's versions and device: ``{"jax": "0.10.2", ..., "device": "cpu"}``."""
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    device = jax.devices()[0]
    found["python"] = platform.python_version()
    found["device"] = f"{device.platform}: {device.device_kind}"
    return found


def differences(saved: dict[str, Any], now: dict[str, str]) -> list[str]:
    """``name saved -> now`` for each entry that differs (those ``saved`` lacks left out)."""
    return [
        f"{name} {saved[name]} -> {now.get(name)}"
        for name in saved
        if name in now and str(saved[name]) != now[name]
    ]


def read(folder: Path) -> list[dict[str, Any]]:
    """The stretches ``versions.json`` records (none for a folder written before it existed,
    or one whose file is unreadable)."""
    try:
        entries = json.loads((folder / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("versions"), dict)]


def record(folder: RunFolder, iteration: int, now: dict[str, str]) -> None:
    """Add ``now`` to the folder's ``versions.json`` as the stretch starting at ``iteration``,
    unless the last one ran under the same versions."""
    entries = read(folder.path)
    if entries and entries[-1]["versions"] == now:
        return
    entries.append({"from_iteration": iteration, "versions": now})
    folder.write_json(FILE, entries)


def note(saved: dict[str, Any] | None, now: dict[str, str]) -> str:
    """`` (written under jax 0.10.2, ...; now ...)`` where ``saved`` differs from ``now``."""
    changed = differences(saved or {}, now)
    return f" (versions changed since it was written: {', '.join(changed)})" if changed else ""

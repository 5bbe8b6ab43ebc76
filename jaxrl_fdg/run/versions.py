"""What a run ran under: the package's, JAX's and its libraries' versions, the device kind, the
JAX and XLA settings that change the bits a program computes (x64, the PRNG implementation and
its partitioning, the default matmul precision, ``XLA_FLAGS``), and a digest of the user's
algorithm and environment files (their content, not their path). Recorded in the run folder
(``versions.json``, one entry per stretch of the run: where it started and under what) and with
every checkpoint. The same bits are promised for the same versions and settings only: a resume
under others says in one line which differ, and refuses only where a checkpoint cannot be read,
naming both sets."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax

if TYPE_CHECKING:
    from jaxrl_fdg.run.run_folder import RunFolder

FILE = "versions.json"
# Distributions whose versions decide the bits a run computes (or whether a checkpoint reads).
PACKAGES = ("jaxrl-fdg", "jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy")


# JAX settings (``jax.config``, each also set by its ``JAX_...`` environment variable) under which
# the same program computes other bits.
BIT_SETTINGS = (
    "jax_enable_x64",
    "jax_default_prng_impl",
    "jax_threefry_partitionable",
    "jax_default_matmul_precision",
)


def current(config: Mapping[str, Any] | None = None) -> dict[str, str]:
    """This process's versions, device and bit-changing settings, and the digests of the code
    ``config`` (a run's resolved mapping) references: ``{"jax": "0.10.2", ..., "device": "cpu",
    "XLA_FLAGS": "", "algo code": "algo.py sha256:9f2c..."}``."""
    found = installed(PACKAGES)
    device = jax.devices()[0]
    found["python"] = platform.python_version()
    found["device"] = f"{device.platform}: {device.device_kind}"
    for name in BIT_SETTINGS:
        found[name] = str(getattr(jax.config, name, None))
    found["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "")
    found.update(code_digests(config or {}))
    return found


def installed(distributions: tuple[str, ...]) -> dict[str, str]:
    """The installed version of each distribution, ``"not installed"`` where one is not."""
    found = {}
    for name in distributions:
        try:
            found[name] = _version(importlib.metadata.distribution(name))
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _version(distribution: importlib.metadata.Distribution) -> str:
    """``distribution.version``, read from the metadata's header lines alone: parsing the whole
    file as ``.version`` does (a long description included) costs about 0.5 ms a package, on
    the way to every run's first iteration."""
    text = distribution.read_text("METADATA") or distribution.read_text("PKG-INFO") or ""
    for line in text.splitlines():
        if not line:
            break  # the end of the header
        if line.startswith("Version:"):
            return line.removeprefix("Version:").strip()
    return distribution.version


def code_digests(config: Mapping[str, Any]) -> dict[str, str]:
    """``{"algo code": "algo.py sha256:<16 hex>"}`` for the algorithm and environment that
    ``config`` takes from a file or module of the user's (built-ins are the package's version)."""
    from jaxrl_fdg import plugins

    digests = {}
    for key in ("algo", "env"):
        reference = config.get(key)
        path = plugins.source_file(reference) if isinstance(reference, str) else None
        if path is None:
            continue
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        except OSError:
            digest = "unreadable"
        digests[f"{key} code"] = f"{path.name} sha256:{digest}"
    return digests


def differences(saved: dict[str, Any], now: dict[str, str]) -> list[str]:
    """``name saved -> now`` for each entry that differs (those ``saved`` lacks left out)."""
    return [
        f"{name} {_shown(saved[name])} -> {_shown(now.get(name))}"
        for name in saved
        if name in now and str(saved[name]) != now[name]
    ]


def _shown(value: Any) -> str:
    return "(unset)" if value in ("", None) else str(value)


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

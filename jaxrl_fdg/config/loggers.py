"""The ``logger`` setting: where metrics go besides the run folder's own files.

A comma list of :data:`LOGGERS` (``tensorboard,wandb``), or ``none``. ``tensorboard`` (the
default) writes event files when tensorboardX is installed and nothing otherwise, as it always
has; ``wandb`` needs the ``wandb`` package (the ``wandb`` extra) and says so before anything
compiles. The loggers themselves are :mod:`jaxrl_fdg.run.loggers`.
"""

from __future__ import annotations

import importlib.util

from jaxrl_fdg.errors import ConfigError

LOGGERS = ("tensorboard", "wandb")
NONE = "none"


def parse(value: str) -> tuple[str, ...]:
    """The logger names of ``value`` (``"tensorboard, wandb"`` → both; ``"none"`` → none)."""
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    return () if names == (NONE,) else names


def check(value: object) -> None:
    """Raise :class:`ConfigError` naming the bad value and the valid choices."""
    valid = ", ".join((*LOGGERS, NONE))
    if not isinstance(value, str):
        raise ConfigError(f"logger must be a comma list of {valid}, got {value!r}")
    names = parse(value)
    for name in names:
        if name not in LOGGERS:
            raise ConfigError(f"unknown logger {name!r} in {value!r} (valid: {valid})")
    if "wandb" in names and importlib.util.find_spec("wandb") is None:
        raise ConfigError("logger 'wandb' needs the wandb package: pip install 'jaxrl-fdg[wandb]'")

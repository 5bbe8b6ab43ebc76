"""The checks of an experiment file's plain values: each returns the value or raises a
:class:`ConfigError` that starts with the file and names the key."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jaxrl_fdg.errors import ConfigError


def text(source: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{source}: {key} must be a non-empty string, got {value!r}")
    return value


def names(source: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not value:
        raise ConfigError(f"{source}: {key} must be a non-empty list of names, got {value!r}")
    given = tuple(text(source, key, v) for v in value)
    repeated = sorted({n for n in given if given.count(n) > 1})
    if repeated:
        raise ConfigError(f"{source}: {key} names {', '.join(repeated)} more than once")
    return given


def count(source: str, key: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{source}: {key} must be a whole number >= {minimum}, got {value!r}")
    return value


def table(source: str, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: {key} must be a table, got {value!r}")
    return dict(value)


def score_pair(source: str, key: str, value: Any) -> tuple[float, float]:
    ok = (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )
    if not ok or not value[0] < value[1]:
        raise ConfigError(
            f"{source}: {key} must be [random, reference] with random < reference, got {value!r}"
        )
    return float(value[0]), float(value[1])

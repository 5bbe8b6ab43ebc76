"""Small checks that raise :class:`ConfigError` naming the bad value."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from jaxrl_fdg.errors import ConfigError

# Sizes and counts become array dimensions and int32 counters on the device.
INT32_MAX = 2**31 - 1


def positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    if value > INT32_MAX:
        raise ConfigError(f"{name} must be at most {INT32_MAX:,} (2**31 - 1), got {value!r}")


def non_negative(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigError(f"{name} must be a non-negative number, got {value!r}")


def positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"{name} must be a positive finite number, got {value!r}")


def in_range(name: str, value: Any, low: float, high: float, *, low_open: bool = False) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and (low < value if low_open else low <= value) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ConfigError(f"{name} must be in {bracket}{low}, {high}], got {value!r}")


def choice(name: str, value: Any, choices: Iterable[str]) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(f"unknown {name} {value!r} (valid: {', '.join(map(str, choices))})")


def divides(name: str, value: int, into_name: str, into: int) -> None:
    if into % value:
        raise ConfigError(
            f"{into_name} = {into} does not divide into {name} = {value} equal parts; "
            f"choose {name} among the divisors of {into}: {_divisors(into)}"
        )


def _divisors(n: int) -> str:
    small = [d for d in range(1, n + 1) if n % d == 0]
    return ", ".join(map(str, small[:12])) + (", ..." if len(small) > 12 else "")


def layer_sizes(name: str, sizes: Any) -> None:
    """A network's hidden layer sizes: a non-empty sequence of positive integers."""
    if not sizes:
        raise ConfigError(f"{name} must name at least one layer size")
    for size in sizes:
        positive_int(f"{name} entry", size)

"""Small checks that raise :class:`ConfigError` naming the bad value.

A swept hyperparameter reaches its dataclass as a traced value inside the vmap over a sweep's
lanes (``jaxrl_fdg.run.build``), after each of its values was checked concretely: the numeric
checks pass a traced value through."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import jax

from jaxrl_fdg.errors import ConfigError


def traced(value: Any) -> bool:
    """Whether ``value`` is a traced stand-in (a swept value inside the sweep's vmap)."""
    return isinstance(value, jax.core.Tracer)


# Sizes and counts become array dimensions and int32 counters on the device.
INT32_MAX = 2**31 - 1


def positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    if value > INT32_MAX:
        raise ConfigError(f"{name} must be at most {INT32_MAX:,} (2**31 - 1), got {value!r}")


def non_negative(name: str, value: Any) -> None:
    if traced(value):
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigError(f"{name} must be a non-negative number, got {value!r}")


def positive(name: str, value: Any) -> None:
    if traced(value):
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"{name} must be a positive finite number, got {value!r}")


def in_range(name: str, value: Any, low: float, high: float, *, low_open: bool = False) -> None:
    if traced(value):
        return
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and (low < value if low_open else low <= value) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ConfigError(f"{name} must be in {bracket}{low}, {high}], got {value!r}")


def finite(name: str, value: Any) -> None:
    if traced(value):
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")


def below(low_name: str, low: Any, high_name: str, high: Any, why: str = "") -> None:
    """``low < high`` (``why`` says what for)."""
    if traced(low) or traced(high):
        return
    if not low < high:
        reason = f": {why}" if why else ""
        raise ConfigError(f"{low_name} = {low} must be below {high_name} = {high}{reason}")


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

"""Environment registry: ``make(name, **overrides)``, ``register`` refuses duplicates."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from typing import Any

from jaxrl_fdg.envs.base import Environment

_REGISTRY: dict[str, Callable[[], Environment]] = {}


class UnknownEnvironmentError(ValueError):
    """An environment name that is not registered."""


def register(name: str, factory: Callable[[], Environment]) -> None:
    """Register ``factory`` (a zero-argument callable returning an environment) under ``name``."""
    if name in _REGISTRY:
        raise ValueError(f"environment {name!r} is already registered")
    _REGISTRY[name] = factory


def registered() -> tuple[str, ...]:
    """Names of all registered environments, sorted."""
    return tuple(sorted(_REGISTRY))


def check_name(name: str) -> None:
    """Raise :class:`UnknownEnvironmentError` naming close matches if ``name`` is unknown."""
    if name in _REGISTRY:
        return
    close = difflib.get_close_matches(name, _REGISTRY, n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    raise UnknownEnvironmentError(
        f"unknown environment {name!r}{hint} (registered: {', '.join(registered())})"
    )


def make(name: str, **overrides: Any) -> tuple[Environment, Any]:
    """Build environment ``name``; return ``(env, params)`` with ``overrides`` applied to params.

    >>> env, params = make("CartPole-v1", max_steps=200)
    """
    check_name(name)
    env = _REGISTRY[name]()
    params = env.default_params
    if overrides:
        fields = {f.name for f in dataclasses.fields(params)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {unknown} for {name!r}; valid: {', '.join(sorted(fields))}"
            )
        params = params.replace(**overrides)
    return env, params

"""Environment registry: ``make(name, **overrides)``, ``register`` refuses duplicates.

A name is either registered here (``"CartPole-v1"``), declared by an installed package as an
entry point of group ``jaxrl_fdg.envs`` (its value a zero-argument factory, as ``register``
takes), or starts with an adapter's prefix (``"brax/ant"``, ``"gym/CartPole-v1"``,
``"gymnax/Breakout-MinAtar"``), which :mod:`jaxrl_fdg.envs.prefixes` builds. ``MODULE:NAME``
(``mylab.envs:Maze-v0``, ``path/to/envs.py:gym/Maze-v0``) imports ``MODULE`` first, which
registers ``NAME`` (here, or with gymnasium), then builds ``NAME`` (:mod:`jaxrl_fdg.plugins`).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxrl_fdg import plugins
from jaxrl_fdg.envs import prefixes
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown

_REGISTRY: dict[str, Callable[[], Environment]] = {}


def register(name: str, factory: Callable[[], Environment]) -> None:
    """Register ``factory`` (a zero-argument callable returning an environment) under ``name``."""
    if name in _REGISTRY:
        raise ValueError(f"environment {name!r} is already registered")
    _REGISTRY[name] = factory


def registered() -> tuple[str, ...]:
    """Names of all registered environments (entry points of installed packages included),
    sorted."""
    return tuple(sorted({*_REGISTRY, *plugins.entry_points(plugins.ENVIRONMENTS)}))


def _bring_in(name: str) -> str:
    """The name to build once what ``name`` needs is loaded: ``MODULE:NAME`` imports ``MODULE``
    and leaves ``NAME``; an entry point's factory is registered under its name."""
    parts = plugins.split_reference(name)
    points = plugins.entry_points(plugins.ENVIRONMENTS)
    if parts is not None:
        plugins.import_module(parts[0], f"environment {name!r}")
        where, name = parts
        if name not in _REGISTRY and name not in points and "/" not in name:
            raise UnknownEnvironmentError(
                f"importing {where!r} registered no such environment: "
                + unknown("environment", name, _REGISTRY, "registered")
            )
    if name not in _REGISTRY and name in points:
        factory = plugins.load_entry_point(plugins.ENVIRONMENTS, name)
        if not callable(factory):
            raise UnknownEnvironmentError(
                f"entry point {name!r} of {plugins.ENVIRONMENTS} ({points[name].value}) is not "
                "a factory of environments"
            )
        _REGISTRY[name] = factory
    return name


def check_name(name: str) -> None:
    """Check ``name`` cheaply, before anything is built or compiled.

    A registered name passes. A prefixed name is checked by its adapter without importing the
    adapter's package: the prefix, the Brax backend after ``:``, and that the package is
    installed (:func:`jaxrl_fdg.envs.prefixes.check`); the id itself is checked when built.

    Raises:
      UnknownEnvironmentError: an unregistered name (the message names close matches and every
        registered name) or an unknown prefix (the message names the valid ones).
      MissingDependencyError: the prefix's optional package is not installed.
    """
    name = _bring_in(name)
    if name in _REGISTRY:
        return
    if "/" in name:
        prefixes.check(name)
        return
    raise UnknownEnvironmentError(unknown("environment", name, _REGISTRY, "registered"))


def make(name: str, **overrides: Any) -> tuple[Any, Any]:
    """Build environment ``name``: ``(env, params)``.

    For a registered name ``overrides`` replace fields of its params; a prefixed name goes to its
    adapter (:mod:`jaxrl_fdg.envs.prefixes` says what ``overrides`` mean there), which returns
    ``(HostSimulator, None)`` for ``gym/<id>``.

    >>> env, params = make("CartPole-v1", max_steps=200)
    >>> env, params = make("brax/ant:generalized")
    >>> env, params = make("gymnax/Breakout-MinAtar")

    Raises:
      UnknownEnvironmentError, MissingDependencyError: as :func:`check_name`, and for an id the
        adapter's library does not know.
      ValueError: an override that names no parameter.
    """
    name = _bring_in(name)
    if name not in _REGISTRY and "/" in name:
        return prefixes.make(name, **overrides)
    check_name(name)
    env = _REGISTRY[name]()
    params = env.default_params
    if overrides:
        fields = {f.name for f in dataclasses.fields(params)}
        unknown_fields = sorted(set(overrides) - fields)
        if unknown_fields:
            raise ValueError(
                f"unknown parameter(s) {unknown_fields} for {name!r}; "
                f"valid: {', '.join(sorted(fields))}"
            )
        try:
            hints = typing.get_type_hints(type(params))
        except (NameError, TypeError):  # annotations that do not resolve: defaults' types
            hints = {}
        overrides = {
            k: _checked(name, k, v, hints.get(k), getattr(params, k)) for k, v in overrides.items()
        }
        params = params.replace(**overrides)
    return env, params


_INT32_MAX = 2**31 - 1  # steps and counts live in int32 inside the programs


def _checked(env: str, key: str, value: Any, annotation: Any, default: Any) -> Any:
    """``value`` for the parameter ``key`` of ``env``, checked against the field's type (its
    annotation, else its default's): a bool for a bool, a whole number for an int (a float with
    no fraction, as TOML writes ``1e3``, is taken), a number for a float. ``max_steps`` must be
    at least 1. Anything else is a ``ValueError`` naming the parameter, the value and the type."""
    kind = annotation if isinstance(annotation, type) else type(default)
    bad = f"parameter {key} of {env!r} takes {_TYPE_WORDS.get(kind, kind.__name__)}, got {value!r}"
    if kind is bool:
        if not isinstance(value, bool | np.bool_):
            raise ValueError(bad)
        return bool(value)
    if kind is int:
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(bad)
        value = int(value)
        low = 1 if key == "max_steps" else -_INT32_MAX - 1
        if not low <= value <= _INT32_MAX:
            raise ValueError(
                f"parameter {key} of {env!r} must be in [{low}, {_INT32_MAX}], got {value}"
            )
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            raise ValueError(bad)
        if not math.isfinite(value):
            raise ValueError(f"parameter {key} of {env!r} must be finite, got {value!r}")
        return float(value)
    if kind is str and not isinstance(value, str):
        raise ValueError(bad)
    return value


_TYPE_WORDS = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}

"""Values from files and the command line, converted to the fields' types or explained."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from jaxrl_fdg.config.schema import TrainConfig
from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.errors import ConfigError

# Flags of ``jaxrl-fdg train`` that are no run setting: a hyperparameter may not take their names.
_COMMAND_FLAGS = ("config", "resume", "env_option", "help")


def check_spec(spec: AlgorithmSpec) -> None:
    """An algorithm's hyperparameters are a dataclass whose field names are not those of run
    settings, which share the command line with them (``--eval-every`` is one flag)."""
    if not dataclasses.is_dataclass(spec.hparams) or not isinstance(spec.hparams, type):
        raise ConfigError(
            f"algorithm {spec.name!r}: hparams must be a dataclass type, got {spec.hparams!r}"
        )
    settings = {f.name for f in dataclasses.fields(TrainConfig)} | set(_COMMAND_FLAGS)
    taken = sorted(f.name for f in dataclasses.fields(spec.hparams) if f.name in settings)
    if taken:
        raise ConfigError(
            f"algorithm {spec.name!r} names hyperparameter(s) {', '.join(taken)} like run "
            "settings of jaxrl-fdg train; rename them"
        )


def make_hparams(spec: AlgorithmSpec, overrides: Mapping[str, Any]) -> Any:
    """The algorithm's hyperparameter dataclass with ``overrides`` applied and type-checked."""
    check_spec(spec)
    fields = {f.name: f for f in dataclasses.fields(spec.hparams)}
    unknown = sorted(str(k) for k in overrides if k not in fields)
    if unknown:
        raise ConfigError(
            f"unknown {spec.name} hyperparameter(s) {', '.join(unknown)} "
            f"(valid: {', '.join(fields)})"
        )
    hints = typing.get_type_hints(spec.hparams)
    values = {k: coerce(k, v, hints[k]) for k, v in overrides.items()}
    return spec.hparams(**values)


def unoptional(annotation: Any) -> Any:
    """``int`` for ``int | None``; any other annotation as it is."""
    args = typing.get_args(annotation)
    if type(None) in args and len(args) == 2:
        return next(a for a in args if a is not type(None))
    return annotation


def coerce(name: str, value: Any, annotation: Any) -> Any:
    """Convert ``value`` (from a file or the command line) to the field's type, or explain.
    A field that may be ``None`` (unset) takes a value of its other type."""
    annotation = unoptional(annotation)
    origin = typing.get_origin(annotation)
    try:
        if annotation is bool:
            if isinstance(value, str):
                lowered = value.lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                return lowered in ("true", "1", "yes")
            if not isinstance(value, bool):
                raise ValueError
            return value
        if annotation is int:
            # 4.0 is not taken for 4: a float where a count belongs is more often a typo
            # (or 1e26) than a count, and int() would round it silently.
            if isinstance(value, bool | float):
                raise ValueError
            return int(value)
        if annotation is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if annotation is str:
            if not isinstance(value, str):
                raise ValueError
            return value
        if origin is tuple:
            (item,) = {a for a in typing.get_args(annotation) if a is not Ellipsis}
            if isinstance(value, str):
                value = [v for v in value.split(",") if v.strip()]
            return tuple(coerce(name, v, item) for v in value)
    except (TypeError, ValueError):
        type_name = getattr(annotation, "__name__", str(annotation))
        raise ConfigError(f"{name} must be of type {type_name}, got {value!r}") from None
    return value


VALUES_MAX = 10_000  # values a configuration may hold, every alias and repeat counted


def check_size(name: str, value: Any, limit: int = VALUES_MAX) -> None:
    """Refuse ``value`` if it holds more than ``limit`` values counted as a copy of it would
    hold them: a YAML alias repeated in itself (a few hundred bytes that expand to billions of
    values) is refused after ``limit`` steps, before anything copies it."""
    seen, stack = 0, [value]
    while stack:
        item = stack.pop()
        seen += 1
        if seen > limit:
            raise ConfigError(
                f"{name} holds more than {limit:,} values (counting each use of a YAML alias); "
                "a configuration this large is refused"
            )
        if isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)


# -- files -----------------------------------------------------------------------------------

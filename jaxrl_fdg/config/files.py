"""Configuration files: TOML, YAML or JSON in, a resolved TOML out (the run folder's)."""

from __future__ import annotations

import dataclasses
import json
import tomllib
import typing
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from jaxrl_fdg.config.resolve import Resolved, check_values
from jaxrl_fdg.config.schema import TrainConfig
from jaxrl_fdg.config.values import check_size, coerce
from jaxrl_fdg.errors import ConfigError

_TOP_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)}


def from_mapping(data: Mapping[str, Any], source: str = "config") -> TrainConfig:
    """Build a ``TrainConfig`` from a mapping (as read from ``source``, a file or the command
    line) and check each value on its own, the algorithm's hyperparameters included.

    Every error is a :class:`ConfigError` that starts with ``source`` and names the key: an
    unknown key, a value of the wrong type, a value out of range. Checks that combine several
    values (a batch that must split into minibatches) are left to :func:`resolve`, since the
    values may come from different places.
    """
    unknown = sorted(str(k) for k in data if k not in _TOP_FIELDS)
    if unknown:
        raise ConfigError(
            f"{source}: unknown key(s) {', '.join(unknown)} "
            f"(valid: {', '.join(sorted(_TOP_FIELDS))})"
        )
    hints = typing.get_type_hints(TrainConfig)
    values: dict[str, Any] = {}
    try:
        for key, value in data.items():
            if key in ("hparams", "env_options"):
                if not isinstance(value, Mapping):
                    raise ConfigError(f"{key} must be a table, got {value!r}")
                values[key] = dict(value)
            elif key in ("out", "run_name") and value in (None, ""):
                values[key] = None
            else:
                base = str if key in ("out", "run_name") else hints[key]
                values[key] = coerce(key, value, base)
        config = TrainConfig(**values)
        check_values(config)
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None
    return config


class _SyntaxError(ValueError):
    pass


def _unique(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """A mapping of ``pairs``, refusing a key given twice (JSON and YAML readers otherwise
    keep the last silently; TOML refuses it itself)."""
    mapping: dict[Any, Any] = {}
    for key, value in pairs:
        if key in mapping:
            raise _SyntaxError(f"the key {key!r} is given twice")
        mapping[key] = value
    return mapping


def _read_json(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_unique)


def _read_yaml(text: str) -> Any:
    import yaml  # imported for YAML files only

    class Loader(yaml.SafeLoader):  # safe_load's loader, refusing a key given twice
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # keys merged in may be overridden
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, Hashable):  # YAML's own error says so, below
                    continue
                if key in seen:
                    raise _SyntaxError(f"the key {key!r} is given twice")
                seen.add(key)
            return super().construct_mapping(node, deep)

    try:
        return yaml.load(text, Loader=Loader)
    except yaml.YAMLError as e:
        raise _SyntaxError(str(e)) from None


# Readers by file suffix; each error type is a syntax error in that format.
_READERS = {
    ".toml": (tomllib.loads, tomllib.TOMLDecodeError),
    ".json": (_read_json, (json.JSONDecodeError, _SyntaxError)),
    ".yaml": (_read_yaml, _SyntaxError),
    ".yml": (_read_yaml, _SyntaxError),
}


def load(path: str | Path) -> dict[str, Any]:
    """Read a ``.toml``, ``.json``, ``.yaml`` or ``.yml`` config file into a mapping."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {str(path)!r} is a folder")
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    if path.suffix not in _READERS:
        raise ConfigError(f"config file {str(path)!r} must end in {', '.join(_READERS)}")
    read, syntax_error = _READERS[path.suffix]
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {str(path)!r} is not UTF-8 text") from None
    except OSError as e:
        raise ConfigError(f"config file {str(path)!r} cannot be read: {e.strerror}") from None
    try:
        data = read(text)
    except RecursionError:  # a nesting deeper than the parser's stack
        raise ConfigError(f"config file {str(path)!r} is nested too deeply") from None
    except syntax_error as e:
        detail = " ".join(str(e).split())  # YAML's messages span lines; ours are one line
        raise ConfigError(
            f"config file {str(path)!r} is not valid {path.suffix[1:]}: {detail}"
        ) from None
    if data is None:  # an empty YAML file: no settings at all
        return {}
    check_size(f"config file {str(path)!r}", data)
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {str(path)!r} must hold a table of settings, got {type(data).__name__}"
        )
    return data


def to_mapping(resolved: Resolved) -> dict[str, Any]:
    """The fully resolved configuration, every hyperparameter spelled out (for the run folder)."""
    data = dataclasses.asdict(resolved.config)
    data["hparams"] = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in dataclasses.asdict(resolved.hparams).items()
    }
    # A grid as its list of values, a search range as its text (the lanes are drawn from it).
    data["hparams"].update(
        {k: list(v) if isinstance(v, tuple) else str(v) for k, v in resolved.sweep.items()}
    )
    # The run folder's own name is not part of what the run computes: a re-run gets a new one.
    data.pop("run_name")
    # TOML has no null: leave unset optional values out; loading restores the default (None).
    return {k: v for k, v in data.items() if v is not None}


def dump_toml(data: Mapping[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(data)

"""Sweeps: the lanes of a run (each combination of swept values, times each seed).

A list of values given for a float hyperparameter sweeps it; all lanes run in one vmapped
program (``jaxrl_fdg.policies.replication``). The lanes are computed once, by
:func:`jaxrl_fdg.config.resolve`, and read from ``Resolved.lanes`` everywhere else.
"""

from __future__ import annotations

import dataclasses
import itertools
import typing
from collections.abc import Mapping
from typing import Any, NamedTuple

from jaxrl_fdg.config.schema import TrainConfig
from jaxrl_fdg.config.values import coerce
from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.errors import ConfigError


class Lane(NamedTuple):
    """One of the runs a configuration asks for: its seed and its swept hyperparameters."""

    seed: int
    point: dict[str, float]

    @property
    def name(self) -> str:
        """The lane's folder name inside the run folder, e.g. ``lr=0.001-seed-0``."""
        # repr: the shortest text that reads back as the same float, so names never collide.
        return "-".join([*(f"{k}={v!r}" for k, v in self.point.items()), f"seed-{self.seed}"])


def lanes(config: TrainConfig, sweep: Mapping[str, tuple[float, ...]]) -> tuple[Lane, ...]:
    """The runs ``config`` describes, in the order of the vmapped axis: each combination of the
    ``sweep``'s values (the first hyperparameter varying slowest), and within it each seed."""
    points = [
        dict(zip(sweep, values, strict=True)) for values in itertools.product(*sweep.values())
    ]
    seeds = range(config.seed, config.seed + config.num_seeds)
    return tuple(Lane(seed, point) for point in points for seed in seeds)


def split_sweep(
    spec: AlgorithmSpec, overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, tuple[float, ...]]]:
    """``(single overrides, {swept hyperparameter: its values})``.

    A list, or a comma-separated string, given for a float hyperparameter is a sweep. Only
    floats can be swept in one program: they enter the computation as values, while the others
    (sizes, counts, switches, names) decide the program's shape or structure.
    """
    fields = {f.name for f in dataclasses.fields(spec.hparams)}
    hints = typing.get_type_hints(spec.hparams)
    fixed, sweep = {}, {}
    for name, value in overrides.items():
        values = value.split(",") if isinstance(value, str) and "," in value else value
        many = isinstance(values, (list, tuple)) and not isinstance(values, str)
        if not many or name not in fields or typing.get_origin(hints[name]) is tuple:
            fixed[name] = value
            continue
        if hints[name] is not float:
            raise ConfigError(
                f"hyperparameter {name} = {value!r}: only float hyperparameters can be swept in "
                f"one program ({name} is {getattr(hints[name], '__name__', hints[name])}: it "
                "shapes the program); run one configuration per value instead"
            )
        values = tuple(coerce(name, v, float) for v in values)
        if len(values) < 1 or len(set(values)) != len(values):
            raise ConfigError(
                f"hyperparameter {name} = {value!r}: a sweep needs distinct values, at least one"
            )
        sweep[name] = values
    return fixed, sweep

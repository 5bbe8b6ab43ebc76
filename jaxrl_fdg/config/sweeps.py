"""Sweeps: the lanes of a run (each combination of swept values, times each seed; or points drawn
at random).

A list of values given for a float hyperparameter sweeps it (a grid); a distribution,
``loguniform:LOW:HIGH`` or ``uniform:LOW:HIGH``, makes the run a random search of ``num_lanes``
points, each lane with a seed of its own (drawn by :mod:`jaxrl_fdg.tuning.search`). All lanes run
in one vmapped program (``jaxrl_fdg.policies.replication``). The lanes are computed once, by
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
from jaxrl_fdg.tuning.search import DISTRIBUTIONS, Distribution, Swept, draw_points, is_search


class Lane(NamedTuple):
    """One of the runs a configuration asks for: its seed and its swept hyperparameters, and
    for a lane of a population its place in it (``index``)."""

    seed: int
    point: dict[str, float]
    index: int | None = None

    @property
    def name(self) -> str:
        """The lane's folder name inside the run folder: ``lr=0.001-seed-0`` (its point), or
        ``lane-3`` in a population, whose lanes leave their starting points as they train
        (``population.json`` records where each started)."""
        return self.point_name if self.index is None else f"lane-{self.index}"

    @property
    def point_name(self) -> str:
        """``lr=0.001-seed-0``: the lane's starting point and seed."""
        # repr: the shortest text that reads back as the same float, so names never collide.
        return "-".join([*(f"{k}={v!r}" for k, v in self.point.items()), f"seed-{self.seed}"])


def lanes(config: TrainConfig, sweep: Mapping[str, Swept]) -> tuple[Lane, ...]:
    """The runs ``config`` describes, in the order of the vmapped axis.

    A grid: each combination of the ``sweep``'s values (the first hyperparameter varying
    slowest), and within it each seed. A random search: ``num_lanes`` points, lane ``i`` with
    seed ``seed + i``, each hyperparameter given a range drawn from it and each given a list
    drawn uniformly from the list; the draws depend on ``seed`` alone.
    """
    if is_search(sweep):
        draws = draw_points(config.seed, config.num_lanes, sweep)
        found = [Lane(config.seed + i, point) for i, point in enumerate(draws)]
    else:
        points = [
            dict(zip(sweep, values, strict=True)) for values in itertools.product(*sweep.values())
        ]
        seeds = range(config.seed, config.seed + config.num_seeds)
        found = [Lane(seed, point) for point in points for seed in seeds]
    if config.pbt_every or config.halving_every:  # a population: lanes named by their place
        found = [lane._replace(index=i) for i, lane in enumerate(found)]
    return tuple(found)


def parse_distribution(name: str, value: Any) -> Distribution | None:
    """``value`` as a :class:`Distribution` if it is one's text (``loguniform:1e-4:1e-2``),
    else ``None``; a malformed range is explained."""
    if not isinstance(value, str) or ":" not in value:
        return None
    kind, *bounds = value.split(":")
    if kind not in DISTRIBUTIONS or len(bounds) != 2:
        raise ConfigError(
            f"hyperparameter {name} = {value!r}: a search range is KIND:LOW:HIGH with KIND one "
            f"of {', '.join(DISTRIBUTIONS)} (e.g. loguniform:1e-4:1e-2)"
        )
    low, high = (coerce(name, b, float) for b in bounds)
    if not low < high or (kind == "loguniform" and low <= 0):
        raise ConfigError(
            f"hyperparameter {name} = {value!r}: a search range needs LOW < HIGH"
            + (", both positive for loguniform" if kind == "loguniform" else "")
        )
    return Distribution(kind, low, high)


def split_sweep(
    spec: AlgorithmSpec, overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Swept]]:
    """``(single overrides, {swept hyperparameter: its values or its range})``.

    A list, or a comma-separated string, given for a float hyperparameter is a sweep; a range
    (``loguniform:LOW:HIGH``, ``uniform:LOW:HIGH``) makes a random search. Only floats can be
    swept in one program: they enter the computation as values, while the others (sizes,
    counts, switches, names) decide the program's shape or structure.
    """
    fields = {f.name for f in dataclasses.fields(spec.hparams)}
    hints = typing.get_type_hints(spec.hparams)
    fixed, sweep = {}, {}
    for name, value in overrides.items():
        if name in fields and hints[name] is float:
            distribution = parse_distribution(name, value)
            if distribution is not None:
                sweep[name] = distribution
                continue
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

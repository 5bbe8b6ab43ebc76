"""A random search's points: each hyperparameter given a range drawn from it, each given a list
drawn uniformly from the list; the draws depend on the run's seed alone."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

DISTRIBUTIONS = ("loguniform", "uniform")
# Mixed into the seed of the random search's draws, so they are not the run's key stream.
_SEARCH_STREAM = 0x5EA6C4


@dataclasses.dataclass(frozen=True)
class Distribution:
    """A hyperparameter's search range: ``loguniform`` (uniform in its logarithm) or
    ``uniform`` between ``low`` and ``high``."""

    kind: str
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.kind}:{self.low!r}:{self.high!r}"

    def sample(self, rng: np.random.Generator) -> float:
        if self.kind == "loguniform":
            return float(np.float32(math.exp(rng.uniform(math.log(self.low), math.log(self.high)))))
        return float(np.float32(rng.uniform(self.low, self.high)))


# A swept hyperparameter: its values (a grid) or its range (a random search).
Swept = tuple[float, ...] | Distribution


def is_search(sweep: Mapping[str, Swept]) -> bool:
    """Whether ``sweep`` draws its points at random (any hyperparameter given a range)."""
    return any(isinstance(v, Distribution) for v in sweep.values())


def draw_points(seed: int, lanes: int, sweep: Mapping[str, Swept]) -> list[dict[str, float]]:
    """``lanes`` points of a random search over ``sweep``, drawn from ``seed`` alone."""
    rng = np.random.default_rng([seed, _SEARCH_STREAM])
    draws = []
    for _ in range(lanes):
        point = {}
        for name, swept in sweep.items():
            if isinstance(swept, Distribution):
                point[name] = swept.sample(rng)
            else:
                point[name] = swept[int(rng.integers(len(swept)))]
        draws.append(point)
    return draws

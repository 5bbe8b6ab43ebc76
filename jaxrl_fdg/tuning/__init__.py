"""Tuning across the lanes of one program: population-based training, successive halving, and
the random search's draws.

A run of several lanes (seeds × the points of a sweep or a random search) trains them side by
side in one vmapped program (``jaxrl_fdg.policies.replication``). A population makes them learn
from each other inside that program (:mod:`jaxrl_fdg.tuning.population`); its settings are
checked with the run's configuration (:mod:`jaxrl_fdg.tuning.settings`); a random search draws
its points (:mod:`jaxrl_fdg.tuning.search`).
"""

from jaxrl_fdg.tuning.population import (
    EPISODE_RETURN,
    LINEAGE_PREFIXES,
    Halving,
    HalvingState,
    Population,
    PopulationState,
    Range,
    Ranked,
)
from jaxrl_fdg.tuning.search import DISTRIBUTIONS, Distribution, draw_points, is_search
from jaxrl_fdg.tuning.settings import check, factors, from_config

__all__ = [
    "DISTRIBUTIONS",
    "EPISODE_RETURN",
    "LINEAGE_PREFIXES",
    "Distribution",
    "Halving",
    "HalvingState",
    "Population",
    "PopulationState",
    "Range",
    "Ranked",
    "check",
    "draw_points",
    "factors",
    "from_config",
    "is_search",
]

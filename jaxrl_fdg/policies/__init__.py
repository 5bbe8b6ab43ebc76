"""Execution policies: how a graph's fragments are compiled (fusion plans) and where they run
(placements). Placement and fusion decisions live here alone; the rest of the library asks a
:class:`Placement` object what to do."""

from __future__ import annotations

from typing import Any

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies import actor_learner, data_parallel, host_env, single
from jaxrl_fdg.policies.base import (
    AUTO_PLACEMENT,
    BasePlacement,
    Placement,
    get,
    register,
    registered,
)
from jaxrl_fdg.policies.data_parallel import BACKENDS as DP_BACKENDS
from jaxrl_fdg.policies.distributed import check_processes
from jaxrl_fdg.policies.fusion import (
    AUTO_FUSION,
    FUSION_MODES,
    PROGRAMS,
    Plan,
    make_plan,
    programs,
)
from jaxrl_fdg.policies.replication import Replicated, SeedLoop, seed_keys


def select(config: Any, lanes: int) -> Placement:
    """The placement a run of ``lanes`` lanes (seeds × sweep points) gets: the one named by
    ``config.placement``, or replication for several lanes, which share placement ``single``."""
    placement = get(config.placement)
    if lanes == 1:
        return placement
    if placement is not single.SINGLE:
        raise ConfigError(
            f"placement {config.placement!r} and {lanes} runs (num_seeds = {config.num_seeds} "
            "× the hyperparameter sweep) cannot be combined; the runs of a sweep or of several "
            "seeds share placement 'single'"
        )
    return Replicated(lanes)


__all__ = [
    "AUTO_FUSION",
    "AUTO_PLACEMENT",
    "DP_BACKENDS",
    "FUSION_MODES",
    "PROGRAMS",
    "BasePlacement",
    "Placement",
    "Plan",
    "Replicated",
    "SeedLoop",
    "actor_learner",
    "check_processes",
    "data_parallel",
    "get",
    "host_env",
    "make_plan",
    "programs",
    "register",
    "registered",
    "seed_keys",
    "select",
    "single",
]

"""Execution policies: how a graph's fragments are compiled (fusion plans) and where they run
(placements). Placement and fusion decisions live here alone; the rest of the library asks a
:class:`Placement` object what to do, through a :class:`Request`, and never hands a placement
the run's configuration."""

from __future__ import annotations

# Registered in this order, which messages and --placement auto follow: the default first.
from jaxrl_fdg.policies import single  # isort: skip
from jaxrl_fdg.policies import data_parallel  # isort: skip
from jaxrl_fdg.policies import actor_learner  # isort: skip
from jaxrl_fdg.policies import host_env  # isort: skip
from jaxrl_fdg.policies.base import (
    AUTO_PLACEMENT,
    BasePlacement,
    Devices,
    EnvKind,
    LoopSource,
    Placement,
    Request,
    Supports,
    auto_devices,
    check,
    get,
    register,
    registered,
    select,
    unregister,
)
from jaxrl_fdg.policies.data_parallel import BACKENDS as DP_BACKENDS
from jaxrl_fdg.policies.distributed import check_processes
from jaxrl_fdg.policies.fusion import (
    AUTO_FUSION,
    FUSION_MODES,
    PLANS,
    PROGRAMS,
    Plan,
    make_plan,
    programs,
)
from jaxrl_fdg.policies.replication import Replicated, SeedLoop, replicated, seed_keys

__all__ = [
    "AUTO_FUSION",
    "AUTO_PLACEMENT",
    "DP_BACKENDS",
    "FUSION_MODES",
    "PLANS",
    "PROGRAMS",
    "BasePlacement",
    "Devices",
    "EnvKind",
    "LoopSource",
    "Placement",
    "Plan",
    "Replicated",
    "Request",
    "SeedLoop",
    "Supports",
    "actor_learner",
    "auto_devices",
    "check",
    "check_processes",
    "data_parallel",
    "get",
    "host_env",
    "make_plan",
    "programs",
    "register",
    "registered",
    "replicated",
    "seed_keys",
    "select",
    "single",
    "unregister",
]

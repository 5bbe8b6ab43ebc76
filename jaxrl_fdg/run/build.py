"""The loop a resolved configuration describes: its algorithm built for each lane, wrapped by
its placement."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxrl_fdg.config import Resolved
from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.builder import LoopBuilder
from jaxrl_fdg.core.protocol import LoopLike


def loop_builder(resolved: Resolved) -> LoopBuilder:
    """Builds a lane's loop: the algorithm with the lane's swept values (traced scalars inside a
    vmap), learning one iteration behind with ``policy_lag = 1``."""

    def algorithm(swept: Mapping[str, Any]) -> Algorithm:
        context = resolved.context
        if swept:  # each value was checked in resolve; traced ones pass the checks through
            hparams = dataclasses.replace(context.hparams, **swept)
            context = dataclasses.replace(context, hparams=hparams)
        return resolved.spec.build(context)

    config = resolved.config
    return LoopBuilder(algorithm, config.rollout_len, lagged=bool(config.policy_lag))


def build_loop(resolved: Resolved) -> LoopLike:
    """The loop ``resolved`` describes, as its placement wraps it."""
    return resolved.placement.wrap(resolved, loop_builder(resolved))

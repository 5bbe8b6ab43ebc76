"""The loop a resolved configuration describes: its algorithm built for each lane, wrapped by
its placement."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxrl_fdg import tuning
from jaxrl_fdg.config import Resolved
from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.builder import LoopBuilder
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.policies import LoopSource


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


def loop_source(resolved: Resolved) -> LoopSource:
    """What ``resolved``'s placement builds its loop from."""
    lanes = resolved.lanes
    return LoopSource(
        build=loop_builder(resolved),
        env=resolved.env,
        env_params=resolved.env_params,
        num_envs=resolved.context.num_envs,
        request=resolved.request,
        sweep={name: tuple(lane.point[name] for lane in lanes) for name in resolved.sweep},
        population=tuning.from_config(resolved.config, resolved.sweep, len(lanes)),
    )


def build_loop(resolved: Resolved) -> Loop:
    """The loop ``resolved`` describes, as its placement wraps it."""
    return resolved.placement.wrap(loop_source(resolved))

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
from jaxrl_fdg.core.cadence import Every
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
        # The graph is named after the spec the run names, whichever build made it (a spec
        # made from a built-in's with another name is that name's graph).
        return resolved.spec.build(context)._replace(name=resolved.spec.name)

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


def hazards(loop: Loop, iterations: int) -> list[str]:
    """What ``loop`` declares that is likely a mistake, one sentence each: its graph's hazards
    (``Graph.hazards``) and each node of ``every(n)`` that cannot run within the run's
    ``iterations`` iterations."""
    found = list(loop.info.graph.hazards)
    for node in loop.info.schedule.after:
        if isinstance(node.cadence, Every) and node.cadence.n > iterations:
            calls = ", ".join(c.label for c in node.calls)
            found.append(
                f"{calls} runs {node.cadence}, and this run has {iterations:,} iteration"
                f"{'s' if iterations != 1 else ''}: it never runs (raise --total-steps, or run "
                "it more often)"
            )
    return found

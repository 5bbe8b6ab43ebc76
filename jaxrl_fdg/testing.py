"""Helpers for testing algorithms, environments and fragments written for jaxrl-fdg: what the
library's own tests use, public so that a user's tests can say the same things the same way."""

from __future__ import annotations

from typing import Any

import jax

from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.step import StepCall, open_streams, step_body
from jaxrl_fdg.core.types import LoopState


def first_call(loop: Loop, state: LoopState, key: jax.Array) -> StepCall:
    """The first call of ``loop``'s step body at the start of a rollout from ``state`` with
    rollout key ``key`` (the actor's, in every built-in algorithm): its index, fragment, the
    inputs it reads (only those it declares) and its key."""
    fixed = loop.fixed_edges(state.fragments)
    (stream, *_) = open_streams(loop.info, loop.carry(state.fragments, key))
    return next(step_body(loop.info, fixed, stream))


def first_call_state(loop: Loop, state: LoopState) -> Any:
    """The state of the fragment the step body calls first (the actor's)."""
    return state.fragments[loop.info.schedule.rollout.calls[0].fragment]


__all__ = ["first_call", "first_call_state"]

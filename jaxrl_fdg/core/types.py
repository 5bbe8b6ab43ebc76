"""Types shared across the core: fragment callables, edges, metrics, transitions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import jax

State = Any
Edges = Mapping[str, Any]
Metrics = dict[str, jax.Array]


class InitFn(Protocol):
    def __call__(self, key: jax.Array) -> State:
        """Return the fragment's initial state."""


class ApplyFn(Protocol):
    def __call__(self, state: State, inputs: Edges, key: jax.Array) -> tuple[State, dict[str, Any]]:
        """Consume ``inputs`` (named edges), return the new state and the produced edges."""


class PublishFn(Protocol):
    def __call__(self, state: State) -> dict[str, Any]:
        """Return the edges this fragment exposes from its state."""


class Transition(NamedTuple):
    """One step of experience; a trajectory is a ``Transition`` of arrays ``[T, B, ...]``.

    ``observation`` is the one the actor acted on; ``next_observation`` the one the step actually
    reached (the final one of an episode that ended), so a learner can bootstrap on truncation.
    ``extras`` holds the actor's outputs besides the action (log-probabilities, values, ...);
    ``info`` every other edge produced during the step (the env's episode statistics, outputs of
    user fragments).
    """

    observation: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_observation: jax.Array
    extras: dict[str, jax.Array]
    info: dict[str, jax.Array]


class Pending(NamedTuple):
    """A rollout collected but not yet learned from (a lagged loop's): the trajectory, its learn
    key, and ``version``, the number of updates the parameters that collected it had had."""

    trajectory: Transition
    key: jax.Array
    version: jax.Array


class LoopState(NamedTuple):
    """The graph state (``{fragment name: state}``, exactly the graph's fragments), the key
    stream and the iteration counter; ``pending`` holds the rollout a lagged loop learns from
    next, ``population`` the state of a population across the lanes of a replicated run
    (``jaxrl_fdg.tuning``); each is ``None`` otherwise."""

    fragments: dict[str, Any]
    key: jax.Array
    iteration: jax.Array
    pending: Pending | None = None
    population: Any = None

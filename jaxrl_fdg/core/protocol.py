"""What a fusion plan consumes: the :class:`LoopLike` protocol, and a base for loop wrappers.

A plan (``jaxrl_fdg.policies.fusion``) compiles and calls the loop's pure pieces and never looks
inside them. A placement or a replication changes *how* those pieces compute (learning one
iteration behind, vmapped over seeds, split into device shards) by wrapping a loop in another
object of the same protocol. :class:`LoopWrapper` forwards every member explicitly to the
wrapped loop, so a wrapper overrides exactly the computing pieces it changes and nothing is
reached by attribute magic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import jax

from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.fragment import Fragment
from jaxrl_fdg.core.graph import Graph, Schedule
from jaxrl_fdg.core.loop import Loop, StepRunner
from jaxrl_fdg.core.types import LoopState, Metrics, Transition


class LoopLike(Protocol):
    """What a plan uses of a loop: the graph it runs, the pure pieces it compiles (a wrapper
    may transform them: vmap them over lanes, map them over shards), and the rollout driven
    from Python, which computes nothing itself and works on states of any batch shape."""

    graph: Graph
    rollout_len: int

    def init(self, key: jax.Array) -> LoopState: ...
    def begin(self, state: LoopState) -> tuple[LoopState, Any, jax.Array]: ...
    def rollout(self, state: LoopState, fixed: dict | None = None) -> tuple: ...
    def learn(self, state: LoopState, trajectory: Transition, key: jax.Array) -> tuple: ...
    def iteration(self, state: LoopState, _: Any = None) -> tuple[LoopState, Metrics]: ...
    def step_fn(self, index: int) -> Callable: ...
    def host_step_fn(self, index: int) -> Callable: ...
    def stack(self, transitions: Sequence[Transition]) -> Transition: ...

    def unroll(
        self, state: LoopState, key: jax.Array, run: StepRunner, steps: int | None = None
    ) -> tuple[LoopState, list[Transition]]: ...
    def fixed_edges(self, states: dict) -> dict[str, Any]: ...


class LoopWrapper:
    """A :class:`LoopLike` that forwards every member to ``inner``; subclasses override the
    computing pieces they change."""

    def __init__(self, inner: LoopLike):
        self.inner = inner

    # -- what the loop is --------------------------------------------------------------------

    @property
    def base(self) -> Loop:
        """The unwrapped :class:`Loop` at the bottom of the wrappers."""
        inner = self.inner
        return inner.base if isinstance(inner, LoopWrapper) else inner

    @property
    def graph(self) -> Graph:
        return self.inner.graph

    @property
    def schedule(self) -> Schedule:
        return self.inner.graph.schedule

    @property
    def rollout_len(self) -> int:
        return self.inner.rollout_len

    @property
    def algorithm(self) -> Algorithm:
        return self.base.algorithm

    @property
    def fragments(self) -> tuple[Fragment, ...]:
        return self.base.fragments

    @property
    def step_fragments(self) -> tuple[Fragment, ...]:
        return self.base.step_fragments

    @property
    def env_frag(self) -> Fragment:
        return self.base.env_frag

    @property
    def actor(self) -> Fragment:
        return self.base.actor

    @property
    def learner(self) -> Fragment:
        return self.base.learner

    @property
    def policy(self) -> Callable | None:
        return self.base.policy

    @property
    def policy_memory(self) -> Callable | None:
        return self.base.policy_memory

    @property
    def learner_side(self) -> tuple[str, ...]:
        return self.base.learner_side

    def check_state(self, state: LoopState) -> None:
        self.graph.check_state(state.fragments)

    # -- computing pieces --------------------------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        return self.inner.init(key)

    def begin(self, state: LoopState):
        return self.inner.begin(state)

    def rollout(self, state: LoopState, fixed: dict | None = None):
        return self.inner.rollout(state, fixed)

    def learn(self, state: LoopState, trajectory: Transition, key: jax.Array):
        return self.inner.learn(state, trajectory, key)

    def iteration(self, state: LoopState, _: Any = None):
        return self.inner.iteration(state)

    def step_fn(self, index: int) -> Callable:
        return self.inner.step_fn(index)

    def host_step_fn(self, index: int) -> Callable:
        return self.inner.host_step_fn(index)

    def stack(self, transitions: Sequence[Transition]) -> Transition:
        return self.inner.stack(transitions)

    # -- plumbing ----------------------------------------------------------------------------

    def unroll(self, state: LoopState, key: jax.Array, run: StepRunner, steps: int | None = None):
        return self.inner.unroll(state, key, run, steps)

    def fixed_edges(self, states: dict) -> dict[str, Any]:
        return self.inner.fixed_edges(states)

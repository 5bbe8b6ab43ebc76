"""The loop as a record: the pure pieces a plan compiles, and what the loop is.

:class:`Loop` is a ``NamedTuple`` of pure functions, in the manner of optax's
``GradientTransformation``: a plan (``jaxrl_fdg.policies.fusion``) compiles and calls its
pieces and never looks inside them. A variant of the loop is a function from one record to
another, as ``optax.chain`` composes transformations: learning one iteration behind
(:func:`jaxrl_fdg.core.lagged.lagged`), vmapped over lanes
(:func:`jaxrl_fdg.policies.replication.replicated`), mapped over device shards
(:func:`jaxrl_fdg.policies.data_parallel.sharded`). Each replaces the pieces it changes and
keeps the others. :class:`LoopInfo` says what the loop is (its graph, its env fragment, the
learner's side, how its env batch is laid out); it is read, never transformed.

:func:`jaxrl_fdg.core.loop.make_loop` builds the record of a graph.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax

from jaxrl_fdg.core.fragment import Fragment, Site
from jaxrl_fdg.core.graph import Graph
from jaxrl_fdg.core.schedule import Schedule
from jaxrl_fdg.core.types import LoopState, Metrics, Pending, Transition

# A call of the step body as a pure function: ``(state, inputs, key, *args) -> (state, outputs)``
# (the first call also returns the other calls' keys and the next key; see core.step).
StepFn = Callable[..., tuple]


class LoopInfo(NamedTuple):
    """What a loop is: read by plans and placements, never transformed.

    Attributes:
      graph: the dataflow graph and its schedule.
      env, actor, learner: the env fragment, the actor and the primary learner (whose
        ``params`` evaluation plays).
      policy, policy_memory: the algorithm's deterministic policy for evaluation (and the
        memory a recurrent one starts an episode with), if it has one.
      halves: ``2`` where the env batch is two halves with states and keys of their own (host
        simulators stepped while the device acts for the other half); else ``1``.
      lagged: whether the learner trains on the rollout collected one iteration earlier (then
        :attr:`Loop.learn_pending` is set).
    """

    graph: Graph
    env: Fragment
    actor: Fragment
    learner: Fragment
    policy: Callable[..., Any] | None = None
    policy_memory: Callable[[int], Any] | None = None
    halves: int = 1
    lagged: bool = False

    @property
    def schedule(self) -> Schedule:
        return self.graph.schedule

    @property
    def rollout_len(self) -> int:
        return self.graph.rollout_len

    @property
    def step_fragments(self) -> tuple[Fragment, ...]:
        """The fragments the step body calls, in the order of their first call."""
        return tuple(self.graph.fragment(name) for name in self.graph.step_fragments)

    @property
    def learner_side(self) -> tuple[str, ...]:
        """The fragments an actor/learner placement keeps with the learner: all but the step
        body's, which stay with the actors."""
        step = set(self.graph.step_fragments)
        return tuple(f.name for f in self.graph.fragments if f.name not in step)

    @property
    def on_host(self) -> tuple[bool, ...]:
        """Per call of the step body: whether its fragment runs on the host."""
        return tuple(
            self.graph.fragment(c.fragment).site is Site.HOST for c in self.schedule.rollout.calls
        )


def _no_args(state: LoopState) -> tuple:
    del state
    return ()


class _LoopFields(NamedTuple):
    info: LoopInfo
    init: Callable[[jax.Array], LoopState]
    begin: Callable[[LoopState], tuple[LoopState, Any, jax.Array]]
    calls: tuple[StepFn, ...]
    host_calls: tuple[StepFn, ...]
    stack: Callable[[Sequence[Transition]], Transition]
    rollout: Callable[..., tuple[LoopState, Transition, jax.Array]]
    learn: Callable[[LoopState, Transition, jax.Array], tuple[LoopState, Metrics]]
    iteration: Callable[..., tuple[LoopState, Metrics]]
    fixed_edges: Callable[[dict], dict[str, Any]]
    carry: Callable[[dict, Any], Any]
    end_rollout: Callable[[dict, Any], dict]
    call_args: Callable[[LoopState], tuple] = _no_args
    learn_pending: Callable[[LoopState, Pending], tuple[LoopState, Metrics]] | None = None


class Loop(_LoopFields):
    """The pure pieces of the RL loop (see the module docstring).

    Attributes:
      info: what the loop is (:class:`LoopInfo`).
      init: ``key -> state``.
      begin: ``state -> (state, rollout key, learn key)``: an iteration's keys.
      calls: the step body's calls, in schedule order, each a pure function
        ``(state, inputs, key, *args)`` (``args``: what :attr:`call_args` gives).
      host_calls: the same, but a host fragment's call computed in numpy by its
        ``host_apply`` outside any program (the call itself where it has none).
      stack: the steps' transitions as one trajectory ``[T, B, ...]``.
      rollout: ``(state, fixed=None) -> (state, trajectory, learn key)``: ``begin`` and the
        steps in a ``lax.scan``; ``fixed`` are the edges read from outside the step body, given
        where ``state`` holds only the actors' side (an actor/learner placement).
      learn: ``(state, trajectory, learn key) -> (state, metrics)``: the nodes after the rollout.
      iteration: ``state -> (state, metrics)``: ``rollout`` then ``learn``.
      fixed_edges: ``fragment states -> edges`` the step body reads from fragments outside it
        (the learner's ``params``), constant for a rollout.
      carry: ``(fragment states, rollout key) -> rollout carry``; ``end_rollout`` puts a carry
        back: ``(fragment states, carry) -> fragment states``.
      call_args: ``state -> args`` every call of the step body takes after its key for one
        rollout (a population's hyperparameters); ``()`` by default.
      learn_pending: a lagged loop's learner step on a pending rollout,
        ``(state, pending) -> (state, metrics)``; ``None`` for a loop that is not lagged.

    ``Loop(env, algorithm, rollout_len)`` is the deprecated way to build one:
    use :func:`jaxrl_fdg.core.loop.make_loop`.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Loop:
        if args and isinstance(args[0], Fragment):
            warnings.warn(
                "Loop(env, algorithm, rollout_len) is deprecated; use "
                "jaxrl_fdg.core.loop.make_loop(env, algorithm, rollout_len)",
                DeprecationWarning,
                stacklevel=2,
            )
            from jaxrl_fdg.core.loop import make_loop

            return make_loop(*args, **kwargs)
        return super().__new__(cls, *args, **kwargs)

    @property
    def graph(self) -> Graph:
        return self.info.graph

    @property
    def rollout_len(self) -> int:
        return self.info.rollout_len

    # -- deprecated names of the loop class this record replaces -----------------------------

    def step_fn(self, index: int) -> StepFn:
        """Deprecated: ``calls[index]``."""
        _deprecated("Loop.step_fn(i)", "Loop.calls[i]")
        return self.calls[index]

    @property
    def env_frag(self) -> Fragment:
        """Deprecated: ``info.env``."""
        _deprecated("Loop.env_frag", "Loop.info.env")
        return self.info.env

    @property
    def actor(self) -> Fragment:
        """Deprecated: ``info.actor``."""
        _deprecated("Loop.actor", "Loop.info.actor")
        return self.info.actor

    @property
    def learner(self) -> Fragment:
        """Deprecated: ``info.learner``."""
        _deprecated("Loop.learner", "Loop.info.learner")
        return self.info.learner

    @property
    def policy(self) -> Callable[..., Any] | None:
        """Deprecated: ``info.policy``."""
        _deprecated("Loop.policy", "Loop.info.policy")
        return self.info.policy

    @property
    def schedule(self) -> Schedule:
        """Deprecated: ``info.schedule``."""
        _deprecated("Loop.schedule", "Loop.info.schedule")
        return self.info.schedule


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)

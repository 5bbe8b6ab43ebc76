"""The fragment: one node of an algorithm's dataflow graph.

A fragment is a named bundle of pure functions over a state of its own, in the manner of optax's
``GradientTransformation``: a ``NamedTuple`` made by a factory, closing over static configuration.
Fragments talk only through named edges:

* ``apply(state, inputs, key) -> (state, outputs)`` consumes the edges named in ``inputs`` (a
  mapping, so a fragment can take extra inputs without a new base type) and produces those named
  in ``outputs``;
* ``publish(state) -> {edge: value}`` exposes part of the state to other fragments, for example a
  learner's current policy parameters or an environment's current observation. Published edges
  are read before ``apply`` runs: they are how feedback loops (params → actor, observation → actor)
  close without a special first value.

Fragments contain no parallelism and no compilation: no ``jit``, no ``pmean``, no device names.
Where and how they run is the business of a fusion or placement policy.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import jax

State = Any
Edges = Mapping[str, Any]


class Role(enum.StrEnum):
    """What part a fragment plays in the RL loop; the fusion policies schedule by role."""

    ENV = "env"
    ACTOR = "actor"
    LEARNER = "learner"
    REPLAY = "replay"
    EVALUATOR = "evaluator"


class InitFn(Protocol):
    def __call__(self, key: jax.Array) -> State:
        """Return the fragment's initial state."""


class ApplyFn(Protocol):
    def __call__(self, state: State, inputs: Edges, key: jax.Array) -> tuple[State, dict[str, Any]]:
        """Consume ``inputs`` (named edges), return the new state and the produced edges."""


class PublishFn(Protocol):
    def __call__(self, state: State) -> dict[str, Any]:
        """Return the edges this fragment exposes from its state."""


class EmptyState(NamedTuple):
    """State of a stateless fragment."""


def _publish_nothing(state: State) -> dict[str, Any]:
    del state
    return {}


def _init_empty(key: jax.Array) -> EmptyState:
    del key
    return EmptyState()


class Fragment(NamedTuple):
    """A named node of the dataflow graph.

    Attributes:
      name: unique within a graph; the key of this fragment's state in the graph state.
      role: see :class:`Role`.
      init: ``key -> state``.
      apply: ``(state, inputs, key) -> (state, outputs)``.
      inputs: names of the edges ``apply`` reads.
      outputs: names of the edges ``apply`` writes.
      publish: ``state -> {edge: value}``; the edges named in ``published``.
      published: names of the edges ``publish`` returns.
      placement: ``"device"`` (pure JAX: compiled wherever a fusion mode puts it) or ``"host"``
        (calls back into host code, e.g. a gymnasium simulator: split fusion modes run it
        uncompiled in Python between compiled calls).
    """

    name: str
    role: Role
    init: InitFn
    apply: ApplyFn
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    publish: PublishFn = _publish_nothing
    published: tuple[str, ...] = ()
    placement: str = "device"


PLACEMENTS = ("device", "host")


def fragment(
    name: str,
    role: Role | str,
    apply: ApplyFn,
    *,
    init: InitFn = _init_empty,
    inputs: tuple[str, ...] = (),
    outputs: tuple[str, ...] = (),
    publish: PublishFn = _publish_nothing,
    published: tuple[str, ...] = (),
    placement: str = "device",
) -> Fragment:
    """Build a :class:`Fragment`, validating its declaration (a stateless one by default)."""
    if not name or not name.isidentifier():
        raise ValueError(f"fragment name must be an identifier, got {name!r}")
    try:
        role = Role(role)
    except ValueError:
        valid = ", ".join(r.value for r in Role)
        raise ValueError(f"unknown fragment role {role!r}; valid roles: {valid}") from None
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r}; valid: {', '.join(PLACEMENTS)}")
    for label, names in (("inputs", inputs), ("outputs", outputs), ("published", published)):
        if len(set(names)) != len(names):
            raise ValueError(f"fragment {name!r} declares duplicate {label}: {names}")
    return Fragment(
        name, role, init, apply, tuple(inputs), tuple(outputs), publish, tuple(published), placement
    )


def call(frag: Fragment, state: State, inputs: Edges, key: jax.Array) -> tuple[State, dict]:
    """Run ``frag.apply`` with its declared inputs only, and check what it produced."""
    missing = [n for n in frag.inputs if n not in inputs]
    if missing:
        raise ValueError(
            f"fragment {frag.name!r} needs input edge(s) {missing}; got {sorted(inputs)}"
        )
    # The scope name reaches the compiled program's op metadata: it is how a profiler trace of a
    # fused program splits device time by fragment (jaxrl_fdg.profiling.trace).
    with jax.named_scope(frag.name):
        state, outputs = frag.apply(state, {n: inputs[n] for n in frag.inputs}, key)
    if set(outputs) != set(frag.outputs):
        raise ValueError(
            f"fragment {frag.name!r} declared outputs {sorted(frag.outputs)} "
            f"but produced {sorted(outputs)}"
        )
    return state, outputs


def published(frag: Fragment, state: State) -> dict[str, Any]:
    """``frag.publish(state)``, checked against the declaration."""
    edges = frag.publish(state)
    if set(edges) != set(frag.published):
        raise ValueError(
            f"fragment {frag.name!r} declared published edges {sorted(frag.published)} "
            f"but published {sorted(edges)}"
        )
    return edges

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
  close without a special first value;
* ``methods``: further entry points over the same state, each with inputs and outputs of its own
  (a replay's ``sample`` and ``update`` beside its ``apply``, which stores). The graph schedules
  each one where its cadence and its edges say, and every call runs under the fragment's named
  scope;
* ``cadence`` (of ``apply``, and of each method): how often it runs, every env step, every
  iteration, every ``n`` iterations or in ``k`` rounds per iteration
  (:mod:`jaxrl_fdg.core.cadence`); left ``None``, the graph derives it from the role and the
  edges.

Fragments contain no parallelism and no compilation: no ``jit``, no ``pmean``, no device names.
Where and how they run is the business of a fusion or placement policy (``jaxrl_fdg.policies``).
"""

from __future__ import annotations

import enum
import warnings
from typing import Any, NamedTuple

import jax

from jaxrl_fdg.core.cadence import Cadence
from jaxrl_fdg.core.types import ApplyFn, Edges, InitFn, PublishFn, State
from jaxrl_fdg.errors import GraphError


class Role(enum.StrEnum):
    """What part a fragment plays in the RL loop.

    The role sets the cadence a fragment gets when it declares none: ``env`` and ``actor`` run
    at every env step; ``learner``, ``replay`` and ``evaluator`` once per iteration, after the
    rollout. A ``transform`` is any other node (an observation normaliser, an intrinsic reward):
    it runs where what it reads is made, at every step unless it reads the ``trajectory`` or an
    edge written after the rollout. Several fragments may share a role (two learners, say).
    """

    ENV = "env"
    ACTOR = "actor"
    LEARNER = "learner"
    REPLAY = "replay"
    EVALUATOR = "evaluator"
    TRANSFORM = "transform"


class Site(enum.StrEnum):
    """Where a fragment's code runs: ``device`` (pure JAX, compiled wherever a fusion mode puts
    it) or ``host`` (it calls back into host code, a gymnasium simulator say: the split fusion
    modes run it uncompiled in Python between compiled calls). Not to be confused with a
    *placement* (``jaxrl_fdg.policies``), which decides where a whole graph runs."""

    DEVICE = "device"
    HOST = "host"


class EmptyState(NamedTuple):
    """State of a stateless fragment."""


def _publish_nothing(state: State) -> dict[str, Any]:
    del state
    return {}


def _init_empty(key: jax.Array) -> EmptyState:
    del key
    return EmptyState()


class Method(NamedTuple):
    """A further entry point of a fragment: ``apply(state, inputs, key) -> (state, outputs)``
    over the fragment's own state, reading ``inputs`` and writing ``outputs``.

    ``cadence`` ``None`` places it by its edges: in the node of the first fragment that reads
    one of its outputs, else in the node of what writes its inputs, else after the rollout (a
    replay's ``sample`` joins the rounds of the learner that reads its ``batch``)."""

    name: str
    apply: ApplyFn
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    cadence: Cadence | None = None


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
      site: where its code runs, :class:`Site` ``DEVICE`` or ``HOST``.
      methods: further entry points (:class:`Method`), by name.
      cadence: how often ``apply`` runs (:mod:`jaxrl_fdg.core.cadence`); ``None`` derives it
        from the role and the edges.
      host_apply: for site ``HOST``, ``apply`` computed in numpy on numpy inputs: what
        the plans that step host fragments between compiled programs call (``apply`` itself
        reaches the host through a callback inside a compiled program). ``None``: they call
        ``apply`` uncompiled.
      agents: for an env fragment of a multi-agent game, the agents its batch axis folds into
        each game (:mod:`~jaxrl_fdg.envs.multi_agent`): its rows are games x agents, and the
        loop counts one env step per game. 1 for every other fragment.
    """

    name: str
    role: Role
    init: InitFn
    apply: ApplyFn
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    publish: PublishFn = _publish_nothing
    published: tuple[str, ...] = ()
    site: Site = Site.DEVICE
    methods: tuple[Method, ...] = ()
    cadence: Cadence | None = None
    host_apply: ApplyFn | None = None
    agents: int = 1

    @property
    def placement(self) -> str:
        """Deprecated name of :attr:`site`."""
        warnings.warn(
            "Fragment.placement is deprecated; use Fragment.site", DeprecationWarning, stacklevel=2
        )
        return self.site.value

    def method(self, name: str) -> Method:
        """The entry point ``name`` (``"apply"`` is the fragment's own)."""
        if name == "apply":
            return Method("apply", self.apply, self.inputs, self.outputs, self.cadence)
        for m in self.methods:
            if m.name == name:
                return m
        valid = ", ".join(["apply", *(m.name for m in self.methods)])
        raise GraphError(f"fragment {self.name!r} has no method {name!r} (valid: {valid})")

    def with_methods(self, *methods: Method) -> Fragment:
        """This fragment with ``methods`` added to its entry points, over the same state (a
        replay's second sampler, say); checked as :func:`fragment` checks a declaration."""
        return fragment(
            self.name,
            self.role,
            self.apply,
            init=self.init,
            inputs=self.inputs,
            outputs=self.outputs,
            publish=self.publish,
            published=self.published,
            site=self.site,
            methods=(*self.methods, *methods),
            cadence=self.cadence,
            host_apply=self.host_apply,
        )

    @property
    def entry_points(self) -> tuple[Method, ...]:
        """``apply`` (as a :class:`Method` named ``"apply"``), then the other methods."""
        return (self.method("apply"), *self.methods)


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
    site: Site | str = Site.DEVICE,
    methods: tuple[Method, ...] = (),
    cadence: Cadence | None = None,
    host_apply: ApplyFn | None = None,
    placement: str | None = None,
    agents: int = 1,
) -> Fragment:
    """Build a :class:`Fragment`, validating its declaration (a stateless one by default).

    ``placement`` is the deprecated name of ``site``. Raises
    :class:`~jaxrl_fdg.errors.GraphError` (a ``ConfigError``) naming what is wrong."""
    if not isinstance(name, str) or not name.isidentifier():
        raise GraphError(f"fragment name must be an identifier, got {name!r}")
    try:
        role = Role(role)
    except ValueError:
        valid = ", ".join(r.value for r in Role)
        raise GraphError(f"unknown fragment role {role!r}; valid roles: {valid}") from None
    site = _site(name, site, placement)
    if host_apply is not None and site is not Site.HOST:
        raise GraphError(f"fragment {name!r}: host_apply is for site 'host' only")
    declared = [("inputs", inputs), ("outputs", outputs), ("published", published)]
    _check_edge_names(
        name, declared + [(f"{m.name} {k}", e) for m in methods for k, e in _ports(m)]
    )
    method_names = [m.name for m in methods]
    if len(set(method_names)) != len(method_names) or "apply" in method_names:
        raise GraphError(f"fragment {name!r}: method names must be unique, not 'apply'")
    for label, declared_cadence in [("apply", cadence), *((m.name, m.cadence) for m in methods)]:
        _check_cadence(name, label, declared_cadence)
    return Fragment(
        name,
        role,
        init,
        apply,
        tuple(inputs),
        tuple(outputs),
        publish,
        tuple(published),
        site,
        tuple(
            Method(m.name, m.apply, tuple(m.inputs), tuple(m.outputs), m.cadence) for m in methods
        ),
        cadence,
        host_apply,
        agents,
    )


def _check_edge_names(name: str, declared: list[tuple[str, Any]]) -> None:
    """Each ``(label, names)`` is a tuple of distinct, non-empty edge names."""
    for label, names in declared:
        if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
            raise GraphError(
                f"fragment {name!r}: {label} must be a tuple of edge names, got {names!r}"
            )
        if len(set(names)) != len(names):
            raise GraphError(f"fragment {name!r} declares duplicate {label}: {names}")


def _site(name: str, site: Site | str, placement: str | None) -> Site:
    if placement is not None:
        warnings.warn(
            "fragment(placement=...) is deprecated; use site=Site.DEVICE or Site.HOST",
            DeprecationWarning,
            stacklevel=3,
        )
        site = placement
    try:
        return Site(site)
    except ValueError:
        valid = ", ".join(s.value for s in Site)
        raise GraphError(f"fragment {name!r}: unknown site {site!r}; valid: {valid}") from None


def _check_cadence(name: str, entry: str, cadence: object) -> None:
    if cadence is not None and not isinstance(cadence, Cadence):
        raise GraphError(
            f"fragment {name!r} ({entry}): cadence must be one of STEP, ITERATION, every(n), "
            f"rounds(k, when) from jaxrl_fdg.core.cadence, got {cadence!r}"
        )


def _ports(m: Method) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return (("inputs", m.inputs), ("outputs", m.outputs))


def call(
    frag: Fragment, state: State, inputs: Edges, key: jax.Array, method: str = "apply"
) -> tuple[State, dict[str, Any]]:
    """Run one entry point of ``frag`` on its declared inputs only, and check what it produced.

    ``inputs`` may hold more edges than the entry point reads; the others are not passed."""
    entry = frag.method(method)
    missing = [n for n in entry.inputs if n not in inputs]
    if missing:
        raise GraphError(
            f"fragment {frag.name!r} ({method}) needs input edge(s) {missing}; got {sorted(inputs)}"
        )
    # The scope name reaches the compiled program's op metadata: it is how a profiler trace of a
    # fused program splits device time by fragment (jaxrl_fdg.profiling.trace).
    with jax.named_scope(frag.name):
        state, outputs = entry.apply(state, {n: inputs[n] for n in entry.inputs}, key)
    if set(outputs) != set(entry.outputs):
        raise GraphError(
            f"fragment {frag.name!r} ({method}) declared outputs {sorted(entry.outputs)} "
            f"but produced {sorted(outputs)}"
        )
    return state, outputs


def published(frag: Fragment, state: State) -> dict[str, Any]:
    """``frag.publish(state)``, checked against the declaration."""
    edges = frag.publish(state)
    if set(edges) != set(frag.published):
        raise GraphError(
            f"fragment {frag.name!r} declared published edges {sorted(frag.published)} "
            f"but published {sorted(edges)}"
        )
    return edges

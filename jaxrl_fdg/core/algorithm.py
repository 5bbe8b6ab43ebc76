"""What an algorithm is: fragments built from a context, plus a registry of algorithms by name.

An algorithm supplies an actor, a primary learner and any further fragments (a replay, more
learners, transforms); the environment fragment comes from the environment registry.
Algorithms never see the fusion mode or the placement: the same ``build`` serves all of them.
A placement that needs the learners' gradients combined (data parallelism) says so through the
context, and learners take their optimizer from :meth:`AlgorithmContext.optimizer`, so the
combination cannot be forgotten.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import optax

from jaxrl_fdg import plugins
from jaxrl_fdg.core.fragment import Fragment, Role
from jaxrl_fdg.errors import ConfigError, GraphError

if TYPE_CHECKING:
    from jaxrl_fdg.envs.base import Environment
    from jaxrl_fdg.envs.host import HostSimulator
    from jaxrl_fdg.envs.spaces import Space

# An algorithm's hyperparameter dataclass. Covariant: a context whose hparams are a subclass's
# (PPOConfig) serves where one of the base class's (ActorCriticConfig) is asked for.
H = TypeVar("H", covariant=True)


def _identity(tree: Any) -> Any:
    return tree


def hparam(default: Any, help: str) -> Any:
    """A field of a hyperparameter dataclass: its ``default`` and the one line that
    ``jaxrl-fdg train --help`` shows for its flag (lower case, no final period). A subclass that
    changes a default declares the field again with its help."""
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass(frozen=True)
class AlgorithmContext(Generic[H]):
    """Static facts an algorithm needs to build its fragments.

    Generic in the algorithm's hyperparameters: ``build(ctx: AlgorithmContext[PPOConfig])``
    types ``ctx.hparams`` as a ``PPOConfig``.

    Attributes:
      observation_space, action_space: of a single environment.
      num_envs: environments stepped in parallel by this copy of the graph (the batch axis
        ``B``; a data-parallel shard's share). For a multi-agent game, the rows of the batch:
        games x :attr:`num_agents`, game-major (:mod:`~jaxrl_fdg.envs.multi_agent`).
      rollout_len: steps per rollout (the time axis ``T``).
      num_iterations: the iterations that schedules depending on the budget span: the run's
        own (``total_steps``), unless ``schedule_steps`` gives others, as it does for a run
        extended past its first budget. Past them, a schedule holds its last value.
      hparams: the algorithm's own hyperparameter dataclass, of type ``H``.
      combine_gradients: set by the placement, never called by an algorithm: the identity on one
        device, a mean over the shards of a data-parallel run. :meth:`optimizer` applies it to
        gradients, :meth:`pool` to other statistics.
      num_agents: the agents of one game the batch folds (1: a single-agent environment).
        An algorithm that treats each game's agents together reshapes ``[B, ...]`` rows as
        ``[B / num_agents, num_agents, ...]`` (``envs.multi_agent.unfold``).
      env, env_params: the run's environment (an ``Environment`` and its params, or a host
        simulator and ``None``), for fragments that play episodes of their own (an in-graph
        evaluator); ``None`` where the context was made without one.
    """

    observation_space: Space
    action_space: Space
    num_envs: int
    rollout_len: int
    num_iterations: int
    hparams: H
    combine_gradients: Callable[[Any], Any] = _identity
    env: Environment[Any, Any] | HostSimulator | None = None
    env_params: Any = None  # the Environment's params (its own pytree type); None on the host
    num_agents: int = 1

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def has_action_mask(self) -> bool:
        """Whether the environment publishes an ``action_mask`` edge (bool ``[B, n]``, the legal
        actions at each observation) that the algorithm's discrete policies must respect."""
        return bool(getattr(self.env, "has_action_mask", False))

    def pool(self, tree: Any) -> Any:
        """The mean of ``tree`` over every copy of the learner (the shards of a data-parallel
        run; the identity on one device): for statistics a learner keeps of its data, such as
        observation moments, which every copy must hold alike, as its parameters."""
        return self.combine_gradients(tree)

    def optimizer(self, tx: optax.GradientTransformation) -> optax.GradientTransformation:
        """``tx`` as a learner must use it: gradients pass through the placement's
        :attr:`combine_gradients` first, so every copy of a learner applies the same update."""
        combine = self.combine_gradients
        return optax.GradientTransformation(
            tx.init, lambda grads, state, params=None: tx.update(combine(grads), state, params)
        )


class Algorithm(NamedTuple):
    """The algorithm-specific fragments of the graph.

    ``actor`` acts at every env step (its outputs besides ``action``, log-probabilities or
    values, are recorded in the trajectory's ``extras``); ``learner`` is the primary learner:
    its ``metrics`` are logged unprefixed and the ``params`` it publishes are what evaluation
    plays. ``extra`` holds any further fragments: more learners, a replay, transforms, an
    evaluator. Each runs as its cadence says (:mod:`jaxrl_fdg.core.cadence`), ordered by the
    edges it reads (:mod:`jaxrl_fdg.core.graph`); their metrics are logged as
    ``<fragment>/<metric>``. An off-policy learner declares ``rounds(k, when=...)`` and reads the
    ``batch`` a replay's ``sample`` method writes (``fragments.algorithms.offpolicy``).

    ``policy(params, observations) -> actions`` is the deterministic policy used for evaluation
    (the most probable action, or the mean of a Gaussian), on the learner's published ``params``.
    A policy with memory (a recurrent one) also sets ``policy_memory(n)``, the memory of ``n``
    environments at the start of an episode; its ``policy`` is then ``(params, observations,
    memory) -> (actions, memory)``, and the caller carries the memory from step to step and
    puts ``policy_memory``'s back wherever an episode starts.

    ``parts`` names what the algorithm is made of beyond its fragments, for extensions that
    reuse them instead of copying: its networks, their feature function, its optimizer, its
    learner's update (each built-in's module says which it names). Reach a fragment by name
    with :meth:`fragment`, a part with :meth:`part`; put an extended fragment back with
    :meth:`replace_fragment`.
    """

    name: str
    actor: Fragment
    learner: Fragment
    policy: Callable[..., Any] | None = None
    extra: tuple[Fragment, ...] = ()
    policy_memory: Callable[[int], Any] | None = None
    parts: Mapping[str, Any] = MappingProxyType({})

    @property
    def fragments(self) -> tuple[Fragment, ...]:
        """Actor, learner, then ``extra``."""
        return (self.actor, self.learner, *self.extra)

    def with_fragments(self, *fragments: Fragment) -> Algorithm:
        """This algorithm with ``fragments`` added to its graph."""
        return self._replace(extra=(*self.extra, *fragments))

    def fragment(self, name: str) -> Fragment:
        """The fragment named ``name``."""
        for frag in self.fragments:
            if frag.name == name:
                return frag
        valid = ", ".join(f.name for f in self.fragments)
        raise GraphError(f"algorithm {self.name!r} has no fragment {name!r} (valid: {valid})")

    def part(self, name: str) -> Any:
        """The part named ``name`` (see the class docstring)."""
        if name not in self.parts:
            valid = ", ".join(self.parts) or "none"
            raise GraphError(f"algorithm {self.name!r} names no part {name!r} (valid: {valid})")
        return self.parts[name]

    def replace_fragment(self, new: Fragment) -> Algorithm:
        """This algorithm with its fragment of ``new``'s name replaced by ``new`` (an extended
        learner, say)."""
        self.fragment(new.name)  # one of them, or a GraphError
        if self.actor.name == new.name:
            return self._replace(actor=new)
        if self.learner.name == new.name:
            return self._replace(learner=new)
        return self._replace(extra=tuple(new if f.name == new.name else f for f in self.extra))

    def check(self) -> None:
        for frag, role in ((self.actor, Role.ACTOR), (self.learner, Role.LEARNER)):
            if not isinstance(frag, Fragment):
                raise GraphError(
                    f"algorithm {self.name!r}: its {role.value} must be a Fragment, got "
                    f"{type(frag).__name__}"
                )
            if frag.role is not role:
                raise GraphError(
                    f"fragment {frag.name!r} has role {frag.role.value}, expected {role.value}"
                )
        for frag in self.extra:
            if not isinstance(frag, Fragment):
                raise GraphError(
                    f"algorithm {self.name!r}: extra fragments must be Fragments, got "
                    f"{type(frag).__name__}"
                )


class AlgorithmSpec(NamedTuple):
    """A registered algorithm.

    Attributes:
      name: registry key (``--algo``).
      hparams: a frozen dataclass type of hyperparameters; its fields become CLI flags, each
        declared with :func:`hparam` so that ``--help`` describes it.
      build: ``AlgorithmContext -> Algorithm``.
      check: ``AlgorithmContext -> None``; raises :class:`ConfigError` for a bad combination
        (for example a batch that does not divide into minibatches) before anything compiles.
      summary: one line for ``jaxrl-fdg list``.
      defaults: the run settings this algorithm suits, by :class:`~jaxrl_fdg.config.TrainConfig`
        field (``env``, ``total_steps``, ``num_envs``, ``rollout_len``, ``log_every``): a run
        that leaves one of them unset takes the value here, and the run's ``config.toml``
        records what was resolved.
    """

    name: str
    hparams: type
    build: Callable[[AlgorithmContext], Algorithm]
    check: Callable[[AlgorithmContext], None]
    summary: str
    defaults: Mapping[str, Any] = MappingProxyType({})


_REGISTRY: dict[str, AlgorithmSpec] = {}  # registered in this process


def register(spec: AlgorithmSpec) -> None:
    """Make ``spec`` reachable by its name in this process (``rl.train``, ``jaxrl-fdg`` called
    from Python). A name taken by a built-in, an installed entry point or an earlier
    registration is refused. From the command line a user algorithm is named by reference
    (``--algo package.module:SPEC``) or by an entry point (:mod:`jaxrl_fdg.plugins`)."""
    if not isinstance(spec, AlgorithmSpec):
        raise ConfigError(f"register takes an AlgorithmSpec, got {type(spec).__name__}")
    if spec.name in _REGISTRY or spec.name in plugins.entry_points(plugins.ALGORITHMS):
        raise ConfigError(f"algorithm {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec


def registered() -> tuple[str, ...]:
    """Every algorithm name: installed entry points (the built-ins among them) and this
    process's registrations."""
    return tuple(sorted({*plugins.entry_points(plugins.ALGORITHMS), *_REGISTRY}))


def get(name: str) -> AlgorithmSpec:
    """The spec ``name`` names: a reference (``package.module:SPEC``, ``path/file.py:SPEC``), an
    entry point of group ``jaxrl_fdg.algorithms`` (built-ins included), or a registration; a
    :class:`ConfigError` naming close matches otherwise."""
    if plugins.split_reference(name) is not None:
        return plugins.load(name, AlgorithmSpec, f"--algo {name}")
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in plugins.entry_points(plugins.ALGORITHMS):
        spec = plugins.load_entry_point(plugins.ALGORITHMS, name)
        if not isinstance(spec, AlgorithmSpec):
            raise ConfigError(
                f"entry point {name!r} of {plugins.ALGORITHMS} is a {type(spec).__name__}, "
                "not an AlgorithmSpec"
            )
        return spec
    close = difflib.get_close_matches(name, registered(), n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ConfigError(
        f"unknown algorithm {name!r}{hint} (valid: {', '.join(registered())}, or "
        "package.module:SPEC or path/to/file.py:SPEC)"
    )

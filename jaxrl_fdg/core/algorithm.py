"""What an algorithm is: fragments built from a context, plus a registry of algorithms by name.

An algorithm supplies an actor and a learner fragment (and, off-policy, a replay); the
environment fragment comes from the environment registry. Algorithms never see the fusion mode
or the placement: the same ``build`` serves all of them. A placement that needs the learners'
gradients combined (data parallelism) says so through the context, and learners take their
optimizer from :meth:`AlgorithmContext.optimizer`, so the combination cannot be forgotten.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import optax

from jaxrl_fdg.core.fragment import Fragment, Role
from jaxrl_fdg.envs.spaces import Space
from jaxrl_fdg.errors import ConfigError


def _identity(tree: Any) -> Any:
    return tree


def hparam(default: Any, help: str) -> Any:
    """A field of a hyperparameter dataclass: its ``default`` and the one line that
    ``jaxrl-fdg train --help`` shows for its flag (lower case, no final period). A subclass that
    changes a default declares the field again with its help."""
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass(frozen=True)
class AlgorithmContext:
    """Static facts an algorithm needs to build its fragments.

    Attributes:
      observation_space, action_space: of a single environment.
      num_envs: environments stepped in parallel by this copy of the graph (the batch axis
        ``B``; a data-parallel shard's share).
      rollout_len: steps per rollout (the time axis ``T``).
      num_iterations: rollout + update iterations in the whole run (for schedules).
      hparams: the algorithm's own hyperparameter dataclass.
      combine_gradients: set by the placement, never called by an algorithm: the identity on one
        device, a mean over the shards of a data-parallel run. :meth:`optimizer` applies it to
        gradients, :meth:`pool` to other statistics.
    """

    observation_space: Space
    action_space: Space
    num_envs: int
    rollout_len: int
    num_iterations: int
    hparams: Any
    combine_gradients: Callable[[Any], Any] = _identity

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.rollout_len

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


class OffPolicy(NamedTuple):
    """How an off-policy learner is fed: from ``replay`` (a fragment whose ``apply`` stores the
    ``trajectory`` and whose methods ``sample`` a ``batch`` and ``update`` priorities from the
    learner's ``td_error``), ``updates_per_iteration`` times per rollout, once
    ``learning_starts`` env steps have been collected and ``can_sample(replay state)`` holds."""

    replay: Fragment
    updates_per_iteration: int
    learning_starts: int
    can_sample: Callable[[Any], Any]


class Algorithm(NamedTuple):
    """The algorithm-specific fragments of the graph.

    An on-policy algorithm's learner reads the edge ``trajectory`` once per rollout. An
    off-policy one (``off_policy`` set) reads ``batch``, drawn from the replay, and outputs
    ``td_error`` for the replay's priorities. ``extra`` holds further fragments of any role
    (``transform`` for a node the core has never heard of): the graph schedules them by their
    edges (see :mod:`jaxrl_fdg.core.graph`).

    ``policy(params, observations) -> actions`` is the deterministic policy used for evaluation
    (the most probable action, or the mean of a Gaussian), on the learner's published ``params``.
    A policy with memory (a recurrent one) also sets ``policy_memory(n)``, the memory of ``n``
    environments at the start of an episode; its ``policy`` is then ``(params, observations,
    memory) -> (actions, memory)``, and the caller carries the memory from step to step and
    puts ``policy_memory``'s back wherever an episode starts.
    """

    name: str
    actor: Fragment
    learner: Fragment
    off_policy: OffPolicy | None = None
    policy: Callable[..., Any] | None = None
    extra: tuple[Fragment, ...] = ()
    policy_memory: Callable[[int], Any] | None = None

    @property
    def fragments(self) -> tuple[Fragment, ...]:
        """Actor, learner, the replay if any, then ``extra``."""
        replay = (self.off_policy.replay,) if self.off_policy is not None else ()
        return (self.actor, self.learner, *replay, *self.extra)

    def with_fragments(self, *fragments: Fragment) -> Algorithm:
        """This algorithm with ``fragments`` added to its graph."""
        return self._replace(extra=(*self.extra, *fragments))

    def check(self) -> None:
        pairs = [(self.actor, Role.ACTOR), (self.learner, Role.LEARNER)]
        if self.off_policy is not None:
            pairs.append((self.off_policy.replay, Role.REPLAY))
        for frag, role in pairs:
            if frag.role is not role:
                raise ValueError(
                    f"fragment {frag.name!r} has role {frag.role.value}, expected {role.value}"
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


# Built-in algorithms are imported on first use, so importing the core stays light.
_BUILTIN = {
    "a2c": "jaxrl_fdg.fragments.a2c:SPEC",
    "ppo": "jaxrl_fdg.fragments.ppo:SPEC",
    "dqn": "jaxrl_fdg.fragments.dqn:SPEC",
    "c51": "jaxrl_fdg.fragments.c51:SPEC",
    "pqn": "jaxrl_fdg.fragments.pqn:SPEC",
    "sac": "jaxrl_fdg.fragments.sac:SPEC",
    "td3": "jaxrl_fdg.fragments.dpg:TD3_SPEC",
    "ddpg": "jaxrl_fdg.fragments.dpg:DDPG_SPEC",
}
_REGISTRY: dict[str, AlgorithmSpec] = {}


def register(spec: AlgorithmSpec) -> None:
    if spec.name in _REGISTRY or spec.name in _BUILTIN:
        raise ValueError(f"algorithm {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec


def registered() -> tuple[str, ...]:
    return tuple(sorted({*_BUILTIN, *_REGISTRY}))


def get(name: str) -> AlgorithmSpec:
    """The spec registered as ``name``; a :class:`ConfigError` naming close matches otherwise."""
    if name in _BUILTIN:
        module, attr = _BUILTIN[name].split(":")
        return getattr(importlib.import_module(module), attr)
    if name in _REGISTRY:
        return _REGISTRY[name]
    close = difflib.get_close_matches(name, registered(), n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ConfigError(f"unknown algorithm {name!r}{hint} (valid: {', '.join(registered())})")

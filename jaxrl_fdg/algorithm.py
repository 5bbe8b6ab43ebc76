"""What an algorithm is: fragments built from a context, plus a registry of algorithms by name.

An algorithm supplies an actor and a learner fragment; the environment fragment comes from the
environment registry. Algorithms never see the fusion mode: the same ``build`` serves all of them.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

import optax

from jaxrl_fdg.envs.spaces import Space
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragment import Fragment, Role


@dataclasses.dataclass(frozen=True)
class AlgorithmContext:
    """Static facts an algorithm needs to build its fragments.

    Attributes:
      observation_space, action_space: of a single environment.
      num_envs: environments stepped in parallel (the batch axis ``B``).
      rollout_len: steps per rollout (the time axis ``T``).
      num_iterations: rollout + update iterations in the whole run (for schedules).
      hparams: the algorithm's own hyperparameter dataclass.
      mean_gradients: applied by learners to their gradients before the optimizer step. The
        identity on one device; a data-parallel placement sets it to a mean over its shards, so
        that collectives are injected by the placement and no fragment names a device axis.
    """

    observation_space: Space
    action_space: Space
    num_envs: int
    rollout_len: int
    num_iterations: int
    hparams: Any
    mean_gradients: Callable[[Any], Any] = lambda grads: grads

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.rollout_len

    def averaged(self, tx: optax.GradientTransformation) -> optax.GradientTransformation:
        """``tx`` applied to gradients passed through :attr:`mean_gradients` first."""
        return optax.GradientTransformation(
            tx.init,
            lambda grads, state, params=None: tx.update(self.mean_gradients(grads), state, params),
        )


class Replay(NamedTuple):
    """An off-policy algorithm's replay: a fragment that stores, and the sampling side the loop
    drives between learner updates.

    Attributes:
      fragment: role ``replay``; its state is the buffer, its ``apply`` stores the edge
        ``trajectory`` (one rollout, ``[T, B]``).
      sample: ``(replay state, key, env_steps) -> Sample`` (``env_steps`` drives schedules such as
        prioritized replay's β).
      update: ``(replay state, sample, td_error [batch]) -> replay state``: priority updates (the
        identity for uniform replay).
      can_sample: ``replay state -> bool``.
    """

    fragment: Fragment
    sample: Callable[[Any, Any, Any], Any]
    update: Callable[[Any, Any, Any], Any]
    can_sample: Callable[[Any], Any]


class OffPolicy(NamedTuple):
    """How an off-policy learner is fed: from ``replay``, ``updates_per_iteration`` times per
    rollout, once ``learning_starts`` env steps have been collected (the warm-up)."""

    replay: Replay
    updates_per_iteration: int
    learning_starts: int


class Algorithm(NamedTuple):
    """The algorithm-specific fragments of the graph.

    An on-policy algorithm's learner reads the edge ``trajectory`` once per rollout. An
    off-policy one (``off_policy`` set) reads ``batch``, a :class:`~jaxrl_fdg.fragments.replay.
    Sample` drawn from the replay, and outputs ``td_error`` for the replay's priorities.

    ``policy(params, observations) -> actions`` is the deterministic policy used for evaluation
    (the most probable action, or the mean of a Gaussian), on the learner's published ``params``.
    """

    name: str
    actor: Fragment
    learner: Fragment
    off_policy: OffPolicy | None = None
    policy: Callable[[Any, Any], Any] | None = None

    def check(self) -> None:
        pairs = [(self.actor, Role.ACTOR), (self.learner, Role.LEARNER)]
        if self.off_policy is not None:
            pairs.append((self.off_policy.replay.fragment, Role.REPLAY))
        for frag, role in pairs:
            if frag.role is not role:
                raise ValueError(
                    f"fragment {frag.name!r} has role {frag.role.value}, expected {role.value}"
                )


class AlgorithmSpec(NamedTuple):
    """A registered algorithm.

    Attributes:
      name: registry key (``--algo``).
      hparams: a frozen dataclass type of hyperparameters; its fields become CLI flags.
      build: ``AlgorithmContext -> Algorithm``.
      check: ``AlgorithmContext -> None``; raises :class:`ConfigError` for a bad combination
        (for example a batch that does not divide into minibatches) before anything compiles.
      summary: one line for ``jaxrl-fdg list``.
    """

    name: str
    hparams: type
    build: Callable[[AlgorithmContext], Algorithm]
    check: Callable[[AlgorithmContext], None]
    summary: str


# Built-in algorithms are imported on first use, so importing the core stays light.
_BUILTIN = {
    "a2c": "jaxrl_fdg.fragments.a2c:SPEC",
    "ppo": "jaxrl_fdg.fragments.ppo:SPEC",
    "dqn": "jaxrl_fdg.fragments.dqn:SPEC",
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

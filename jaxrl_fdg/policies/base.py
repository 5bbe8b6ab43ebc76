"""The execution-policy abstraction: one :class:`Placement` protocol and one registry.

A placement decides where the fragments of a graph run and how the loop is driven, without any
change to the algorithm: which configurations it accepts (:meth:`Placement.check`), how learners
combine their gradients (:meth:`Placement.context`), how it wraps the loop (:meth:`wrap`), which
plan drives it (:meth:`plan`), and how evaluation, the initial key and host resources follow.
``single``, ``data_parallel``, ``actor_learner`` and ``host_env`` are registered by name
(``--placement``); replication over seeds and sweep points is the placement a run of several
lanes gets (:func:`select`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import jax

from jaxrl_fdg.core.algorithm import AlgorithmContext, AlgorithmSpec
from jaxrl_fdg.core.builder import LoopBuilder
from jaxrl_fdg.core.fragment import Fragment
from jaxrl_fdg.core.protocol import LoopLike
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies.fusion import FUSION_MODES, Plan, make_plan
from jaxrl_fdg.policies.halved import simulator_handles
from jaxrl_fdg.profiling.timers import Timings

if TYPE_CHECKING:  # types only: config and envs sit above policies
    from jaxrl_fdg.config import Resolved, TrainConfig
    from jaxrl_fdg.envs import Environment
    from jaxrl_fdg.envs.host import HostSimulator


class Placement(Protocol):
    """Where a graph's fragments run and how its loop is driven."""

    name: str
    fusion_modes: tuple[str, ...]
    summary: str

    def check(
        self, config: TrainConfig, env: Environment | HostSimulator, spec: AlgorithmSpec
    ) -> None:
        """Raise :class:`ConfigError` for a configuration this placement cannot run."""

    def context(self, config: TrainConfig, context: AlgorithmContext) -> AlgorithmContext:
        """The context the algorithm is built with (each copy's share of the envs, how its
        gradients are combined)."""

    def wrap(self, resolved: Resolved, build: LoopBuilder) -> LoopLike:
        """The loop this placement drives, built with ``build``."""

    def plan(self, mode: str, loop: LoopLike, timings: Timings, chunk: int) -> Plan:
        """The plan that compiles and advances ``loop`` in fusion ``mode``."""

    def initial_key(self, resolved: Resolved) -> jax.Array:
        """The key the run starts from."""

    def evaluation(self, run: Callable) -> Callable:
        """``run(states, key)`` (one learner's evaluation) as this placement's state calls it."""

    def release(self, loop: LoopLike, state: LoopState) -> None:
        """Free host resources the run's state holds (host simulators)."""

    def compiles_from_shapes(self, resolved: Resolved) -> bool:
        """Whether the plan's programs are fully described by the shapes of their arguments
        (every array on the default device, no host state), so they can all be compiled before
        ``init`` has run, at the same time (``Plan.start``)."""

    def auto_devices(self, config: TrainConfig) -> int | None:
        """The devices this placement spans as a candidate of ``--placement auto`` on this
        machine, or ``None`` where it is no candidate. ``config.devices`` above 1 is what the
        user asked for and is kept."""


class BasePlacement:
    """Defaults shared by the placements: one copy of the graph, fused plans, one key."""

    name = ""
    fusion_modes: tuple[str, ...] = FUSION_MODES
    summary = ""

    def check(
        self, config: TrainConfig, env: Environment | HostSimulator, spec: AlgorithmSpec
    ) -> None:
        check_fusion(self, config.fusion)

    def context(self, config: TrainConfig, context: AlgorithmContext) -> AlgorithmContext:
        return context

    def wrap(self, resolved: Resolved, build: LoopBuilder) -> LoopLike:
        return build(env_fragment(resolved), {})

    def plan(self, mode: str, loop: LoopLike, timings: Timings, chunk: int) -> Plan:
        return make_plan(mode, loop, timings, chunk)

    def initial_key(self, resolved: Resolved) -> jax.Array:
        return jax.random.key(resolved.config.seed)

    def evaluation(self, run: Callable) -> Callable:
        return run

    def compiles_from_shapes(self, resolved: Resolved) -> bool:
        return False

    def auto_devices(self, config: TrainConfig) -> int | None:
        return config.devices

    def release(self, loop: LoopLike, state: LoopState) -> None:
        if loop.env_frag.placement == "host":
            from jaxrl_fdg.envs.host import close

            for handle in simulator_handles(loop, state):  # one per half for a HalvedLoop
                close(handle)


def env_fragment(resolved: Resolved) -> Fragment:
    """The env fragment of ``resolved``'s environment: the context's ``num_envs`` (one copy's
    share) of JAX environments, or of host simulators."""
    num_envs = resolved.context.num_envs
    if resolved.env.on_host:
        from jaxrl_fdg.core.env_fragment import host_env_fragment

        return host_env_fragment(resolved.env, num_envs)
    from jaxrl_fdg.core.env_fragment import env_fragment as jax_env_fragment

    return jax_env_fragment(resolved.env, resolved.env_params, num_envs)


def check_fusion(placement: Placement, mode: str) -> None:
    if mode not in placement.fusion_modes:
        raise ConfigError(
            f"placement {placement.name!r} runs fusion modes "
            f"{', '.join(placement.fusion_modes)}; got {mode!r}"
        )


def refuse_host_env(placement: Placement, config: TrainConfig, env: Any, hint: str = "") -> None:
    if env.on_host:
        raise ConfigError(
            f"placement {placement.name!r} needs a JAX environment; {config.env} is a host "
            f"simulator{hint}"
        )


# Not a placement: measure the placements this machine allows on the run and take the fastest
# (``jaxrl_fdg.run.autotune``).
AUTO_PLACEMENT = "auto"

_REGISTRY: dict[str, Placement] = {}


def register(placement: Placement) -> Placement:
    """Add ``placement`` under its name; a second one of the same name is refused."""
    if placement.name in _REGISTRY:
        raise ValueError(f"placement {placement.name!r} is already registered")
    _REGISTRY[placement.name] = placement
    return placement


def registered() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get(name: str) -> Placement:
    if name not in _REGISTRY:
        raise ConfigError(f"unknown placement {name!r} (valid: {', '.join(_REGISTRY)})")
    return _REGISTRY[name]

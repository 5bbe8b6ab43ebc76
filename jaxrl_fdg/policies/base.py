"""The execution-policy abstraction: one :class:`Placement` protocol, what a placement supports as
data, one check, and one registry.

A placement decides where the fragments of a graph run and how the loop is driven, without any
change to the algorithm. It never sees the run's configuration: ``jaxrl_fdg.config`` hands it a
:class:`Request` (the few facts a placement depends on) to check, and a :class:`LoopSource` (how
to build the loop of one lane) to build from. What it can run it declares as data, in
:class:`Supports` and in its table of plans by fusion mode; :func:`check` refuses everything
else, with one line that names the value and what would run it. ``single``,
``data_parallel``, ``actor_learner`` and ``host_env`` are registered by name
(``--placement``); a run of several lanes (seeds × sweep points) gets replication
(:func:`select`). A new placement is one module: a class with these members, registered.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

import jax
import numpy as np

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.core.builder import LoopBuilder
from jaxrl_fdg.core.fragment import Fragment, Site
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies import distributed
from jaxrl_fdg.policies.fusion import PLANS
from jaxrl_fdg.policies.plan import Plan
from jaxrl_fdg.profiling.timers import Timings

# ``factory(loop, timings, chunk=chunk)``: the plan of one fusion mode.
PlanFactory = Callable[..., Plan]


class Request(NamedTuple):
    """What a run asks of its placement, taken from its resolved configuration.

    Attributes:
      placement: the placement named (``--placement``).
      fusion: the fusion mode (the most fused one the placement runs, for ``--fusion auto``).
      devices, num_envs, policy_lag: as configured.
      env: the environment's name (for messages); ``env_on_host``: it is a host simulator.
      backend: the data-parallel backend (``dp_backend``).
      processes: processes the run spans (``num_processes``).
      seeds: each lane's seed (one lane: the run's seed); ``num_seeds``: as configured, so
        ``len(seeds) / num_seeds`` points of a hyperparameter sweep.
    """

    placement: str
    fusion: str
    devices: int
    num_envs: int
    policy_lag: int
    env: str
    env_on_host: bool
    backend: str = "shard_map"
    processes: int = 1
    seeds: tuple[int, ...] = (0,)
    num_seeds: int = 1

    @property
    def lanes(self) -> int:
        return len(self.seeds)


class LoopSource(NamedTuple):
    """What a placement builds a run's loop from.

    Attributes:
      build: builds one lane's loop from an env fragment and swept values.
      env, env_params: the environment (a JAX ``Environment`` and its params, or a host
        simulator and ``None``).
      num_envs: environments one copy of the graph steps (the context's: a shard's share).
      request: the run's :class:`Request`.
      sweep: per swept hyperparameter, its value in each lane (empty without a sweep).
      population: a population across the lanes (``jaxrl_fdg.tuning``), or ``None``.
    """

    build: LoopBuilder
    env: Any
    env_params: Any
    num_envs: int
    request: Request
    sweep: Mapping[str, tuple[float, ...]] = {}
    population: Any = None


class EnvKind(enum.StrEnum):
    """Where a run's environment steps."""

    JAX = "jax"  # a JAX environment, traced into the programs
    HOST = "host"  # host simulators (gymnasium, EnvPool)


class Devices(enum.StrEnum):
    """How many devices a placement runs on."""

    ONE = "one"  # exactly one
    PAIR = "pair"  # exactly two: one for the actors, one for the learner
    SHARDS = "shards"  # any number that divides num_envs, one shard of the envs on each


@dataclasses.dataclass(frozen=True)
class Supports:
    """What a placement can run besides its fusion modes (its table of plans).

    Attributes:
      devices: how many devices it spans (:class:`Devices`).
      envs: the kinds of environment it steps.
      policy_lags: the ``policy_lag`` values it runs.
      env_multiple: ``num_envs`` must be a multiple of this (two halves: 2).
      lanes: whether it runs several lanes (seeds × sweep points) in one program.
      process_backends: the data-parallel backends with which it spans several processes
        (none: it runs in one process).
      why: per refused setting (``"fusion"``, ``"envs"``, ``"devices"``), a clause that says
        why, added to the message.
    """

    devices: Devices = Devices.ONE
    envs: frozenset[EnvKind] = frozenset({EnvKind.JAX, EnvKind.HOST})
    policy_lags: tuple[int, ...] = (0,)
    env_multiple: int = 1
    lanes: bool = False
    process_backends: tuple[str, ...] = ()
    why: Mapping[str, str] = dataclasses.field(default_factory=dict)


class Placement(Protocol):
    """Where a graph's fragments run and how its loop is driven."""

    name: str
    summary: str
    supports: Supports
    plans: Mapping[str, PlanFactory]  # the plan of each fusion mode it runs

    def subject(self, request: Request) -> str:
        """How a message names what was asked of it (``placement 'single'``)."""

    def context(self, request: Request, context: AlgorithmContext) -> AlgorithmContext:
        """The context the algorithm is built with (each copy's share of the envs, how its
        gradients are combined)."""

    def wrap(self, source: LoopSource) -> Loop:
        """The loop this placement drives, built from ``source``."""

    def initial_key(self, request: Request) -> jax.Array:
        """The key the run starts from."""

    def evaluation(self, run: Callable) -> Callable:
        """``run(states, key)`` (one learner's evaluation) as this placement's state calls it."""

    def release(self, loop: Loop, state: LoopState) -> None:
        """Free host resources the run's state holds (host simulators)."""

    def compiles_from_shapes(self, request: Request) -> bool:
        """Whether the plan's programs are fully described by the shapes of their arguments
        (every array on the default device, no host state), so they can all be compiled before
        ``init`` has run, at the same time (``Plan.start``)."""


class BasePlacement:
    """Defaults shared by the placements: one copy of the graph on one device, every fusion
    mode, one key."""

    name = ""
    summary = ""
    supports = Supports()
    plans: Mapping[str, PlanFactory] = PLANS

    @property
    def fusion_modes(self) -> tuple[str, ...]:
        return tuple(self.plans)

    def subject(self, request: Request) -> str:
        return f"placement {self.name!r}"

    def context(self, request: Request, context: AlgorithmContext) -> AlgorithmContext:
        return context

    def wrap(self, source: LoopSource) -> Loop:
        return source.build(env_fragment(source), {})

    def plan(self, mode: str, loop: Loop, timings: Timings, chunk: int) -> Plan:
        """The plan that compiles and advances ``loop`` in fusion ``mode``."""
        return self.plans[mode](loop, timings, chunk=chunk)

    def initial_key(self, request: Request) -> jax.Array:
        return jax.random.key(request.seeds[0])

    def evaluation(self, run: Callable) -> Callable:
        return run

    def compiles_from_shapes(self, request: Request) -> bool:
        return False

    def release(self, loop: Loop, state: LoopState) -> None:
        if loop.info.env.site is Site.HOST:
            from jaxrl_fdg.envs.host import close

            for handle in simulator_handles(loop, state):
                close(handle)


def simulator_handles(loop: Loop, state: LoopState) -> list[int]:
    """The handles of the host simulators in ``state`` (one per half where the env batch is
    in halves), for :func:`jaxrl_fdg.envs.host.close`."""
    env_state = state.fragments[loop.info.env.name]
    halves = env_state if loop.info.halves > 1 else (env_state,)
    return [int(np.asarray(half.env)) for half in halves]


def env_fragment(source: LoopSource, num_envs: int | None = None) -> Fragment:
    """The env fragment of ``source``'s environment: ``num_envs`` (default: the context's, one
    copy's share) JAX environments, or host simulators."""
    num_envs = source.num_envs if num_envs is None else num_envs
    if source.request.env_on_host:
        from jaxrl_fdg.core.env_fragment import host_env_fragment

        return host_env_fragment(source.env, num_envs)
    from jaxrl_fdg.core.env_fragment import env_fragment as jax_env_fragment

    return jax_env_fragment(source.env, source.env_params, num_envs)


# -- the registry ----------------------------------------------------------------------------

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


def unregister(name: str) -> None:
    """Remove placement ``name`` (one a test or a notebook registered)."""
    _REGISTRY.pop(name, None)


def registered() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get(name: str) -> Placement:
    if name not in _REGISTRY:
        raise ConfigError(f"unknown placement {name!r} (valid: {', '.join(_REGISTRY)})")
    return _REGISTRY[name]


def _supporting(test: Callable[[Placement], bool]) -> str:
    """The registered placements that ``test`` holds for, as ``'a' or 'b'``."""
    names = [repr(p.name) for p in _REGISTRY.values() if test(p)]
    return " or ".join(names) if names else "none registered"


def _why(placement: Placement, setting: str) -> str:
    why = placement.supports.why.get(setting)
    return f" ({why})" if why else ""


# -- the one check ---------------------------------------------------------------------------


def check(placement: Placement, request: Request) -> None:
    """Raise a :class:`ConfigError` for anything in ``request`` that ``placement`` does not
    declare it runs, naming the value and what would run it."""
    supports, who = placement.supports, placement.subject(request)
    if request.fusion not in placement.plans:
        raise ConfigError(
            f"{who} runs fusion modes {', '.join(placement.plans)}; got "
            f"{request.fusion!r}{_why(placement, 'fusion')}"
        )
    _check_env(placement, request, who)
    if request.processes > 1 and request.backend not in supports.process_backends:
        spans = [p for p in _REGISTRY.values() if p.supports.process_backends]
        backends = sorted({b for p in spans for b in p.supports.process_backends})
        raise ConfigError(
            f"num_processes = {request.processes} needs placement "
            f"{_supporting(lambda p: bool(p.supports.process_backends))} with dp_backend "
            f"{' or '.join(map(repr, backends))} (got placement {request.placement!r}, "
            f"dp_backend {request.backend!r})"
        )
    _check_devices(placement, request, who)
    multiple = supports.env_multiple
    if request.num_envs % multiple:
        valid = ", ".join(str(multiple * k) for k in (1, 2, 3))
        must = "even" if multiple == 2 else f"a multiple of {multiple}"
        raise ConfigError(
            f"{who} splits the envs into {multiple} parts: num_envs must be {must} (valid: "
            f"{valid}, ...), got {request.num_envs}"
        )
    if request.policy_lag not in supports.policy_lags:
        lags = _supporting(lambda p: request.policy_lag in p.supports.policy_lags)
        raise ConfigError(
            f"policy_lag = {request.policy_lag} needs placement {lags} (got {placement.name!r})"
        )


def _check_env(placement: Placement, request: Request, who: str) -> None:
    kind = EnvKind.HOST if request.env_on_host else EnvKind.JAX
    if kind in placement.supports.envs:
        return
    others = _supporting(lambda p: kind in p.supports.envs)
    why = placement.supports.why.get("envs")
    if kind is EnvKind.HOST:
        raise ConfigError(
            f"{who} cannot step a host simulator ({request.env} is one; placement {others} "
            f"steps host simulators)" + (f": {why}" if why else "")
        )
    raise ConfigError(
        f"{who} steps host simulators" + (f": {why}" if why else "") + f", got "
        f"{request.env!r}; JAX environments run on the device (placement {others})"
    )


def _check_devices(placement: Placement, request: Request, who: str) -> None:
    kind, n = placement.supports.devices, request.devices
    if kind is Devices.ONE and n != 1:
        takes = _supporting(lambda p: _takes(p.supports.devices, n))
        raise ConfigError(f"devices = {n} needs placement {takes} ({who}: one device)")
    if kind is Devices.PAIR:
        if n != 2:
            raise ConfigError(f"{who} uses 2 devices (actors, learner); got devices = {n}")
        visible(2, "")
    if kind is Devices.SHARDS:
        validate.divides("devices", n, "num_envs", request.num_envs)
        if request.processes > 1:
            distributed.check_mesh(request.processes, n)
        visible(n, request.backend)


def _takes(kind: Devices, n: int) -> bool:
    return {Devices.ONE: n == 1, Devices.PAIR: n == 2, Devices.SHARDS: True}[kind]


def visible(n: int, backend: str) -> list[jax.Device]:
    """The first ``n`` devices this process sees; a :class:`ConfigError` if it sees fewer
    (backend ``vmap`` runs every shard on the first device)."""
    devices = jax.devices()
    if backend == "vmap":
        return devices[:1]
    if n > len(devices):
        raise ConfigError(
            f"devices = {n} but this process sees {len(devices)} {devices[0].platform} "
            f"device(s) (valid: 1..{len(devices)}); on a CPU, "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} makes {n}"
        )
    return devices[:n]


def auto_devices(placement: Placement, request: Request) -> int | None:
    """The devices ``placement`` spans as a candidate of ``--placement auto`` on this machine,
    or ``None`` where it is no candidate. ``devices`` above 1 is what the user asked for and is
    kept."""
    kind = placement.supports.devices
    if kind is Devices.PAIR:
        return 2 if request.devices == 1 else request.devices
    if kind is Devices.SHARDS and request.devices == 1:
        count = len(jax.devices())  # every device, or none: one shard would be ``single``
        return count if count > 1 else None
    return request.devices


def select(request: Request) -> Placement:
    """The placement a run gets: the one named, or replication for several lanes (seeds ×
    sweep points), which takes a placement that supports lanes."""
    placement = get(request.placement)
    if request.lanes == 1:
        return placement
    if not placement.supports.lanes:
        raise ConfigError(
            f"placement {request.placement!r} and {request.lanes} runs (num_seeds = "
            f"{request.num_seeds} × the hyperparameter sweep) cannot be combined; the runs of "
            f"a sweep or of several seeds share placement "
            f"{_supporting(lambda p: p.supports.lanes)}"
        )
    from jaxrl_fdg.policies.replication import Replicated

    return Replicated(request.lanes)

"""Placement ``host_env``: host simulators stepped in two halves that overlap device inference.

A host simulator (``gym/<id>``, ``envpool/<task-id>``) steps on the host while the actor and the
learner run on the accelerator. Stepped naively, the two take turns: the device idles while the host
steps the simulators, and the host idles while the device computes the next actions. Splitting the
env batch into two halves lets each hide the other (double buffering, as EnvPool's ``send`` /
``recv`` does): while the host steps half 0, the device computes half 1's actions, and the other way
round.

Two pieces, one definition:

* :class:`HalvedLoop` is the pure definition: a :class:`~jaxrl_fdg.core.loop.Loop` whose env state
  is two halves of ``num_envs / 2`` environments, each with its own simulators and its own key
  stream. Each step calls the actor once per half and steps each half; the trajectory is the two
  halves concatenated along the env axis, so the learner sees ``[T, num_envs]`` as usual. It runs
  under every fused mode (``fragment``, ``iteration``, ``scan``: each half's simulators are called
  back from inside the program through the env fragment's ``io_callback``, so nothing overlaps)
  and is the reference the pipelined plan is tested against.
* :class:`DoubleBufferedPlan` (fusion ``step``) runs the same calls in the same order with the
  same keys, but steps the simulators itself, in Python, between asynchronously dispatched actor
  programs. For each step and each half ``h``: read half ``h``'s actions (dispatched earlier),
  step its simulators on the host, then dispatch the actor on its new observation without
  waiting. The host thus steps one half while the other half's actor program runs.

Keys: each half threads its own key through its actor calls; ``Loop.act`` splits it, inside the
pure functions. The actor's state (an env-step counter for the off-policy algorithms, nothing
for the actor-critics) threads through the calls in their order: half 0 then half 1, step by
step, so a counter still advances by ``num_envs`` per step, half 1 seeing half 0's increment.
Actors must be batch-polymorphic (``[b, obs] -> [b]``), which every built-in one is.

Fusion modes (:data:`FUSION_MODES`): ``step`` runs the double-buffered plan, the fused modes run
:class:`HalvedLoop` with its callbacks, and all give the same numbers for a seed. ``eager`` is
refused (it is for debugging the loop op by op; use placement ``single`` for that). A ``host_env``
run does not equal a ``single`` run of the same seed: its halves' simulators are seeded from keys
of their own and each half draws its own actions. Host simulators live outside JAX, so a
``host_env`` run cannot be checkpointed, evaluated on a JAX environment, or vmapped over seeds.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.core.protocol import LoopLike
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies.base import BasePlacement, LoopBuilder, register
from jaxrl_fdg.policies.double_buffer import DoubleBufferedPlan
from jaxrl_fdg.policies.fusion import Plan
from jaxrl_fdg.policies.fusion import make_plan as make_fused_plan
from jaxrl_fdg.policies.halved import FUSION_MODES, HALVES, HalvedLoop, simulator_handles
from jaxrl_fdg.profiling.timers import Timings

if TYPE_CHECKING:  # types only: config and envs sit above policies
    from jaxrl_fdg.config import Resolved, TrainConfig
    from jaxrl_fdg.envs import Environment
    from jaxrl_fdg.envs.host import HostSimulator

__all__ = ["HOST_ENV", "DoubleBufferedPlan", "HalvedLoop", "HostEnv", "simulator_handles"]


class HostEnv(BasePlacement):
    """Host simulators in two halves, stepped on the host while the device computes the other
    half's actions; ``step`` runs the double-buffered plan, fused modes :class:`HalvedLoop`
    through callbacks."""

    name = "host_env"
    fusion_modes = FUSION_MODES
    summary = "host simulators in two halves, stepped while the device acts for the other half"

    def check(
        self, config: TrainConfig, env: Environment | HostSimulator, spec: AlgorithmSpec
    ) -> None:
        if not env.on_host:
            raise ConfigError(
                f"placement 'host_env' steps host simulators: env must be gym/<id> (any "
                f"gymnasium environment) or envpool/<task-id>, got {config.env!r}; JAX "
                "environments run on the device (placement 'single')"
            )
        if config.num_envs % HALVES:
            raise ConfigError(
                f"placement 'host_env' splits the envs into two halves: num_envs must be even "
                f"(valid: 2, 4, 6, ...), got {config.num_envs}"
            )
        if config.devices != 1:
            raise ConfigError(
                "placement 'host_env' runs the actor and the learner on one device: devices "
                f"must be 1, got {config.devices}"
            )
        if config.policy_lag:
            raise ConfigError(
                f"policy_lag = {config.policy_lag} needs placement 'single' or 'actor_learner' "
                f"(got {self.name!r})"
            )
        if config.fusion not in self.fusion_modes:
            raise ConfigError(
                f"placement 'host_env' runs fusion 'step' (double-buffered) or a fused mode "
                f"(valid: {', '.join(self.fusion_modes)}), got {config.fusion!r}"
            )

    def wrap(self, resolved: Resolved, build: LoopBuilder) -> LoopLike:
        from jaxrl_fdg.core.env_fragment import host_env_fragment

        half = host_env_fragment(resolved.env, resolved.config.num_envs // HALVES)
        loop = build(half, {}, functools.partial(HalvedLoop, simulator=resolved.env))
        check_halves(loop)
        return loop

    def plan(self, mode: str, loop: LoopLike, timings: Timings, chunk: int) -> Plan:
        if mode == "step":
            return DoubleBufferedPlan(loop, timings)
        return make_fused_plan(mode, loop, timings, chunk)


def check_halves(loop: HalvedLoop) -> None:
    """The halves share the step body's other fragments (the actor) and read what those publish
    as each half's step begins. The double-buffered plan begins a half's step before the other
    half's has ended, so such an edge would be read at other times than in the fused modes:
    refused, naming it."""
    env = loop.env_frag.name
    reads = {e for c in loop.schedule.rollout.calls for e in c.inputs}
    for frag in loop.step_fragments:
        shared = set(frag.published) & reads if frag.name != env else set()
        if shared:
            raise ConfigError(
                f"placement 'host_env' interleaves two halves of the envs; {frag.name!r} "
                f"publishes {', '.join(sorted(shared))}, read within the step, which the halves "
                "would read at other times than the fused modes (use placement 'single')"
            )


HOST_ENV = register(HostEnv())

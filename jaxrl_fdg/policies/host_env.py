"""Placement ``host_env``: host simulators stepped in two halves that overlap device inference.

A host simulator (``gym/<id>``, ``envpool/<task-id>``) steps on the host while the actor and the
learner run on the accelerator. Stepped naively, the two take turns: the device idles while the host
steps the simulators, and the host idles while the device computes the next actions. Splitting the
env batch into two halves lets each hide the other (double buffering, as EnvPool's ``send`` /
``recv`` does): while the host steps half 0, the device computes half 1's actions, and the other way
round.

Two pieces, one definition:

* the loop is the pure definition: :func:`~jaxrl_fdg.core.loop.make_loop` with ``halves = 2``,
  whose env state is two halves of ``num_envs / 2`` environments, each with its own simulators
  and its own key stream. Each step calls the actor once per half and steps each half; the
  trajectory is the two halves concatenated along the env axis, so the learner sees
  ``[T, num_envs]`` as usual. It runs under every fused mode (``fragment``, ``iteration``,
  ``scan``: each half's simulators are called back from inside the program through the env
  fragment's ``io_callback``, so nothing overlaps) and is the reference the pipelined plan is
  tested against.
* :class:`~jaxrl_fdg.policies.double_buffer.DoubleBufferedPlan` (fusion ``step``) runs the same
  calls in the same order with the same keys, through the loop's one driver, but parks each
  half before its host call: for each step and each half ``h``, read half ``h``'s actions
  (dispatched earlier), step its simulators on the host, then dispatch the actor on its new
  observation without waiting. The host thus steps one half while the other half's actor
  program runs.

Keys: each half threads its own key through its actor calls, split inside the pure functions.
The actor's state (an env-step counter for the off-policy algorithms, nothing for the
actor-critics) is shared by the halves in the rollout carry and threads through the calls in
their order: half 0 then half 1, step by step, so a counter still advances by ``num_envs`` per
step, half 1 seeing half 0's increment. Actors must be batch-polymorphic
(``[b, obs] -> [b]``), which every built-in one is.

Fusion modes (the placement's table of plans): ``step`` runs the double-buffered plan, the fused
modes the halved loop with its callbacks, and all give the same numbers for a seed. ``eager`` is
refused (it is for debugging the loop op by op; use placement ``single`` for that). A ``host_env``
run does not equal a ``single`` run of the same seed: its halves' simulators are seeded from keys
of their own and each half draws its own actions. Host simulators live outside JAX, so a
``host_env`` run cannot be checkpointed, evaluated on a JAX environment, or vmapped over seeds.
"""

from __future__ import annotations

from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies.base import (
    BasePlacement,
    EnvKind,
    LoopSource,
    Supports,
    env_fragment,
    register,
    simulator_handles,
)
from jaxrl_fdg.policies.double_buffer import DoubleBufferedPlan
from jaxrl_fdg.policies.fusion import PLANS

__all__ = ["HALVES", "HOST_ENV", "DoubleBufferedPlan", "HostEnv", "halved", "simulator_handles"]

HALVES = 2


class HostEnv(BasePlacement):
    """Host simulators in two halves, stepped on the host while the device computes the other
    half's actions; ``step`` runs the double-buffered plan, fused modes the halved loop through
    callbacks."""

    name = "host_env"
    summary = "host simulators in two halves, stepped while the device acts for the other half"
    supports = Supports(
        envs=frozenset({EnvKind.HOST}),
        env_multiple=HALVES,
        why={
            "envs": "env must be gym/<id> (any gymnasium environment) or envpool/<task-id>",
            "fusion": "'step' is double-buffered; 'eager' debugs the loop op by op under "
            "placement 'single'",
        },
    )
    plans = {
        "step": DoubleBufferedPlan,
        **{mode: PLANS[mode] for mode in ("fragment", "iteration", "scan")},
    }

    def wrap(self, source: LoopSource) -> Loop:
        half = env_fragment(source, source.num_envs // HALVES)
        loop = source.build(half, {}, halves=HALVES)
        check_halves(loop)
        return loop


def halved(simulator, num_envs: int, algorithm: Algorithm, rollout_len: int) -> Loop:
    """The loop of ``num_envs`` environments of a host ``simulator`` as two halves."""
    from jaxrl_fdg.core.env_fragment import host_env_fragment
    from jaxrl_fdg.core.loop import make_loop

    if num_envs % HALVES or num_envs < HALVES:
        raise ConfigError(
            f"placement 'host_env' splits the envs into two halves: num_envs must be even "
            f"(valid: 2, 4, 6, ...), got {num_envs}"
        )
    env = host_env_fragment(simulator, num_envs // HALVES)
    return make_loop(env, algorithm, rollout_len, halves=HALVES)


def check_halves(loop: Loop) -> None:
    """The halves share the step body's other fragments (the actor) and read what those publish
    as each half's step begins. The double-buffered plan begins a half's step before the other
    half's has ended, so such an edge would be read at other times than in the fused modes:
    refused, naming it."""
    env = loop.info.env.name
    reads = {e for c in loop.info.schedule.rollout.calls for e in c.inputs}
    for frag in loop.info.step_fragments:
        shared = set(frag.published) & reads if frag.name != env else set()
        if shared:
            raise ConfigError(
                f"placement 'host_env' interleaves two halves of the envs; {frag.name!r} "
                f"publishes {', '.join(sorted(shared))}, read within the step, which the halves "
                "would read at other times than the fused modes (use placement 'single')"
            )


HOST_ENV = register(HostEnv())

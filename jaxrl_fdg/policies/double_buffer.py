"""The double-buffered plan of placement ``host_env`` (fusion ``step``): the host steps one half
of the simulators while the device computes the other half's actions.

It runs the calls of :class:`~jaxrl_fdg.policies.host_env.HalvedLoop` in the same order with the
same keys, but steps the simulators itself, in Python, between asynchronously dispatched actor
programs, so it equals the fused modes' run bit for bit (tests/policies/test_host_env.py).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxrl_fdg.core.env_fragment import EnvFragmentState
from jaxrl_fdg.core.fragment import Fragment
from jaxrl_fdg.core.loop import RolloutCarry
from jaxrl_fdg.core.types import LoopState, Transition
from jaxrl_fdg.policies.fusion import Plan
from jaxrl_fdg.policies.halved import HALVES, HalvedLoop
from jaxrl_fdg.profiling.timers import Timings


def host_env_step(
    state: EnvFragmentState, actions: np.ndarray
) -> tuple[EnvFragmentState, dict[str, np.ndarray]]:
    """One half's env step on the host, in numpy: the host env fragment's ``apply`` without the
    callback (the simulators, then the same episode bookkeeping in the same float32 arithmetic,
    so the result equals the fragment's bit for bit; the tests check it)."""
    from jaxrl_fdg.envs.host import step_simulators

    handle = np.asarray(state.env)
    observation, reward, terminated, truncated, final = step_simulators(handle, actions)
    done = terminated | truncated
    episode_return = np.asarray(state.episode_return) + reward
    episode_length = np.asarray(state.episode_length) + np.int32(1)
    new_state = EnvFragmentState(
        handle,
        observation,
        np.where(done, np.float32(0), episode_return),
        np.where(done, np.int32(0), episode_length),
    )
    outputs = {
        "reward": reward,
        "terminated": terminated,
        "truncated": truncated,
        "next_observation": final,
        "episode_return": episode_return,
        "episode_length": episode_length,
    }
    return new_state, outputs


class DoubleBufferedPlan(Plan):
    """Fusion ``step`` for placement ``host_env``: the host steps one half of the environments
    while the device computes the other half's actions.

    Compiled programs: ``keys`` (begin), ``actor`` (one half's policy call), ``stack`` (the
    trajectory, from the actor's outputs and the env's side, which the host has already stacked
    in numpy) and ``learner``. The simulators are stepped in Python in scope ``env``, whose
    ``device_s`` is the host waiting for a half's actions and ``dispatch_s`` the stepping. Each
    iteration drains the pipeline before the learner, whose new parameters the next rollout's
    actor calls need.

    Args:
      pipelined: ``False`` waits for each actor call as soon as it is dispatched, so the host
        never steps while device work is in flight: the same computation without the overlap,
        for measuring what the overlap gains.
      schedule: a list to record the order of events in (for tests and diagnosis), or ``None``.
        Entries are ``("dispatch", h, t)`` when half ``h``'s actor call for step ``t`` is
        dispatched, and ``("host_start" | "host_end", h, t, other)`` around the host stepping of
        half ``h`` at step ``t``, where ``other`` says whether the other half's in-flight
        actions were ready then (``None`` when none is in flight).
    """

    mode = "step"

    def __init__(
        self,
        loop: HalvedLoop,
        timings: Timings | None = None,
        *,
        pipelined: bool = True,
        schedule: list | None = None,
    ):
        if not isinstance(loop, HalvedLoop) or loop.simulator is None:
            raise TypeError(
                "the double-buffered plan needs a HalvedLoop of host simulators "
                "(HalvedLoop.for_simulator)"
            )
        super().__init__(loop, timings)
        self.pipelined = pipelined
        self.schedule = schedule
        self.simulator = loop.simulator

    def _signatures(self, state):
        loop: HalvedLoop = self.loop
        state_b, keys, k_learn = jax.eval_shape(loop.begin, state)
        fixed = loop.fixed_edges(state.fragments)
        view = loop.half(loop.rollout_carry(state.fragments, keys), 0)
        edges = loop.step_edges(fixed, view)
        actor_args = (view.states[loop.actor.name], _inputs(loop.actor, edges), view.key)
        _, actor_out, (k_env,), _ = jax.eval_shape(loop.step_fn(0), *actor_args)
        env_args = (
            view.states[loop.env_frag.name],
            _inputs(loop.env_frag, {**edges, **actor_out}),
            k_env,
        )
        _, env_out = jax.eval_shape(loop.step_fn(1), *env_args)
        host_side = {"observation": edges["observation"], **env_out}
        stacked = {  # [T, num_envs, ...]: the halves concatenated, the steps stacked
            k: jax.ShapeDtypeStruct((loop.rollout_len, HALVES * x.shape[0], *x.shape[1:]), x.dtype)
            for k, x in host_side.items()
        }
        actor_outs = [[actor_out] * HALVES] * loop.rollout_len
        trajectory = jax.eval_shape(self._stack, actor_outs, stacked)
        return {
            "keys": (loop.begin, (state,)),
            "actor": (loop.step_fn(0), actor_args),
            "stack": (self._stack, (actor_outs, stacked)),
            "learner": (loop.learn, (state_b, trajectory, k_learn)),
        }

    def _stack(self, actor_outs: list[list[dict]], host_side: dict) -> Transition:
        """The trajectory ``[T, num_envs]``: the actor's outputs (``[T][half]``, on the device)
        joined and stacked here; observations and env outputs stacked already, on the host."""
        loop: HalvedLoop = self.loop
        actor_out = loop.stack([loop.join(halves) for halves in actor_outs])
        env_out = {k: v for k, v in host_side.items() if k != "observation"}
        edges = {**host_side, "action": actor_out["action"]}
        return loop.transition(edges, {loop.actor.name: actor_out, loop.env_frag.name: env_out})

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, metrics = self._iteration(state)
            per_iteration.append(metrics)
        return state, per_iteration

    def _iteration(self, state: LoopState) -> tuple[LoopState, Any]:
        loop: HalvedLoop = self.loop
        state, keys, k_learn = self._call("keys", state)
        fixed = loop.fixed_edges(state.fragments)
        actor = state.fragments[loop.actor.name]
        envs, keys = list(state.fragments[loop.env_frag.name]), list(keys)
        in_flight: list[Any] = [None] * HALVES  # each half's actor outputs, once dispatched

        def dispatch(h: int, t: int) -> None:
            """Half ``h``'s actor call for step ``t``, dispatched without waiting."""
            nonlocal actor
            view = RolloutCarry({loop.actor.name: actor, loop.env_frag.name: envs[h]}, keys[h])
            inputs = _inputs(loop.actor, loop.step_edges(fixed, view))
            # The env key is unused: host simulators keep their own random streams.
            actor, in_flight[h], _, keys[h] = self._call("actor", actor, inputs, keys[h])
            if not self.pipelined:
                with self.timings.scope("actor"):
                    self.timings.wait(in_flight[h])
            self._record("dispatch", h, t)

        for h in range(HALVES):
            dispatch(h, 0)
        actor_outs, host_side = [], []
        for t in range(loop.rollout_len):
            actor_step, host_step = [], []
            for h in range(HALVES):
                actor_out, in_flight[h] = in_flight[h], None
                observation = np.asarray(envs[h].observation)
                with self.timings.scope("env"):
                    actions = self.timings.device_get(actor_out["action"])
                    self._record("host_start", h, t, self._ready(in_flight[1 - h]))
                    envs[h], env_out = host_env_step(envs[h], actions)
                    self._record("host_end", h, t, self._ready(in_flight[1 - h]))
                actor_step.append(actor_out)
                host_step.append({"observation": observation, **env_out})
                if t + 1 < loop.rollout_len:
                    dispatch(h, t + 1)
            actor_outs.append(actor_step)
            host_side.append(host_step)
        trajectory = self._call("stack", actor_outs, _stack_on_host(host_side))
        fragments = {**state.fragments, loop.actor.name: actor, loop.env_frag.name: tuple(envs)}
        return self._call("learner", state._replace(fragments=fragments), trajectory, k_learn)

    def _record(self, *event: Any) -> None:
        if self.schedule is not None:
            self.schedule.append(event)

    def _ready(self, pending: Any) -> bool | None:
        if self.schedule is None or pending is None:
            return None
        return bool(pending["action"].is_ready())


def _stack_on_host(steps: list[list[dict[str, np.ndarray]]]) -> dict[str, np.ndarray]:
    """Per-step, per-half numpy records as ``{name: [T, num_envs, ...]}`` (half 0 first): a copy,
    so the values are exactly those the pure definition's ``join`` and ``stack`` produce."""
    return {
        k: np.stack([np.concatenate([half[k] for half in halves]) for halves in steps])
        for k in steps[0][0]
    }


def _inputs(frag: Fragment, edges: dict) -> dict:
    return {name: edges[name] for name in frag.inputs}

"""The double-buffered plan of placement ``host_env`` (fusion ``step``): the host steps one half
of the simulators while the device computes the other half's calls.

It drives the loop's one step body (:meth:`~jaxrl_fdg.core.loop.Loop.step_calls`) for each half
of :class:`~jaxrl_fdg.policies.host_env.HalvedLoop`, in the order the fused modes run them and
with the same keys, but interleaves the two halves: a half's device calls are dispatched without
waiting, and the body is parked when it reaches a call of a host fragment, which runs (in numpy,
``Fragment.host_apply``) only once the other half's device calls are in flight. It equals the
fused modes' run bit for bit (tests/policies/test_host_env.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_fdg.core.loop import RolloutCarry, StepCall
from jaxrl_fdg.core.types import LoopState, Transition
from jaxrl_fdg.policies.fusion import Plan
from jaxrl_fdg.policies.halved import HALVES, HalvedLoop
from jaxrl_fdg.profiling.timers import Timings


class _Parked(NamedTuple):
    """A half's step body waiting at a host call."""

    body: Any
    request: StepCall


class DoubleBufferedPlan(Plan):
    """Fusion ``step`` for placement ``host_env``: the host steps one half of the environments
    while the device computes the other half's calls.

    Compiled programs: ``keys`` (begin), one per device call of the step body (named after the
    call, as in the step plan), ``stack`` (the trajectory, from the device calls' outputs and the
    host side, which is stacked in numpy first) and ``learner``. Host calls run in Python in a
    scope named after the call, whose ``device_s`` is the host waiting for the half's inputs
    and ``dispatch_s`` the stepping. Each iteration drains the pipeline before the learner,
    whose new parameters the next rollout's calls need.

    Args:
      pipelined: ``False`` waits for each device call as soon as it is dispatched, so the host
        never steps while device work is in flight: the same computation without the overlap,
        for measuring what the overlap gains.
      schedule: a list to record the order of events in (for tests and diagnosis), or ``None``.
        Entries are ``("dispatch", h, t)`` when half ``h``'s device calls before its host call
        of step ``t`` are dispatched, and ``("host_start" | "host_end", h, t, other)`` around
        the host call of half ``h`` at step ``t``, where ``other`` says whether the other half's
        in-flight inputs were ready then (``None`` when none is in flight).
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
        calls = loop.schedule.rollout.calls
        self._names = [c.label for c in calls]
        self._fragments = [c.fragment for c in calls]
        self._host = [loop.fragment(c.fragment).placement == "host" for c in calls]
        self._layout: tuple[Any, list[bool]] | None = None  # the transition's leaves: host?

    # -- programs ----------------------------------------------------------------------------

    def _signatures(self, state):
        loop: HalvedLoop = self.loop
        state_b, keys, k_learn = jax.eval_shape(loop.begin, state)
        signatures = {"keys": (loop.begin, (state,))}

        def shapes(index: int, *args):
            out = jax.eval_shape(loop.step_fn(index), *args)
            if self._host[index]:  # computed on the host: numpy, as host_apply returns
                return jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), out)
            signatures[self._names[index]] = (loop.step_fn(index), args)
            return out

        carry = loop.half(loop.rollout_carry(self._on_host(state.fragments), keys), 0)
        _, transition = loop.step(loop.fixed_edges(state.fragments), carry, shapes)
        leaves, treedef = jax.tree.flatten(transition)
        self._layout = treedef, [isinstance(x, np.ndarray) for x in leaves]
        steps = [[transition] * HALVES] * loop.rollout_len
        device, host = self._split(steps)
        trajectory = jax.eval_shape(self._stack, device, host)
        signatures["stack"] = (self._stack, (device, host))
        signatures["learner"] = (loop.learn, (state_b, trajectory, k_learn))
        return signatures

    def _split(self, steps: list[list[Transition]]) -> tuple[list, list]:
        """The leaves of ``steps`` (``[T][half]``): the device ones as they are, per leaf
        ``[T][half]``; the host ones joined (half 0 first) and stacked in numpy, ``[T, B, ...]``
        (a shape struct where given shapes)."""
        treedef, on_host = self._layout
        flat = [[treedef.flatten_up_to(x) for x in halves] for halves in steps]
        device, host = [], []
        for i, host_leaf in enumerate(on_host):
            parts = [[half[i] for half in halves] for halves in flat]
            if host_leaf:
                host.append(np.stack([np.concatenate(halves) for halves in parts]))
            else:
                device.append(parts)
        return device, host

    def _stack(self, device: list, host: list) -> Transition:
        """The trajectory ``[T, num_envs]`` from :meth:`_split`'s parts."""
        treedef, on_host = self._layout
        device, host = iter(device), iter(host)
        leaves = [
            next(host)
            if host_leaf
            else HalvedLoop.stack([HalvedLoop.join(h) for h in next(device)])
            for host_leaf in on_host
        ]
        return jax.tree.unflatten(treedef, leaves)

    # -- running -----------------------------------------------------------------------------

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, metrics = self._iteration(state)
            per_iteration.append(metrics)
        return state, per_iteration

    def _on_host(self, states: dict) -> dict:
        """``states`` with the env halves read back to the host, where they are stepped."""
        env = self.loop.env_frag.name
        return {**states, env: tuple(jax.device_get(h) for h in states[env])}

    def _iteration(self, state: LoopState) -> tuple[LoopState, Any]:
        loop: HalvedLoop = self.loop
        state, keys, k_learn = self._call("keys", state)
        fixed = loop.fixed_edges(state.fragments)
        env = loop.env_frag.name
        states = self._on_host(state.fragments)
        shared = {f.name: states[f.name] for f in loop.step_fragments if f.name != env}
        halves, keys = list(states[env]), list(keys)
        steps: list[list[Transition]] = [[] for _ in range(HALVES)]

        def start(h: int) -> _Parked | None:
            """Half ``h``'s next step body, run up to its first host call."""
            carry = RolloutCarry({**shared, env: halves[h]}, keys[h])
            body = loop.step_calls(fixed, carry)
            return self._run_device(h, len(steps[h]), body, next(body), shared)

        def finish(h: int, done: tuple[RolloutCarry, Transition]) -> None:
            carry, transition = done
            halves[h], keys[h] = carry.states[env], carry.key
            steps[h].append(transition)

        parked: list[_Parked | None] = [start(h) for h in range(HALVES)]
        for t in range(loop.rollout_len):
            for h in range(HALVES):
                done = self._run_host(h, t, parked[h], parked[1 - h], shared)
                while isinstance(done, _Parked):  # another host call in the same step
                    done = self._run_host(h, t, done, parked[1 - h], shared)
                finish(h, done)
                parked[h] = start(h) if t + 1 < loop.rollout_len else None
        trajectory = self._call("stack", *self._split([list(s) for s in zip(*steps, strict=True)]))
        fragments = {**state.fragments, **shared, env: tuple(halves)}
        return self._call("learner", state._replace(fragments=fragments), trajectory, k_learn)

    def _run_device(self, h: int, t: int, body, request: StepCall, shared: dict):
        """Carry out ``body``'s device calls (dispatched, not awaited) up to its next host call,
        where it is parked; or to its end, whose value is returned."""
        try:
            while not self._host[request.index]:
                name, fragment = self._names[request.index], self._fragments[request.index]
                state = shared.get(fragment, request.state)
                result = self._call(name, state, request.inputs, request.key)
                if fragment in shared:
                    shared[fragment] = result[0]
                if not self.pipelined:
                    with self.timings.scope(name):
                        self.timings.wait(result)
                request = body.send(result)
        except StopIteration as done:
            return done.value
        self._record("dispatch", h, t)
        return _Parked(body, request)

    def _run_host(self, h: int, t: int, parked: _Parked, other: _Parked | None, shared: dict):
        """The host call ``parked`` waits at, once its inputs are ready; then the body's device
        calls up to its next host call or its end."""
        body, request = parked
        name, fragment = self._names[request.index], self._fragments[request.index]
        with self.timings.scope(name):
            inputs = self.timings.device_get(request.inputs)
            self._record("host_start", h, t, self._ready(other))
            state = shared.get(fragment, request.state)
            result = self.loop.host_step_fn(request.index)(state, inputs, request.key)
            self._record("host_end", h, t, self._ready(other))
        if fragment in shared:
            shared[fragment] = result[0]
        try:
            request = body.send(result)
        except StopIteration as done:
            return done.value
        return self._run_device(h, t, body, request, shared)

    def _record(self, *event: Any) -> None:
        if self.schedule is not None:
            self.schedule.append(event)

    def _ready(self, other: _Parked | None) -> bool | None:
        if self.schedule is None or other is None:
            return None
        arrays = [x for x in jax.tree.leaves(other.request.inputs) if isinstance(x, jax.Array)]
        return all(x.is_ready() for x in arrays)

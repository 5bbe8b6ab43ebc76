"""The double-buffered plan of placement ``host_env`` (fusion ``step``): the host steps one half
of the simulators while the device computes the other half's calls.

It drives the loop's one step body with the loop's one :class:`~jaxrl_fdg.core.step.Driver`,
two streams (the env batch's halves), in the order the fused modes run them and with the same
keys; its scheduling hook parks a half before each host call, so that call runs (in numpy,
``Fragment.host_apply``) only once the other half's device calls are in flight. The actor's
state is shared by the halves in the rollout carry, as in the fused modes. It equals the fused
modes' run bit for bit (tests/policies/test_host_env.py).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.step import Driver, join_halves, unroll
from jaxrl_fdg.core.types import LoopState, Transition
from jaxrl_fdg.policies.plan import Plan
from jaxrl_fdg.profiling.timers import Timings


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
        loop: Loop,
        timings: Timings | None = None,
        chunk: int = 1,
        *,
        pipelined: bool = True,
        schedule: list | None = None,
    ):
        info = loop.info
        if info.halves != 2 or not any(info.on_host):
            raise TypeError(
                "the double-buffered plan needs a loop of host simulators in two halves "
                "(jaxrl_fdg.policies.host_env.halved)"
            )
        super().__init__(loop, timings)
        self.pipelined = pipelined
        self.schedule = schedule
        self._names = [c.label for c in info.schedule.rollout.calls]
        self._host = info.on_host
        self._driver = Driver(info, self._run, parks=self._parks, on_park=self._parked)
        self._layout: tuple[Any, list[bool]] | None = None  # the transition's leaves: host?

    # -- programs ----------------------------------------------------------------------------

    def _signatures(self, state):
        loop = self.loop
        state_b, keys, k_learn = jax.eval_shape(loop.begin, state)
        signatures = {"keys": (loop.begin, (state,))}

        def shapes(index: int, *args):
            out = jax.eval_shape(loop.calls[index], *args)
            if self._host[index]:  # computed on the host: numpy, as host_apply returns
                return jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), out)
            signatures[self._names[index]] = (loop.calls[index], args)
            return out

        on_host = state._replace(fragments=self._on_host(state.fragments))
        _, ((transition,), _) = unroll(loop, on_host, keys, Driver(loop.info, shapes), steps=1)
        leaves, treedef = jax.tree.flatten(transition)
        self._layout = treedef, [isinstance(x, np.ndarray) for x in leaves]
        steps = [[transition] * 2] * loop.info.rollout_len
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
            next(host) if host_leaf else self.loop.stack([join_halves(h) for h in next(device)])
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
        env = self.loop.info.env.name
        return {**states, env: tuple(jax.device_get(h) for h in states[env])}

    def _iteration(self, state: LoopState) -> tuple[LoopState, Any]:
        state, keys, k_learn = self._call("keys", state)
        state = state._replace(fragments=self._on_host(state.fragments))
        state, halves = unroll(self.loop, state, keys, self._driver)
        steps = [list(s) for s in zip(*halves, strict=True)]  # [T][half]
        trajectory = self._call("stack", *self._split(steps))
        return self._call("learner", state, trajectory, k_learn)

    # -- the driver's hooks ------------------------------------------------------------------

    def _parks(self, index: int) -> bool:
        """A half waits before its host calls: the other half takes its turn first."""
        return self._host[index]

    def _parked(self, half: int, step: int) -> None:
        self._record("dispatch", half, step)

    def _run(self, index: int, state: Any, inputs: dict, key: Any, *args: Any):
        name = self._names[index]
        if not self._host[index]:  # dispatched, not awaited (unless not pipelined)
            result = self._call(name, state, inputs, key, *args)
            if not self.pipelined:
                with self.timings.scope(name):
                    self.timings.wait(result)
            return result
        half, step = self._driver.position
        with self.timings.scope(name):
            inputs = self.timings.device_get(inputs)
            self._record("host_start", half, step, self._ready(1 - half))
            result = self.loop.host_calls[index](state, inputs, key, *args)
            self._record("host_end", half, step, self._ready(1 - half))
        return result

    def _record(self, *event: Any) -> None:
        if self.schedule is not None:
            self.schedule.append(event)

    def _ready(self, other: int) -> bool | None:
        if self.schedule is None:
            return None
        waiting = self._driver.waiting(other)
        if waiting is None:
            return None
        arrays = [x for x in jax.tree.leaves(waiting.inputs) if isinstance(x, jax.Array)]
        return all(x.is_ready() for x in arrays)

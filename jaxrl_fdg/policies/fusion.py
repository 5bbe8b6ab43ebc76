"""Fusion policies: where the compilation boundaries of the loop fall.

Every mode runs the same loop functions (:mod:`jaxrl_fdg.core.loop`) in the same order with the
same keys; only what is compiled together changes. From most split to most fused:

========== =====================================================================================
eager      no compilation (``jax.disable_jit``): every op dispatched from Python. For debugging.
step       each step fragment's call (policy, env step, ...) is its own compiled call from a
           Python loop; the learn phase is one more.
fragment   the rollout scan and the learn phase are compiled apart; host loop between.
iteration  rollout + learn phase in one program, called once per iteration.
scan       up to ``chunk`` iterations inside one program between host boundaries (the default).
========== =====================================================================================

Programs are compiled ahead of time (:class:`~jaxrl_fdg.policies.plan.Plan`); ``fragment``'s,
``iteration``'s and ``scan``'s programs donate the loop state they replace once it is large
(:data:`~jaxrl_fdg.policies.plan.DONATE_BYTES`). The split modes (``step``, ``eager``) drive the
step body from Python with the loop's one :class:`~jaxrl_fdg.core.step.Driver`, each call
carried out as a compiled program of its own (or op by op), a host fragment's in numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.core.cadence import Every, Rounds
from jaxrl_fdg.core.graph import Node, Schedule
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.step import Driver, unroll
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError, GraphError
from jaxrl_fdg.policies.metric_rows import MetricRows
from jaxrl_fdg.policies.plan import DONATE_BYTES, Extra, Plan
from jaxrl_fdg.profiling.timers import Timings

FUSION_MODES = ("eager", "step", "fragment", "iteration", "scan")
# Not a mode: measure the modes on the run and take the fastest (``jaxrl_fdg.run.autotune``).
AUTO_FUSION = "auto"

PROGRAMS = {
    "eager": "none: every op is dispatched from Python (jax.disable_jit)",
    "step": "[keys]; ([call] per call of the step body)×T; [stack]; [learner] per iteration",
    "fragment": "[rollout: (step body)×T] [learner: after the rollout] per iteration",
    "iteration": "[iteration: (step body)×T → after the rollout] per iteration",
    "scan": "[scan: ((step body)×T → after the rollout) × chunk iterations] per host boundary",
}

# Names of the step plan's own programs, which no call of the step body may take.
STEP_PROGRAMS = ("init", "keys", "stack", "learner")


def programs(schedule: Schedule) -> dict[str, str]:
    """What each fusion mode compiles for ``schedule``: where its boundaries cut the tree."""
    calls = [c.label for c in schedule.rollout.calls]
    body = "→".join(calls)
    after = "; ".join(_node_text(node) for node in schedule.after)
    return {
        "eager": PROGRAMS["eager"],
        "step": f"[keys]; ({' '.join(f'[{c}]' for c in calls)})×T; [stack]; [learner: {after}] "
        "per iteration",
        "fragment": f"[rollout: ({body})×T] [learner: {after}] per iteration",
        "iteration": f"[iteration: ({body})×T → {after}] per iteration",
        "scan": f"[scan: (({body})×T → {after}) × chunk iterations] per host boundary",
    }


def _node_text(node: Node) -> str:
    calls = "→".join(c.label for c in node.calls)
    cadence = node.cadence
    if isinstance(cadence, Rounds):
        return f"({calls})×{cadence.count}" + (" when ready" if cadence.when else "")
    if isinstance(cadence, Every):
        return f"every {cadence.n}: {calls}"
    return calls


class StepPlan(Plan):
    """A Python loop over env steps; each call of the step body is its own compiled program
    (named after the call: the fragment, or ``fragment.method``). A host fragment's call is not
    compiled: it runs in Python between the compiled calls."""

    mode = "step"

    def __init__(self, loop: Loop, timings: Timings | None = None, chunk: int = 1):
        super().__init__(loop, timings)
        calls = loop.info.schedule.rollout.calls
        self._names = [c.label for c in calls]
        taken = sorted(set(self._names) & set(STEP_PROGRAMS))
        if taken:
            raise GraphError(
                f"fusion 'step' names a program after each step call; {', '.join(taken)} "
                f"would clash with its own ({', '.join(STEP_PROGRAMS)}): rename the fragment"
            )
        self._host = {
            name for name, host in zip(self._names, loop.info.on_host, strict=True) if host
        }
        self._driver = Driver(loop.info, self._run_step)

    def _uncompiled(self) -> set[str]:
        return self._host

    def _call_fn(self, index: int) -> Callable:
        name = self._names[index]
        return self.loop.host_calls[index] if name in self._host else self.loop.calls[index]

    def _signatures(self, state):
        loop = self.loop
        state_b, k_rollout, k_learn = jax.eval_shape(loop.begin, state)
        signatures = {"keys": (loop.begin, (state,))}

        def shapes(index: int, *args):  # the step body, run once on shapes: each call's program
            signatures[self._names[index]] = (self._call_fn(index), args)
            return jax.eval_shape(loop.calls[index], *args)

        _, ((transition,),) = unroll(loop, state, k_rollout, Driver(loop.info, shapes), steps=1)
        transitions = [transition] * loop.info.rollout_len
        trajectory = jax.eval_shape(loop.stack, transitions)
        signatures["stack"] = (loop.stack, (transitions,))
        signatures["learner"] = (loop.learn, (state_b, trajectory, k_learn))
        return signatures

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, k_rollout, k_learn = self._call("keys", state)
            state, (transitions,) = unroll(self.loop, state, k_rollout, self._driver)
            trajectory = self._call("stack", transitions)
            state, metrics = self._call("learner", state, trajectory, k_learn)
            per_iteration.append(metrics)
        return state, per_iteration

    def _run_step(self, index: int, *args: Any):
        return self._call(self._names[index], *args)


class EagerPlan(StepPlan):
    """The step plan's loop with nothing compiled: ops run one by one, breakpoints work."""

    mode = "eager"

    def init(self, key):
        with self.timings.scope("init"), jax.disable_jit():
            return self.checked(self.loop.init(key))

    def compile(self, state, extra=None):
        """Nothing of the loop's compiles; programs in ``extra`` (evaluation) still do."""
        loop = self.loop
        self._programs = {"keys": loop.begin, "stack": loop.stack, "learner": loop.learn}
        for i, name in enumerate(self._names):
            self._programs[name] = self._call_fn(i)
        self._compile_each(
            {name: (fn, args_for(state)) for name, (fn, args_for) in (extra or {}).items()}
        )

    def start(self, key, extra=None, before_init=None):
        state = self.init(key)
        self.compile(state, extra)
        return state

    def _context(self):
        return jax.disable_jit()


class FragmentPlan(Plan):
    donating = frozenset({"rollout", "learner"})
    mode = "fragment"

    def _signatures(self, state):
        state_r, trajectory, k_learn = jax.eval_shape(self.loop.rollout, state)
        return {
            "rollout": (self.loop.rollout, (state,)),
            "learner": (self.loop.learn, (state_r, trajectory, k_learn)),
        }

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, trajectory, k_learn = self._call("rollout", state)
            state, metrics = self._call("learner", state, trajectory, k_learn)
            per_iteration.append(metrics)
        return state, per_iteration


class IterationPlan(Plan):
    mode = "iteration"
    donating = frozenset({"iteration"})

    def _signatures(self, state):
        return {"iteration": (self.loop.iteration, (state,))}

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, metrics = self._call("iteration", state)
            per_iteration.append(metrics)
        return state, per_iteration


class Chunk:
    """``chunk(state, n) -> (state, rows)``: ``n`` iterations of ``loop`` (at most ``size``) in
    one ``lax.fori_loop``, every iteration's metrics packed into ``rows``
    (:class:`~jaxrl_fdg.policies.metric_rows.MetricRows`, set when the function is traced;
    :meth:`read` gives ``{name: [n, ...]}``). The trip count may be traced: a last, shorter
    chunk then reuses the same program."""

    def __init__(self, loop: Loop, size: int):
        self.loop, self.size = loop, size
        self.rows: MetricRows | None = None

    def __call__(self, state: LoopState, n: Any):
        # The metric rows need the iteration's output shapes before the loop is traced. One
        # jitted iteration serves both: its trace for the shapes is cached, and the loop body's
        # call reuses it instead of tracing the whole iteration a second time.
        iteration = jax.jit(self.loop.iteration)
        _, shapes = iteration.trace(state).out_info
        self.rows = rows = MetricRows(shapes)

        def body(i, carry):
            state, buffers = carry
            state, metrics = iteration(state)
            return state, rows.write(buffers, i, metrics)

        return jax.lax.fori_loop(0, n, body, (state, rows.zeros(self.size)))

    def read(self, buffers: Any, n: int) -> dict[str, Any]:
        return self.rows.read(buffers, n)


class ScanPlan(Plan):
    """Up to ``chunk`` iterations per call, in one program (:class:`Chunk`) with a run-time trip
    count, so a last, shorter chunk reuses the same program."""

    mode = "scan"
    donating = frozenset({"scan"})
    per_iteration = frozenset({"scan"})

    def __init__(self, loop: Loop, timings: Timings | None = None, chunk: int = 1):
        super().__init__(loop, timings)
        if chunk < 1:
            raise ConfigError(f"chunk must be a positive number of iterations, got {chunk}")
        self.chunk = chunk
        self._chunk = Chunk(loop, chunk)

    def _signatures(self, state):
        return {"scan": (self._chunk, (state, jax.ShapeDtypeStruct((), jnp.int32)))}

    cacheable = True

    def _own_names(self):
        return ("scan",)

    def _traced_state(self):
        return self._chunk.rows  # where each metric sits in the chunk's rows

    def _restore_traced_state(self, saved):
        self._chunk.rows = saved

    def _advance(self, state, n):
        if not 1 <= n <= self.chunk:
            raise ValueError(f"scan plan advances 1..{self.chunk} iterations per call, got {n}")
        state, buffers = self._call("scan", state, np.int32(n))
        return state, (buffers, n)

    def collect(self, pending):
        buffers, n = pending
        return self._chunk.read(self.timings.device_get(buffers), n)


# The plan of each fusion mode, by name: ``PLANS[mode](loop, timings, chunk=chunk)``.
PLANS: dict[str, type[Plan]] = {
    "eager": EagerPlan,
    "step": StepPlan,
    "fragment": FragmentPlan,
    "iteration": IterationPlan,
    "scan": ScanPlan,
}


def make_plan(mode: str, loop: Loop, timings: Timings | None = None, chunk: int = 1) -> Plan:
    """The plan for fusion ``mode``; ``chunk`` (iterations per program) matters to ``scan`` only.
    ``mode`` is validated with the configuration (``jaxrl_fdg.config``), before this."""
    return PLANS[mode](loop, timings, chunk=chunk)


__all__ = [
    "AUTO_FUSION",
    "DONATE_BYTES",
    "FUSION_MODES",
    "PLANS",
    "PROGRAMS",
    "Chunk",
    "Extra",
    "Plan",
    "make_plan",
    "programs",
]

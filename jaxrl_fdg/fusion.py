"""Fusion policies: where the compilation boundaries of the loop fall.

Every mode runs the same :class:`~jaxrl_fdg.loop.Loop` functions in the same order with the same
keys; only what is compiled together changes. From most split to most fused:

========== =====================================================================================
eager      no compilation (``jax.disable_jit``): every op dispatched from Python. For debugging.
step       each policy call and each env step is its own compiled call from a Python loop.
fragment   the rollout scan and the learner update are compiled apart; host loop between.
iteration  rollout + update in one program, called once per iteration.
scan       up to ``chunk`` iterations inside one program between host boundaries (the default).
========== =====================================================================================

Programs are compiled ahead of time (:meth:`Plan.compile`) so compile time is measured apart from
run time, and a later call can never silently recompile.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.loop import Loop, LoopState
from jaxrl_fdg.profiling.timers import Timings

FUSION_MODES = ("eager", "step", "fragment", "iteration", "scan")

PROGRAMS = {
    "eager": "none: every op is dispatched from Python (jax.disable_jit)",
    "step": "[keys]; ([actor] [env])×T; [stack]; [learner] per iteration",
    "fragment": "[rollout: (actor→env)×T] [learner] per iteration",
    "iteration": "[iteration: (actor→env)×T → learner] per iteration",
    "scan": "[scan: ((actor→env)×T → learner) × chunk iterations] per host boundary",
}


def check_mode(mode: str) -> None:
    if mode not in FUSION_MODES:
        raise ConfigError(f"unknown fusion mode {mode!r} (valid: {', '.join(FUSION_MODES)})")


class Plan:
    """Compiled programs for one fusion mode, and how to advance the loop ``n`` iterations."""

    mode: str = ""

    def __init__(self, loop: Loop, timings: Timings | None = None):
        self.loop = loop
        self.timings = timings or Timings()
        self._programs: dict[str, Callable] = {}
        self._functions: dict[str, Callable] = {}  # what each program compiles

    def init(self, key: jax.Array) -> LoopState:
        """The initial loop state (itself a compiled program, except in eager mode)."""
        with self.timings.scope("compile:init", always=True):
            self._programs["init"] = jax.jit(self.loop.init).lower(key).compile()
        return self._call("init", key)

    def compile(self, state: LoopState) -> None:
        """Compile every program for the shapes of ``state`` (charged to ``compile:<name>``)."""
        uncompiled = self._uncompiled()
        for name, (fn, args) in self._signatures(state).items():
            self._functions[name] = fn
            if name in uncompiled:
                self._programs[name] = fn
                continue
            with self.timings.scope(f"compile:{name}", always=True):
                self._programs[name] = jax.jit(fn).lower(*args).compile()

    def _uncompiled(self) -> set[str]:
        """Programs this mode runs as plain Python (host-placed fragments in split modes)."""
        return set()

    @property
    def compiled(self) -> dict[str, Any]:
        """The compiled executables by program name (empty in eager mode)."""
        return {k: v for k, v in self._programs.items() if hasattr(v, "as_text")}

    def advance(self, state: LoopState, n: int) -> tuple[LoopState, Any]:
        """Dispatch ``n`` iterations. Returns the new state and the metrics still on the device;
        :meth:`collect` reads them back (the host waits there, not here)."""
        if set(self._programs) <= {"init"}:
            self.compile(state)
        with self._context():
            return self._advance(state, n)

    def collect(self, pending: Any) -> dict[str, np.ndarray]:
        """Per-iteration metrics ``{name: [n]}`` on the host, from what :meth:`advance` returned.

        The wait for the device and the copy are charged to the open scope."""
        per_iteration = self.timings.device_get(pending)
        return {k: np.stack([m[k] for m in per_iteration]) for k in per_iteration[0]}

    # -- per-mode hooks -------------------------------------------------------------------

    def _signatures(self, state: LoopState) -> dict[str, tuple[Callable, tuple]]:
        raise NotImplementedError

    def _advance(self, state: LoopState, n: int):
        raise NotImplementedError

    def _context(self):
        return contextlib.nullcontext()

    def _call(self, name: str, *args: Any):
        with self.timings.scope(name):
            out = self._programs[name](*args)
            if self.timings.synchronous:
                self.timings.wait(out)
        if jax.config.jax_debug_nans and name in self._functions:
            self._find_nan(name, args, out)
        return out

    def _find_nan(self, name: str, args: tuple, out: Any) -> None:
        """``--debug-nans``: if a program's outputs hold a NaN, run its function again op by op
        on the same inputs, where JAX's own check raises at the first op that makes one. (JAX
        checks a compiled program's outputs only on some dispatch paths; this covers all.)"""
        leaves = [x for x in jax.tree.leaves(out) if jnp.issubdtype(x.dtype, jnp.inexact)]
        if not any(bool(jnp.isnan(x).any()) for x in leaves):
            return
        with jax.disable_jit():
            self._functions[name](*args)
        raise FloatingPointError(f"NaN in the outputs of program {name!r}")


class _StepPlan(Plan):
    """A Python loop over env steps; each half of a step is its own compiled call. A host-placed
    env fragment is not compiled: it runs in Python between the compiled policy calls."""

    mode = "step"

    def _uncompiled(self) -> set[str]:
        return {"env"} if self.loop.env_frag.placement == "host" else set()

    def _signatures(self, state):
        loop = self.loop
        state_b, k_rollout, k_learn = jax.eval_shape(loop.begin, state)
        fixed = loop.fixed_edges(state.fragments)
        carry = loop.rollout_carry(state.fragments, k_rollout)
        actor_args = (carry.actor, loop.actor_inputs(fixed, carry), carry.key)
        _, actor_out, k_env, _ = jax.eval_shape(loop.act, *actor_args)
        env_args = (carry.env, loop.env_inputs(fixed, carry, actor_out), k_env)
        _, env_out = jax.eval_shape(loop.env_step, *env_args)
        transitions = [
            loop.transition(loop.observation(carry), actor_out, env_out)
        ] * loop.rollout_len
        trajectory = jax.eval_shape(loop.stack, transitions)
        return {
            "keys": (loop.begin, (state,)),
            "actor": (loop.act, actor_args),
            "env": (loop.env_step, env_args),
            "stack": (loop.stack, (transitions,)),
            "learner": (loop.learn, (state_b, trajectory, k_learn)),
        }

    def _advance(self, state, n):
        loop, per_iteration = self.loop, []
        for _ in range(n):
            state, k_rollout, k_learn = self._call("keys", state)
            fixed = loop.fixed_edges(state.fragments)
            carry, transitions = loop.rollout_carry(state.fragments, k_rollout), []
            for _ in range(loop.rollout_len):
                observation = loop.observation(carry)
                actor_state, actor_out, k_env, key = self._call(
                    "actor", carry.actor, loop.actor_inputs(fixed, carry), carry.key
                )
                carry = carry._replace(actor=actor_state, key=key)
                env_state, env_out = self._call(
                    "env", carry.env, loop.env_inputs(fixed, carry, actor_out), k_env
                )
                transitions.append(loop.transition(observation, actor_out, env_out))
                carry = carry._replace(env=env_state)
            trajectory = self._call("stack", transitions)
            states = loop.end_rollout(state.fragments, carry)
            state, metrics = self._call(
                "learner", state._replace(fragments=states), trajectory, k_learn
            )
            per_iteration.append(metrics)
        return state, per_iteration


class _EagerPlan(_StepPlan):
    """The step plan's loop with nothing compiled: ops run one by one, breakpoints work."""

    mode = "eager"

    def compile(self, state):
        loop = self.loop
        self._programs = {
            "keys": loop.begin,
            "actor": loop.act,
            "env": loop.env_step,
            "stack": loop.stack,
            "learner": loop.learn,
        }

    def init(self, key):
        with self.timings.scope("init"), jax.disable_jit():
            return self.loop.init(key)

    def _context(self):
        return jax.disable_jit()


class _FragmentPlan(Plan):
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


class _IterationPlan(Plan):
    mode = "iteration"

    def _signatures(self, state):
        return {"iteration": (self.loop.iteration, (state,))}

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, metrics = self._call("iteration", state)
            per_iteration.append(metrics)
        return state, per_iteration


class _ScanPlan(Plan):
    """Up to ``chunk`` iterations per call, in one program with a run-time trip count.

    The trip count is an argument, not a shape, so a last, shorter chunk reuses the same program.
    """

    mode = "scan"

    def __init__(self, loop: Loop, timings: Timings | None = None, chunk: int = 1):
        super().__init__(loop, timings)
        if chunk < 1:
            raise ConfigError(f"chunk must be a positive number of iterations, got {chunk}")
        self.chunk = chunk

    def _run_chunk(self, state: LoopState, n: jax.Array):
        buffers = jax.tree.map(
            lambda s: jnp.zeros((self.chunk, *s.shape), s.dtype), self._metric_shapes
        )

        def body(i, carry):
            state, buffers = carry
            state, metrics = self.loop.iteration(state)
            buffers = jax.tree.map(lambda b, m: b.at[i].set(m), buffers, metrics)
            return state, buffers

        return jax.lax.fori_loop(0, n, body, (state, buffers))

    def _signatures(self, state):
        _, self._metric_shapes = jax.eval_shape(self.loop.iteration, state)
        return {"scan": (self._run_chunk, (state, jax.ShapeDtypeStruct((), jnp.int32)))}

    def _advance(self, state, n):
        if not 1 <= n <= self.chunk:
            raise ValueError(f"scan plan advances 1..{self.chunk} iterations per call, got {n}")
        state, buffers = self._call("scan", state, np.int32(n))
        return state, (buffers, n)

    def collect(self, pending):
        buffers, n = pending
        return {k: v[:n] for k, v in self.timings.device_get(buffers).items()}


_PLANS = {
    "eager": _EagerPlan,
    "step": _StepPlan,
    "fragment": _FragmentPlan,
    "iteration": _IterationPlan,
    "scan": _ScanPlan,
}


def make_plan(mode: str, loop: Loop, timings: Timings | None = None, chunk: int = 1) -> Plan:
    """The plan for fusion ``mode``; ``chunk`` (iterations per program) matters to ``scan`` only."""
    check_mode(mode)
    if mode == "scan":
        return _ScanPlan(loop, timings, chunk)
    return _PLANS[mode](loop, timings)

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

Programs are compiled ahead of time (:meth:`Plan.compile`) so compile time is measured apart from
run time, and a later call can never silently recompile.

A program that takes the whole loop state and returns its successor (``fragment``'s, ``iteration``'s
and ``scan``'s) *donates* it once the state holds :data:`DONATE_BYTES` or more: the program
updates it in place instead of keeping its input and its output alive together, which for a large
replay would need twice its memory. The caller's input state is deleted by the call; every caller
here continues from the returned state. ``--debug-nans`` turns donation off (it re-runs a program
on its inputs).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.core.cadence import Every, Rounds
from jaxrl_fdg.core.graph import Node, Schedule
from jaxrl_fdg.core.protocol import LoopLike
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError, GraphError
from jaxrl_fdg.policies.compiling import Compiler, compile_timed
from jaxrl_fdg.policies.metric_rows import MetricRows
from jaxrl_fdg.profiling.timers import COMPILE_WAIT, Timings

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

# A state this large is donated to the programs that replace it (see the module docstring).
DONATE_BYTES = 256 * 2**20

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


# Programs a caller adds to a plan's (evaluation): name -> (function, state -> its arguments).
Extra = dict[str, tuple[Callable, Callable[[LoopState], tuple]]]


class Plan:
    """Compiled programs for one fusion mode, and how to advance the loop ``n`` iterations."""

    mode: str = ""
    # Programs whose first argument is a state they replace: donated when large (DONATE_BYTES).
    donating: frozenset[str] = frozenset()
    # Programs that loop over iterations a number of times known only at run time: XLA's cost
    # analysis counts their loop body once, so their cost is one iteration's, not one call's.
    per_iteration: frozenset[str] = frozenset()

    def __init__(self, loop: LoopLike, timings: Timings | None = None):
        self.loop = loop
        self.timings = timings or Timings()
        self._programs: dict[str, Callable] = {}
        self._functions: dict[str, Callable] = {}  # what each program compiles
        self._compiling = Compiler(self.timings)  # programs still compiling (start)

    def init(self, key: jax.Array) -> LoopState:
        """The initial loop state (itself a compiled program, except in eager mode)."""
        with self.timings.scope("compile:init", always=True):
            self._programs["init"], _ = compile_timed(jax.jit(self.loop.init).lower(key), "init")
        return self._call("init", key)

    def compile(self, state: LoopState, extra: Extra | None = None) -> None:
        """Compile every program for the shapes of ``state`` (charged to ``compile:<name>``),
        one after another; ``extra`` adds programs of the caller's (see :meth:`start`)."""
        self._compile_each(self._all_signatures(state, extra))

    def _compile_each(self, signatures: dict[str, tuple[Callable, tuple]]) -> None:
        for name, lowered, lowering in self._lowered(signatures):
            compiled, seconds = compile_timed(lowered, name)
            self._programs[name] = compiled
            self.timings.record(f"compile:{name}", lowering + seconds)

    def _lowered(self, signatures: dict[str, tuple[Callable, tuple]]):
        """``(name, lowered, seconds)`` for each program in turn, lowered for its arguments
        (the seconds include tracing). Programs this mode runs as plain Python are set aside,
        not lowered."""
        uncompiled = self._uncompiled()
        for name, (fn, args) in signatures.items():
            self._functions[name] = fn
            if name in uncompiled:
                self._programs[name] = fn
                continue
            start = time.perf_counter()
            donate = (0,) if self.donates(name, args) else ()
            lowered = jax.jit(fn, donate_argnums=donate).lower(*args)
            yield name, lowered, time.perf_counter() - start

    def donates(self, name: str, args: tuple) -> bool:
        """Whether program ``name``, compiled for ``args``, donates its first argument."""
        if name not in self.donating or jax.config.jax_debug_nans:
            return False
        state_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(args[0]))
        return state_bytes >= DONATE_BYTES

    def start(
        self, key: jax.Array, extra: Extra | None = None, before_init: Callable | None = None
    ) -> LoopState:
        """:meth:`init` and :meth:`compile` in one, without waiting for ``init`` to run: every
        program, ``init`` included, is lowered for the shapes ``init`` will return (traced, not
        computed) and compiled on worker threads (XLA releases the GIL while it compiles), each
        as soon as it is lowered. Returns the initial state once ``init`` and the mode's own
        programs are compiled.

        The mode's programs are lowered first: they take longest to compile, and ``init``'s
        lowering (which sets up LAPACK for its orthogonal initialisers on a process's first QR)
        and the ``extra`` programs' run beside that compile.

        ``extra`` maps more program names to ``(fn, args_for)``, ``args_for(state)`` giving the
        arguments to compile ``fn`` for, called with :meth:`call`. They keep compiling behind
        the first chunks; the first call waits for its program if it must. Only for placements
        whose programs are fully described by their arguments' shapes (one device, no host
        state): see ``Placement.compiles_from_shapes``.

        ``compile:<program>`` scopes get each program's own tracing, lowering and compile time;
        the ``compile`` scope around them the wall time the run waited, which is less than their
        sum when they overlap.

        ``before_init(programs)``, if given, sees the compiled programs before ``init`` runs
        (the runner's memory check) and may raise."""
        extra = extra or {}
        with self.timings.scope("compile", always=True):
            self._compiling = compiler = Compiler(self.timings)
            try:  # a program that fails to lower still lets the pool's threads end
                start = time.perf_counter()
                traced = jax.jit(self.loop.init).trace(key)
                tracing = time.perf_counter() - start
                own = self._signatures(traced.out_info)
                for name, lowered, seconds in self._lowered(own):
                    compiler.submit(name, lowered, seconds)
                start = time.perf_counter()
                compiler.submit("init", traced.lower(), tracing + time.perf_counter() - start)
                others = {
                    name: (fn, args_for(traced.out_info)) for name, (fn, args_for) in extra.items()
                }
                for name, lowered, seconds in self._lowered(others):
                    compiler.submit(name, lowered, seconds)
            finally:
                compiler.close()
            for name in ["init", *own]:
                if name in compiler:
                    self._programs[name] = compiler.result(name)
        if before_init is not None:
            before_init(self.compiled_so_far)
        return self._call("init", key)

    def _program(self, name: str) -> Callable:
        program = self._programs.get(name)
        if program is None and name in self._compiling:  # still compiling in the background
            with self.timings.scope(COMPILE_WAIT, always=True):
                program = self._programs[name] = self._compiling.result(name)
        return program

    def call(self, name: str, *args: Any) -> Any:
        """Call compiled program ``name`` (one of ``extra``'s, say), timed as scope ``name``."""
        return self._call(name, *args)

    def _all_signatures(self, state, extra: Extra | None) -> dict[str, tuple[Callable, tuple]]:
        signatures = self._signatures(state)
        for name, (fn, args_for) in (extra or {}).items():
            signatures[name] = (fn, args_for(state))
        return signatures

    def _uncompiled(self) -> set[str]:
        """Programs this mode runs as plain Python (host-placed fragments in split modes)."""
        return set()

    @property
    def compiled(self) -> dict[str, Any]:
        """The compiled executables by program name (empty in eager mode); waits for any still
        compiling."""
        for name in list(self._compiling.futures):
            self._program(name)
        return self.compiled_so_far

    @property
    def compiled_so_far(self) -> dict[str, Any]:
        """The compiled executables of the programs done compiling; waits for none."""
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
        program = self._program(name)
        with self.timings.scope(name):
            try:
                out = program(*args)
            except Exception as e:  # JAX's own check found a NaN, on its private error type
                if type(e).__name__ != "InternalFloatingPointError" or name not in self._functions:
                    raise
                out = None
            if self.timings.synchronous:
                self.timings.wait(out)
        if jax.config.jax_debug_nans and name in self._functions:
            self._find_nan(name, args, out)
        return out

    def _find_nan(self, name: str, args: tuple, out: Any) -> None:
        """``--debug-nans``: if a program's outputs hold a NaN (``out`` is ``None`` when JAX's
        check already found one), run its function again op by op on the same inputs, where
        JAX's own check raises at the first op that makes one. (JAX checks a compiled program's
        outputs only on some dispatch paths; this covers all.)"""
        leaves = [x for x in jax.tree.leaves(out) if jnp.issubdtype(x.dtype, jnp.inexact)]
        if out is not None and not any(bool(jnp.isnan(x).any()) for x in leaves):
            return
        # Op-by-op dispatch reuses executables cached by earlier calls in this process, and a
        # cached one can skip the check (seen when an earlier run with --debug-nans had called
        # the same primitives): start the re-run from empty caches.
        jax.clear_caches()
        with jax.disable_jit():
            self._functions[name](*args)
        raise FloatingPointError(f"NaN in the outputs of program {name!r}")


class StepPlan(Plan):
    """A Python loop over env steps; each call of the step body is its own compiled program
    (named after the call: the fragment, or ``fragment.method``). A host-placed fragment is not
    compiled: it runs in Python between the compiled calls."""

    mode = "step"

    def __init__(self, loop: LoopLike, timings: Timings | None = None):
        super().__init__(loop, timings)
        calls = loop.graph.schedule.rollout.calls
        self._names = [c.label for c in calls]
        taken = sorted(set(self._names) & set(STEP_PROGRAMS))
        if taken:
            raise GraphError(
                f"fusion 'step' names a program after each step call; {', '.join(taken)} "
                f"would clash with its own ({', '.join(STEP_PROGRAMS)}): rename the fragment"
            )
        graph = loop.graph
        self._host = {c.label for c in calls if graph.fragment(c.fragment).placement == "host"}

    def _uncompiled(self) -> set[str]:
        return self._host

    def _signatures(self, state):
        loop = self.loop
        state_b, k_rollout, k_learn = jax.eval_shape(loop.begin, state)
        signatures = {"keys": (loop.begin, (state,))}

        def shapes(index: int, *args):  # the step body, run once on shapes: each call's program
            name = self._names[index]
            fn = loop.host_step_fn(index) if name in self._host else loop.step_fn(index)
            signatures[name] = (fn, args)
            return jax.eval_shape(loop.step_fn(index), *args)

        _, (transition,) = loop.unroll(state, k_rollout, shapes, steps=1)
        transitions = [transition] * loop.rollout_len
        trajectory = jax.eval_shape(loop.stack, transitions)
        signatures["stack"] = (loop.stack, (transitions,))
        signatures["learner"] = (loop.learn, (state_b, trajectory, k_learn))
        return signatures

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, k_rollout, k_learn = self._call("keys", state)
            state, transitions = self.loop.unroll(state, k_rollout, self._run_step)
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
            return self.loop.init(key)

    def compile(self, state, extra=None):
        """Nothing of the loop's compiles; programs in ``extra`` (evaluation) still do."""
        loop = self.loop
        self._programs = {"keys": loop.begin, "stack": loop.stack, "learner": loop.learn}
        for i, name in enumerate(self._names):
            self._programs[name] = loop.host_step_fn(i) if name in self._host else loop.step_fn(i)
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


class ScanPlan(Plan):
    """Up to ``chunk`` iterations per call, in one program with a run-time trip count.

    The trip count is an argument, not a shape, so a last, shorter chunk reuses the same program.
    """

    mode = "scan"
    donating = frozenset({"scan"})
    per_iteration = frozenset({"scan"})

    def __init__(self, loop: LoopLike, timings: Timings | None = None, chunk: int = 1):
        super().__init__(loop, timings)
        if chunk < 1:
            raise ConfigError(f"chunk must be a positive number of iterations, got {chunk}")
        self.chunk = chunk

    def _run_chunk(self, state: LoopState, n: jax.Array):
        # The metric rows need the iteration's output shapes before the loop is traced. One
        # jitted iteration serves both: its trace for the shapes is cached, and the loop body's
        # call reuses it instead of tracing the whole iteration a second time.
        iteration = jax.jit(self.loop.iteration)
        _, shapes = iteration.trace(state).out_info
        self._rows = rows = MetricRows(shapes)

        def body(i, carry):
            state, buffers = carry
            state, metrics = iteration(state)
            return state, rows.write(buffers, i, metrics)

        return jax.lax.fori_loop(0, n, body, (state, rows.zeros(self.chunk)))

    def _signatures(self, state):
        return {"scan": (self._run_chunk, (state, jax.ShapeDtypeStruct((), jnp.int32)))}

    def _advance(self, state, n):
        if not 1 <= n <= self.chunk:
            raise ValueError(f"scan plan advances 1..{self.chunk} iterations per call, got {n}")
        state, buffers = self._call("scan", state, np.int32(n))
        return state, (buffers, n)

    def collect(self, pending):
        buffers, n = pending
        return self._rows.read(self.timings.device_get(buffers), n)


PLANS: dict[str, type[Plan]] = {
    "eager": EagerPlan,
    "step": StepPlan,
    "fragment": FragmentPlan,
    "iteration": IterationPlan,
    "scan": ScanPlan,
}


def make_plan(mode: str, loop: LoopLike, timings: Timings | None = None, chunk: int = 1) -> Plan:
    """The plan for fusion ``mode``; ``chunk`` (iterations per program) matters to ``scan`` only.
    ``mode`` is validated with the configuration (``jaxrl_fdg.config``), before this."""
    if mode == "scan":
        return ScanPlan(loop, timings, chunk)
    return PLANS[mode](loop, timings)

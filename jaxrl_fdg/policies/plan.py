"""The plan: compiled programs for one fusion mode, and how to advance the loop with them.

Programs are compiled ahead of time (:meth:`Plan.compile`, or all at once and beside ``init``:
:meth:`Plan.start`) so compile time is measured apart from run time, and a later call can never
silently recompile. The fusion modes' plans (``jaxrl_fdg.policies.fusion``) and the placements'
own (``actor_learner``, ``host_env``) say which programs they compile and how an iteration calls
them.

A program that takes the whole loop state and returns its successor *donates* it once the state
holds :data:`DONATE_BYTES` or more: the program updates it in place instead of keeping its input
and its output alive together, which for a large replay would need twice its memory. The
caller's input state is deleted by the call; every caller here continues from the returned
state. ``--debug-nans`` turns donation off (it re-runs a program on its inputs).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.policies.compiling import RUN_ONCE, Compiler, compile_timed, compiled_here
from jaxrl_fdg.policies.exported import Exported, Serialized, kernels_setup, serialize
from jaxrl_fdg.profiling.timers import COMPILE_WAIT, Timings

try:  # what JAX raises inside a program call when its NaN check finds one
    from jax._src.api_util import InternalFloatingPointError
except ImportError:  # pragma: no cover (a JAX that moved it: --debug-nans re-runs on NaN outputs)

    class InternalFloatingPointError(Exception):  # type: ignore[no-redef]
        """Never raised: stands in for JAX's private error type."""


# A state this large is donated to the programs that replace it (see the module docstring).
DONATE_BYTES = 256 * 2**20

# An initial state up to this size is kept in the executable cache with the programs: a run that
# finds them there starts from it without running (or loading) init. A larger one (a replay
# buffer, say) is made again by init, which the cache keeps as a program.
INITIAL_STATE_BYTES = 16 * 2**20


def _nbytes(tree: Any) -> int:
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree) if hasattr(x, "size"))


# Programs a caller adds to a plan's (evaluation): name -> (function, state -> its arguments).
Extra = dict[str, tuple[Callable, Callable[[LoopState], tuple]]]


class Plan:
    """Compiled programs for one fusion mode, and how to advance the loop ``n`` iterations."""

    mode: str = ""
    # Programs whose first argument is a state they replace: donated when large (DONATE_BYTES).
    donating: frozenset[str] = frozenset()
    # How this run's programs were made: "traced" (and lowered), "loaded" from the executable
    # cache, or traced and "stored" in it ("not stored" where a program could not be exported
    # or the write failed).
    executables: str = "traced"
    # Programs that loop over iterations a number of times known only at run time: XLA's cost
    # analysis counts their loop body once, so their cost is one iteration's, not one call's.
    per_iteration: frozenset[str] = frozenset()

    def __init__(self, loop: Loop, timings: Timings | None = None, chunk: int = 1):
        del chunk  # iterations per program: the scan plan's alone
        self.loop = loop
        self.timings = timings or Timings()
        self._programs: dict[str, Callable] = {}
        self._functions: dict[str, Callable] = {}  # what each program compiles
        self._compiling = Compiler(self.timings)  # programs still compiling (start)
        self._exports: dict[str, Exported] | None = None  # exported for the executable cache

    def init(self, key: jax.Array) -> LoopState:
        """The initial loop state (itself a compiled program, except in eager mode)."""
        with self.timings.scope("compile:init", always=True):
            self._programs["init"], _ = compile_timed(jax.jit(self.loop.init).lower(key), "init")
        return self.checked(self._call("init", key))

    def checked(self, state: LoopState) -> LoopState:
        """``state``, once its graph state is found to hold exactly the graph's fragments."""
        self.loop.info.graph.check_state(state.fragments)
        return state

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
            exported = self._export(name, fn, args)
            if exported is not None:  # for the executable cache: run what it will keep
                fn, args = exported.function(), exported.args
            donate = (0,) if self.donates(name, args) else ()
            lowered = jax.jit(fn, donate_argnums=donate).lower(*args)
            yield name, lowered, time.perf_counter() - start

    def donates(self, name: str, args: tuple) -> bool:
        """Whether program ``name``, compiled for ``args``, donates its first argument."""
        if name not in self.donating or jax.config.jax_debug_nans:
            return False
        return _nbytes(args[0]) >= DONATE_BYTES

    def start(
        self,
        key: jax.Array | Callable[[], jax.Array],
        extra: Extra | None = None,
        before_init: Callable | None = None,
        cache: Any = None,
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
        (the runner's memory check) and may raise.

        ``key`` may be given as a function that makes it, called only where ``init`` runs: a
        key made outside a program is a program of its own to compile.

        ``cache`` (:class:`jaxrl_fdg.run.executables.ExecutableCache`), if given and the mode
        is :attr:`cacheable`, may hold an earlier run's programs (:meth:`_load`: executables,
        or StableHLO lowered without tracing) and initial state. Otherwise the programs are
        exported as they are traced (:class:`~jaxrl_fdg.policies.exported.Exported`), run as
        exported, and written to it (:meth:`_store`). :attr:`executables` says which."""
        extra = extra or {}
        make_key = key if callable(key) else lambda: key
        if not self.cacheable or jax.config.jax_debug_nans:
            cache = None
        with self.timings.scope("compile", always=True):
            entry = self._load(cache, extra)
            if entry is None:
                self._exports = {} if cache is not None else None
                self._compile_all(make_key(), extra)
        exports, self._exports = self._exports, None
        if before_init is not None:
            before_init(self.compiled_so_far)
        if entry is not None and entry.initial is not None:
            state = entry.initial  # what init computed for this key, in the run that stored it
        else:
            state = self._call("init", make_key())
        if cache is not None and entry is None:
            self._store(cache, exports, state)
        self.executables = cache.outcome if cache is not None else "traced"
        return self.checked(state)

    # -- the executable cache (jaxrl_fdg.run.executables): modes that opt in --------------

    # Whether :meth:`start` may take this mode's programs from an executable cache: the mode
    # names its programs without tracing (_own_names) and keeps what tracing them taught it
    # (_traced_state).
    cacheable: bool = False

    def _load(self, cache: Any, extra: Extra) -> Any:
        """``cache``'s entry with its programs loaded (:meth:`_compile_exported`), or ``None``
        where it has none for these programs."""
        entry = cache.load() if cache is not None else None
        if entry is None or set(entry.programs) != {"init", *self._own_names(), *extra}:
            return None  # none, or keyed alike and made otherwise: trace
        self._restore_traced_state(entry.traced)
        skip = {"init"} if entry.initial is not None else set()
        self._compile_exported(entry.programs, entry.compiled, skip)
        return entry

    def _store(self, cache: Any, exports: dict[str, Exported] | None, state: LoopState) -> None:
        """Write ``cache``'s entry: the programs exported as they were traced (``None`` where
        one could not be), their executables and the initial ``state`` where it is small."""
        if exports is None:
            cache.outcome = "not stored"
            return
        initial = state if _nbytes(state) <= INITIAL_STATE_BYTES else None
        compiled = self._serialized()
        for name in compiled:  # read now, so that loading the executable need not read it
            exports[name].calls_lapack()
        cache.store(exports, self._traced_state(), compiled, initial)

    def _own_names(self) -> tuple[str, ...]:
        """The names of this mode's own programs, known without tracing."""
        raise NotImplementedError

    def _traced_state(self) -> Any:
        """What tracing this mode's programs set on the host side, to keep with them."""
        return None

    def _restore_traced_state(self, saved: Any) -> None:
        """Set what :meth:`_traced_state` returned, in place of tracing."""

    def _compile_exported(
        self,
        programs: dict[str, Exported],
        executables: dict[str, Serialized],
        skip: set[str] = frozenset(),
    ) -> None:
        """Load the executables the run that stored them compiled (``executables``), on the
        worker threads, while this thread readies the CPU's LAPACK kernels they may call.
        Lower each other program from its StableHLO (nothing of the code that made it is
        traced) and compile it there too, where JAX's persistent cache serves the executable
        the run that exported it compiled. An executable that does not load is compiled from
        its StableHLO instead. The programs ``skip`` names are not needed (``init``, where the
        entry holds the state it returns)."""
        programs = {name: p for name, p in programs.items() if name not in skip}
        loaded = {name for name in programs if name in executables}
        setup = kernels_setup(programs[name] for name in loaded)
        if setup is None:
            loaded = set()  # this JAX readies them otherwise: lowering the programs does it
        self._compiling = compiler = Compiler(self.timings)
        try:
            for name in loaded:
                compiler.submit_load(name, executables[name])
            if loaded:
                setup()
            for name, program in programs.items():
                if name not in loaded:
                    compiler.submit(name, *self._lower_exported(name, program))
        finally:
            compiler.close()
        # The caller's programs (``extra``) keep compiling behind the first chunks.
        for name in [name for name in ("init", *self._own_names()) if name in programs]:
            try:
                self._programs[name] = compiler.result(name)
            except Exception:
                if name not in loaded:
                    raise
                lowered, seconds = self._lower_exported(name, programs[name])
                self._programs[name], more = compile_timed(lowered, name)
                self.timings.record(f"compile:{name}", seconds + more, within="compile")

    def _lower_exported(self, name: str, program: Exported) -> tuple[Any, float]:
        """``program`` lowered from its StableHLO, and the seconds that took."""
        start = time.perf_counter()
        args = program.args
        donate = (0,) if self.donates(name, args) else ()
        lowered = jax.jit(program.function(), donate_argnums=donate).lower(*args)
        return lowered, time.perf_counter() - start

    def _serialized(self) -> dict[str, Serialized]:
        """The compiled programs as bytes, for the executable cache: those done compiling
        whose backend serializes them and that XLA compiled in this process
        (:func:`~jaxrl_fdg.policies.compiling.compiled_here`), less those compiled with options
        of their own (:data:`RUN_ONCE`): ``jax.experimental.serialize_executable`` loads an
        executable without its compile options, and XLA:CPU then misses the kernels of one
        compiled with its older emitters ("Function ... not found" when it runs)."""
        done = {k: v for k, v in self.compiled_so_far.items() if k not in RUN_ONCE}
        kept = {name: serialize(c) for name, c in done.items() if compiled_here(c)}
        return {name: saved for name, saved in kept.items() if saved is not None}

    def _export(self, name: str, fn: Callable, args: tuple) -> Exported | None:
        """``fn`` exported for ``args`` where the executable cache is being filled; ``None``
        otherwise, or where a program cannot be exported (a host callback, a custom call
        ``jax.export`` does not allow): the run then compiles as usual and stores nothing."""
        if self._exports is None:
            return None
        try:
            exported = self._exports[name] = Exported.of(fn, args)
        except Exception:  # jax.export's refusals are several exception types
            self._exports = None
            return None
        return exported

    def _compile_all(self, key: jax.Array, extra: Extra) -> None:
        """Trace, lower and compile every program, as :meth:`start` says."""
        self._compiling = compiler = Compiler(self.timings)
        try:  # a program that fails to lower still lets the pool's threads end
            start = time.perf_counter()
            init = self._export("init", self.loop.init, (key,))
            if init is not None:
                out_info = init.out_info
                lower_init = lambda: jax.jit(init.function()).lower(*init.args)  # noqa: E731
            else:
                traced = jax.jit(self.loop.init).trace(key)
                out_info, lower_init = traced.out_info, traced.lower
            tracing = time.perf_counter() - start
            own = self._signatures(out_info)
            for name, lowered, seconds in self._lowered(own):
                compiler.submit(name, lowered, seconds)
            start = time.perf_counter()
            compiler.submit("init", lower_init(), tracing + time.perf_counter() - start)
            others = {name: (fn, args_for(out_info)) for name, (fn, args_for) in extra.items()}
            for name, lowered, seconds in self._lowered(others):
                compiler.submit(name, lowered, seconds)
        finally:
            compiler.close()
        for name in ["init", *own]:
            if name in compiler:
                self._programs[name] = compiler.result(name)

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
            except InternalFloatingPointError:  # JAX's own check found a NaN
                if name not in self._functions:
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

"""The runner: validate, build the graph, compile the plan ahead of time, run it, record it.

Host-side work happens at host boundaries only (every ``log_every`` iterations): reading metrics
back, writing ``metrics.jsonl``, updating progress. Between boundaries the plan runs untouched.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_fdg import distributed
from jaxrl_fdg.actor_learner import ActorLearnerPlan
from jaxrl_fdg.algorithm import AlgorithmSpec
from jaxrl_fdg.checkpoint import FOLDER as CHECKPOINTS
from jaxrl_fdg.checkpoint import Checkpointer, NonFiniteError, check_metrics, find_non_finite
from jaxrl_fdg.config import (
    NOT_COMPUTED,
    Resolved,
    TrainConfig,
    from_mapping,
    lanes,
    load,
    make_hparams,
    resolve,
    to_mapping,
)
from jaxrl_fdg.env_fragment import env_fragment
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.evaluation import EVAL_OUTPUTS, evaluation_key, evaluator
from jaxrl_fdg.fragment import EmptyState, call, published
from jaxrl_fdg.fusion import make_plan
from jaxrl_fdg.loop import LaggedLoop, Loop, LoopState, iterations_done
from jaxrl_fdg.placement import ShardedLoop, first_shard
from jaxrl_fdg.profiling import Timings, chart, scope_overhead, summarize, summary_table, trace
from jaxrl_fdg.profiling.timers import user_scope_names
from jaxrl_fdg.progress import ProgressDisplay
from jaxrl_fdg.run_folder import RunFolder
from jaxrl_fdg.seeds import SeedLoop, seed_keys

_EPISODE_KEYS = ("episodes", "episode_return_sum", "episode_length_sum")
TRACE_ITERATIONS = 2  # iterations inside the profiler window of ``--profile trace``


class RunResult(NamedTuple):
    """What :func:`train` returns.

    Attributes:
      state: the final loop state (graph state, key, iteration).
      metrics: per-iteration metrics, ``{name: array [num_iterations]}``.
      summary: what ``summary.json`` holds.
      run_dir: the run folder, or ``None`` when ``config.out`` is ``None``.
    """

    state: LoopState
    metrics: dict[str, np.ndarray]
    summary: dict[str, Any]
    run_dir: Any


def build_loop(resolved: Resolved) -> Loop | SeedLoop | ShardedLoop:
    """The loop ``resolved`` describes: learning one iteration behind with ``policy_lag = 1``,
    vmapped over seeds with ``num_seeds > 1``, split into shards with a data-parallel
    placement."""
    config = resolved.config
    if config.placement == "host_env":  # host simulators in two halves, double-buffered
        from jaxrl_fdg.host_pipeline import HalvedLoop

        algorithm = resolved.spec.build(resolved.context)
        return HalvedLoop.for_simulator(
            resolved.env, config.num_envs, algorithm, config.rollout_len
        )
    if resolved.env_params is None:  # a host simulator (gym/<id>)
        from jaxrl_fdg.envs.host import host_env_fragment

        env = host_env_fragment(resolved.env, config.num_envs)
    else:  # per shard, with a data-parallel placement
        env = env_fragment(resolved.env, resolved.env_params, resolved.context.num_envs)

    def build(swept: Mapping[str, Any]) -> Loop | LaggedLoop:
        context = resolved.context
        if swept:  # a lane of a sweep: the hyperparameters with its values (traced scalars)
            hparams = copy.copy(context.hparams)
            for name, value in swept.items():  # each value was checked in resolve
                object.__setattr__(hparams, name, value)
            context = dataclasses.replace(context, hparams=hparams)
        loop = Loop(env, resolved.spec.build(context), config.rollout_len)
        return LaggedLoop(loop) if config.policy_lag else loop

    loop = build({})
    if config.placement == "data_parallel":
        return ShardedLoop(loop, config.devices, config.dp_backend)
    runs = lanes(config, resolved.spec)
    if len(runs) == 1:
        return loop
    sweep = {name: [lane.point[name] for lane in runs] for name in resolved.sweep}
    return SeedLoop(loop, len(runs), sweep, build)


def initial_key(config: TrainConfig, spec: AlgorithmSpec | None = None) -> jax.Array:
    """The key :func:`train` starts from: one per run (seed × sweep point) if there are
    several."""
    runs = lanes(config, spec)
    if len(runs) > 1:
        return seed_keys([lane.seed for lane in runs])
    return jax.random.key(config.seed)


def make_train(
    config: TrainConfig, spec: AlgorithmSpec | None = None
) -> Callable[[jax.Array], tuple[LoopState, dict[str, jax.Array]]]:
    """The whole run as one pure function ``train(key) -> (final state, metrics [iterations])``.

    Jit it, or ``jax.vmap`` it over keys to train several seeds in one program. With
    ``key = initial_key(config)`` it computes what :func:`train` computes.
    """
    loop = build_loop(resolve(config, spec))

    def train_fn(key: jax.Array):
        state = loop.init(key)
        return jax.lax.scan(loop.iteration, state, length=config.num_iterations)

    return train_fn


def train(
    config: TrainConfig,
    spec: AlgorithmSpec | None = None,
    *,
    print_summary: bool = False,
    resume: str | Path | None = None,
) -> RunResult:
    """Train as ``config`` says; write the run folder; return the final state and metrics.

    With ``resume`` (a run folder written with this ``config``), the run continues from that
    folder's latest checkpoint and computes what the uninterrupted run would have; rows logged
    after the checkpoint are replaced. ``RunResult.metrics`` then covers the resumed part only.

    Ctrl-C or SIGTERM stops the run at the next host boundary with a checkpoint (when there is a
    run folder); a second Ctrl-C stops at once.
    """
    if config.num_processes > 1:  # connect the processes before JAX starts its backends
        if resume is not None:
            raise ConfigError("runs across processes write no checkpoints to resume from")
        distributed.initialize_for(config)
    if config.compile_cache:  # before anything compiles; a cache configured otherwise is kept
        from jaxrl_fdg import compile_cache

        compile_cache.enable()
    resolved = resolve(config, spec)  # every ConfigError is raised here, before compiling
    # JAX's NaN checks hook its jit dispatch; the plans then call programs through it.
    debug_nans = jax.config.jax_debug_nans
    jax.config.update("jax_debug_nans", config.debug_nans)
    try:
        return _train(resolved, print_summary, resume)
    finally:
        jax.config.update("jax_debug_nans", debug_nans)


def _train(resolved: Resolved, print_summary: bool, resume: str | Path | None) -> RunResult:
    config = resolved.config
    if not distributed.is_primary():  # process 0 alone shows progress and writes the run folder
        config = config.replace(out=None, progress=False)
    loop = build_loop(resolved)
    host_env = loop.env_frag.placement == "host"
    if config.eval_every:  # before anything compiles
        _check_evaluation(resolved, loop)
    if host_env and (config.checkpoint_every or resume is not None):
        raise ConfigError(
            f"{config.env} is a host simulator: its state lives outside JAX and cannot be "
            "checkpointed (use a JAX environment, or checkpoint_every = 0)"
        )
    timings = Timings(config.profile)
    if config.placement == "actor_learner":
        plan = ActorLearnerPlan(loop, timings)
    elif config.placement == "host_env":  # fusion step: the double-buffered plan
        from jaxrl_fdg import host_pipeline

        plan = host_pipeline.make_plan(config.fusion, loop, timings, chunk=config.boundary_every)
    else:
        plan = make_plan(config.fusion, loop, timings, chunk=config.boundary_every)
    if resume is not None:
        folder = RunFolder.open(resume)
        _check_same_run(folder, resolved)
    elif config.out is not None:
        folder = RunFolder.create(config)
        folder.write_config(to_mapping(resolved))
    else:
        folder = None
    seed_folders = _seed_folders(folder, resolved, resume is not None)
    checkpointer = None
    if folder is not None and not host_env and config.num_processes == 1:
        checkpointer = Checkpointer(folder.path / CHECKPOINTS, config.keep)

    with _sweep_errors(resolved):
        state = plan.init(initial_key(config, resolved.spec))
    rows: list[dict[str, Any]] = []
    if resume is not None:
        state = checkpointer.restore(state)
        rows = folder.truncate_metrics(iterations_done(state))
        for seed_folder in seed_folders:
            seed_folder.truncate_metrics(iterations_done(state))
    with _sweep_errors(resolved):
        plan.compile(state)
    evaluate = _evaluation_program(resolved, loop, state, timings) if config.eval_every else None
    label = f"{resolved.spec.name} on {config.env} [{config.fusion}]"
    run = _Run(config, label, plan, folder, checkpointer, rows, evaluate, seed_folders)
    try:
        with _StopOnSignal(run):
            state = run.execute(state)
    except NonFiniteError:
        run.status = "non-finite"
        raise
    finally:
        summary = run.finish(loop)
        for seed_folder in seed_folders:
            seed_folder.close()
        if checkpointer is not None:
            checkpointer.close()
        if host_env:
            from jaxrl_fdg.envs.host import close
            from jaxrl_fdg.host_pipeline import simulator_handles

            for handle in simulator_handles(loop, state):  # both halves' with host_env
                close(handle)
    if print_summary:
        print(format_summary(summary))
    return RunResult(state, _concat(run.history), summary, folder.path if folder else None)


@contextlib.contextmanager
def _sweep_errors(resolved: Resolved):
    """A swept hyperparameter the algorithm uses to decide its program's structure (a Python
    ``if`` or a size) fails while tracing, before anything compiles: say which and why."""
    try:
        yield
    except (
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerIntegerConversionError,
        jax.errors.TracerArrayConversionError,
    ) as e:
        if not resolved.sweep:
            raise
        first = str(e).strip().splitlines()[0]
        raise ConfigError(
            f"{resolved.spec.name} cannot sweep {', '.join(resolved.sweep)} in one program: it "
            f"decides the program's structure from a swept value ({first}); run one "
            "configuration per value instead"
        ) from None


def _evaluation_program(
    resolved: Resolved, loop: Loop, state: LoopState, timings: Timings
) -> Callable[[LoopState, int], Any]:
    """``(state, iteration) -> evaluation metrics`` (on the device): the evaluation fragment on the
    learner's current ``params``, compiled ahead of time like the plan's programs."""
    config = resolved.config
    _check_evaluation(resolved, loop)
    frag = evaluator(resolved.env, resolved.env_params, loop.policy, config.eval_episodes)

    def run(states: dict, key: jax.Array) -> dict[str, jax.Array]:
        if isinstance(loop, ShardedLoop):  # every shard holds the same learner
            states = first_shard(states)
        params = published(loop.learner, states[loop.learner.name])["params"]
        return call(frag, EmptyState(), {"params": params}, key)[1]

    runs = lanes(config, resolved.spec)

    def keys(iteration: int) -> jax.Array:
        if len(runs) == 1:
            return evaluation_key(config.seed, iteration)
        seeds = np.asarray([lane.seed for lane in runs])
        return jax.vmap(lambda seed: evaluation_key(seed, iteration))(seeds)

    if len(runs) > 1:  # each run's evaluation is the one its single run makes
        run = jax.vmap(run)
    with timings.scope("compile:evaluate", always=True):
        program = jax.jit(run).lower(state.fragments, keys(0)).compile()

    def evaluate(state: LoopState, iteration: int):
        with timings.scope("evaluate"):
            return program(state.fragments, keys(iteration))

    return evaluate


def _check_evaluation(resolved: Resolved, loop: Loop | SeedLoop) -> None:
    if loop.policy is None:
        raise ConfigError(f"algorithm {resolved.spec.name!r} defines no policy to evaluate")
    if resolved.env_params is None:
        raise ConfigError(
            f"evaluation needs a JAX environment; {resolved.config.env} is a host simulator"
        )


def _seed_folders(folder: RunFolder | None, resolved: Resolved, resume: bool) -> list[RunFolder]:
    """With several runs (seeds, sweep points), a run folder of its own for each inside the
    run's folder, ``seed-<seed>/`` or ``<name>=<value>-seed-<seed>/``: its config (that run
    alone) and its metrics, which ``jaxrl-fdg plot`` draws as replicates, grouped by what
    differs."""
    config = resolved.config
    runs = lanes(config, resolved.spec)
    if folder is None or len(runs) == 1:
        return []
    folders = []
    for lane in runs:
        path = folder.path / lane.name
        if resume:
            folders.append(RunFolder.open(path))
            continue
        path.mkdir()
        hparams = {**config.hparams, **lane.point}
        single = resolved._replace(  # that run alone; nothing to check or build again
            config=config.replace(seed=lane.seed, num_seeds=1, hparams=hparams),
            hparams=make_hparams(resolved.spec, hparams),
            sweep={},
        )
        folders.append(RunFolder(path))
        folders[-1].write_config(to_mapping(single))
    return folders


def evaluate(
    run_dir: str | Path,
    episodes: int | None = None,
    iteration: int | None = None,
    spec: AlgorithmSpec | None = None,
) -> dict[str, Any]:
    """Evaluate a run's checkpoint (the latest, or the one at ``iteration``): the deterministic
    policy on ``episodes`` fresh environments (default: the run's ``eval_episodes``), with the
    same keys as the run's own evaluation at that iteration. Writes ``evaluation.json`` into the
    run folder and returns what it holds."""
    folder = RunFolder.open(run_dir)
    source = str(folder.path / "config.toml")
    config = from_mapping(load(source), source=source).replace(out=None, progress=False)
    if episodes is not None:
        config = config.replace(eval_episodes=episodes)
    resolved = resolve(config, spec)
    loop = build_loop(resolved)
    checkpoints = folder.path / CHECKPOINTS
    if not checkpoints.is_dir():
        raise ConfigError(f"run {str(folder.path)!r} has no checkpoints to evaluate")
    checkpointer = Checkpointer(checkpoints)
    try:
        state = checkpointer.restore(jax.jit(loop.init)(initial_key(config, spec)), iteration)
    finally:
        checkpointer.close()
    program = _evaluation_program(resolved, loop, state, Timings("off"))
    done = iterations_done(state)
    values = jax.device_get(program(state, done))
    result = {
        "run": str(folder.path),
        "iteration": done,
        "env_steps": done * config.steps_per_iteration,
        "episodes": config.eval_episodes,
        **{k: float(np.mean(v)) for k, v in values.items()},  # the mean over seeds, if several
    }
    if len(runs := lanes(config, resolved.spec)) > 1:
        result["runs"] = [lane.name for lane in runs]
        result["per_run"] = {k: np.asarray(v).tolist() for k, v in values.items()}
    folder.write_json("evaluation.json", result)
    return result


def _check_same_run(folder: RunFolder, resolved: Resolved) -> None:
    """A run resumes only with the configuration it was started with."""
    saved = load(folder.path / "config.toml")
    current = to_mapping(resolved)
    keys = (set(saved) | set(current)) - set(NOT_COMPUTED)
    changed = sorted(k for k in keys if saved.get(k) != current.get(k))
    if changed:
        details = ", ".join(f"{k}: {saved.get(k)!r} -> {current.get(k)!r}" for k in changed)
        raise ConfigError(
            f"cannot resume {str(folder.path)!r} with a different configuration ({details})"
        )


class _Run:
    """The loop between host boundaries and its bookkeeping: metrics rows, progress, profiling,
    checkpoints, non-finite checks and stop requests."""

    def __init__(
        self,
        config: TrainConfig,
        label: str,
        plan,
        folder: RunFolder | None,
        checkpointer: Checkpointer | None = None,
        rows: list[dict[str, Any]] | None = None,
        evaluate: Callable[[LoopState, int], Any] | None = None,
        seed_folders: list[RunFolder] | None = None,
    ):
        self.config, self.plan, self.folder = config, plan, folder
        self.checkpointer = checkpointer
        self.evaluate = evaluate
        self.seed_folders = seed_folders or []
        self.timings: Timings = plan.timings
        total = config.num_iterations * config.steps_per_iteration
        self.display = ProgressDisplay(total, label, enabled=config.progress)
        self.history: list[dict[str, np.ndarray]] = []
        self.rows: list[dict[str, Any]] = list(rows or [])
        self.iterations = self.rows[-1]["iteration"] if self.rows else 0
        self.events: list[dict[str, Any]] = []
        self.session = 0.0  # the profiler's own start, stop and export: excluded from run time
        self.status = "interrupted"
        self.stop_requested = False
        self.start = self.last = time.perf_counter()
        if self.iterations:
            self.display.update(self.rows[-1])

    def execute(self, state: LoopState) -> LoopState:
        config, plan = self.config, self.plan
        start = iterations_done(state)
        self.iterations = start
        chunks = _chunks(config.num_iterations - start, config.boundary_every)
        traced = None
        if config.profile == "trace" and chunks:
            chunks, traced = _split_for_trace(chunks, TRACE_ITERATIONS)
        every = -(-config.checkpoint_every // config.steps_per_iteration)  # iterations, rounded up
        eval_every = -(-config.eval_every // config.steps_per_iteration)
        saved = start
        # One chunk stays queued behind the one being read, so the device never idles while the
        # host reads metrics and logs: chunk k+1 is dispatched before chunk k is collected.
        in_flight: collections.deque = collections.deque()
        for i, n in enumerate(chunks):
            if self.stop_requested:
                break
            if i == traced:  # the profiler window holds this chunk alone
                while in_flight:
                    self.record(in_flight.popleft())
                state = self.traced(state, n)
                continue
            state, pending = plan.advance(state, n)
            end = start + sum(chunks[: i + 1])
            evaluation = None
            if eval_every and (end // eval_every > (end - n) // eval_every or i == len(chunks) - 1):
                evaluation = self.evaluate(state, end)  # dispatched behind the chunk, not awaited
            in_flight.append((pending, evaluation))
            if len(in_flight) > 1:
                self.record(in_flight.popleft())
            if every and end // every > saved // every:
                while in_flight:  # metrics up to the saved state are checked before it is saved
                    self.record(in_flight.popleft())
                saved = self.checkpoint(state)
        while in_flight:
            self.record(in_flight.popleft())
        with self.timings.scope("collect"):
            self.timings.wait(state)
        if self.checkpointer is not None:  # the final state (or where a stop request left it)
            self.checkpoint(state)
        if not self.stop_requested:
            self.status = "completed"
        return state

    def checkpoint(self, state: LoopState) -> int:
        """Save ``state`` unless a fragment's state holds NaN or inf (then raise, keeping the last
        good checkpoint). Waits for the device; charged to the ``checkpoint`` scope."""
        with self.timings.scope("checkpoint"):
            bad = find_non_finite(state)
            if bad is not None:
                raise NonFiniteError(
                    f"non-finite values in {bad} at iteration {iterations_done(state)}; "
                    "the last checkpoint is intact"
                )
            return self.checkpointer.save(state) if self.checkpointer else iterations_done(state)

    def traced(self, state: LoopState, n: int) -> LoopState:
        """Advance ``n`` iterations inside a profiler window; its own cost goes to ``session``."""
        opened = time.perf_counter()
        with trace.capture() as self.events:
            window = time.perf_counter()
            self.timings.annotating = True
            state, pending = self.plan.advance(state, n)
            self.record((pending, None))
            self.timings.annotating = False
            window = time.perf_counter() - window
        self.session += time.perf_counter() - opened - window
        return state

    def record(self, pending: tuple[Any, Any]) -> None:
        """Read one chunk's metrics (and evaluation, if any) back, waiting for them; log them."""
        pending, evaluation = pending
        with self.timings.scope("collect"):
            metrics = self.plan.collect(pending)
            if evaluation is not None:
                evaluation = self.timings.device_get(evaluation)
        with self.timings.scope("log"):
            for key, values in metrics.items():
                source = "env" if key in _EPISODE_KEYS else "learner"
                check_metrics({key: values}, self.iterations, source)
            self.history.append(metrics)
            now = time.perf_counter()
            self.iterations += _length(metrics)
            row = _row(metrics, self.iterations, self.config, now - self.start, now - self.last)
            if self.evaluate is not None:  # every row has the columns, for metrics.csv
                row.update({k: None for k in EVAL_OUTPUTS})
                row.update({k: float(np.mean(v)) for k, v in (evaluation or {}).items()})
            for i, seed_folder in enumerate(self.seed_folders):  # each seed's own row
                seed_row = _row(
                    {k: v[:, i] for k, v in metrics.items()},
                    self.iterations,
                    self.config,
                    now - self.start,
                    now - self.last,
                )
                if self.evaluate is not None:
                    seed_row.update({k: None for k in EVAL_OUTPUTS})
                    seed_row.update({k: float(v[i]) for k, v in (evaluation or {}).items()})
                seed_folder.append_metrics(seed_row)
            self.last = now
            self.rows.append(row)
            if self.folder is not None:
                self.folder.append_metrics(row)
            self.display.update(row)

    def finish(self, loop: Loop) -> dict[str, Any]:
        """Close progress, attribute any trace, summarise, write the run folder's files."""
        run_seconds = time.perf_counter() - self.start - self.session
        self.display.close()
        attribution, events = None, self.events
        if events:
            scopes = {f.name for f in loop.graph.fragments} | user_scope_names()
            programs = [c.as_text() for c in self.plan.compiled.values()]
            attribution, events = trace.attribute(events, programs, scopes)
        overhead = scope_overhead(self.timings.mode) if self.timings.enabled else 0.0
        timing = summarize(self.timings, run_seconds, overhead=overhead, attribution=attribution)
        timing["profiler_session_s"] = self.session
        summary = _summary(self.config, self.status, self.rows, timing)
        if self.folder is not None:
            self.folder.write_summary(summary)
            _write_profile(self.folder, self.config, self.timings, timing, events)
            self.folder.close()
        return summary


class _StopOnSignal:
    """While active, the first SIGINT (Ctrl-C) or SIGTERM asks the run to stop at the next host
    boundary, with a checkpoint; from then on Ctrl-C interrupts at once (Python's default)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, run: _Run):
        self.run = run
        self.previous: dict[int, Any] = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        del frame
        self.run.stop_requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        name = signal.Signals(signum).name
        print(
            f"\njaxrl-fdg: {name}: stopping at the next host boundary with a checkpoint "
            "(Ctrl-C again to stop now)",
            file=sys.stderr,
            flush=True,
        )

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        return False


def _write_profile(folder: RunFolder, config: TrainConfig, timings, timing, events) -> None:
    if not timings.enabled:
        return
    folder.write_json("profile.json", {**timing, "scopes": timings.as_dict()})
    if events:
        trace.write_trace(folder.path / "trace.json.gz", events)
    if config.profile in ("sync", "trace"):
        chart.stacked_bars(timing, folder.path / "profile.png", title=folder.path.name)


def _split_for_trace(chunks: list[int], size: int) -> tuple[list[int], int]:
    """Carve a chunk of ``size`` iterations out of the second chunk (the first, if alone), so the
    profiler window is short and follows a warm-up. Boundaries never change results."""
    i = 1 if len(chunks) > 1 else 0
    n = min(size, chunks[i])
    pieces = [n] + ([chunks[i] - n] if chunks[i] > n else [])
    return chunks[:i] + pieces + chunks[i + 1 :], i


def _chunks(total: int, size: int) -> list[int]:
    return [min(size, total - done) for done in range(0, total, size)]


def _length(metrics: dict[str, np.ndarray]) -> int:
    return len(next(iter(metrics.values())))


def _row(metrics, iterations, config, wall, window_wall) -> dict[str, Any]:
    n = _length(metrics)
    row: dict[str, Any] = {
        "iteration": iterations,
        "step": iterations * config.steps_per_iteration,
        "wall_s": round(wall, 4),
        "steps_per_s": n * config.steps_per_iteration / max(window_wall, 1e-9),
    }
    row.update(_episode_stats(metrics))
    for key, values in metrics.items():
        if key not in _EPISODE_KEYS:
            row[key] = float(np.mean(values))
    return row


def _episode_stats(metrics: dict[str, np.ndarray]) -> dict[str, Any]:
    episodes = float(np.sum(metrics.get("episodes", 0.0)))
    stats: dict[str, Any] = {
        "episodes": int(episodes),
        "episode_return": None,
        "episode_length": None,
    }
    if episodes > 0 and "episode_return_sum" in metrics:
        stats["episode_return"] = float(np.sum(metrics["episode_return_sum"]) / episodes)
        stats["episode_length"] = float(np.sum(metrics["episode_length_sum"]) / episodes)
    return stats


def _concat(history: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if not history:
        return {}
    return {k: np.concatenate([h[k] for h in history]) for k in history[0]}


def _summary(config, status, rows, timing) -> dict[str, Any]:
    iterations = rows[-1]["iteration"] if rows else 0
    steps = iterations * config.steps_per_iteration
    final = next(
        (r["episode_return"] for r in reversed(rows) if r["episode_return"] is not None), None
    )
    return {
        "status": status,
        "algo": config.algo,
        "env": config.env,
        "fusion": config.fusion,
        "seed": config.seed,
        "iterations": iterations,
        "env_steps": steps,
        "final_return": final,
        "steps_per_s": steps / timing["run_s"] if timing["run_s"] > 0 else None,
        "compile_s": timing["compile_s"],
        "run_s": timing["run_s"],
        "timing": timing,
    }


def format_summary(summary: dict[str, Any]) -> str:
    final = summary["final_return"]
    lines = [
        f"{summary['status']}: {summary['env_steps']:,} env steps in {summary['run_s']:.2f} s "
        f"(+{summary['compile_s']:.2f} s compile)",
        f"final return {'—' if final is None else f'{final:.1f}'}   "
        f"{(summary['steps_per_s'] or 0):,.0f} env-steps/s",
        summary_table(summary["timing"]).rstrip(),
    ]
    return "\n".join(lines)

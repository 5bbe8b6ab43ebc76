"""The runner: validate, build the graph, compile the plan ahead of time, run it, record it.

Host-side work happens at host boundaries only (every ``log_every`` iterations): reading metrics
back, writing ``metrics.jsonl``, updating progress. Between boundaries the plan runs untouched.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_fdg.algorithm import AlgorithmSpec
from jaxrl_fdg.config import Resolved, TrainConfig, resolve, to_mapping
from jaxrl_fdg.env_fragment import env_fragment
from jaxrl_fdg.fusion import make_plan
from jaxrl_fdg.loop import Loop, LoopState
from jaxrl_fdg.profiling import Timings, chart, scope_overhead, summarize, summary_table, trace
from jaxrl_fdg.profiling.timers import user_scope_names
from jaxrl_fdg.progress import ProgressDisplay
from jaxrl_fdg.run_folder import RunFolder

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


def build_loop(resolved: Resolved) -> Loop:
    config = resolved.config
    if resolved.env_params is None:  # a host simulator (gym/<id>)
        from jaxrl_fdg.envs.host import host_env_fragment

        env = host_env_fragment(resolved.env, config.num_envs)
    else:
        env = env_fragment(resolved.env, resolved.env_params, config.num_envs)
    return Loop(env, resolved.spec.build(resolved.context), config.rollout_len)


def make_train(
    config: TrainConfig, spec: AlgorithmSpec | None = None
) -> Callable[[jax.Array], tuple[LoopState, dict[str, jax.Array]]]:
    """The whole run as one pure function ``train(key) -> (final state, metrics [iterations])``.

    Jit it, or ``jax.vmap`` it over keys to train several seeds in one program. With
    ``key = jax.random.key(config.seed)`` it computes what :func:`train` computes.
    """
    loop = build_loop(resolve(config, spec))

    def train_fn(key: jax.Array):
        state = loop.init(key)
        return jax.lax.scan(loop.iteration, state, length=config.num_iterations)

    return train_fn


def train(
    config: TrainConfig, spec: AlgorithmSpec | None = None, *, print_summary: bool = False
) -> RunResult:
    """Train as ``config`` says; write the run folder; return the final state and metrics."""
    resolved = resolve(config, spec)  # every ConfigError is raised here, before compiling
    loop = build_loop(resolved)
    timings = Timings(config.profile)
    plan = make_plan(config.fusion, loop, timings, chunk=config.boundary_every)
    folder = RunFolder.create(config) if config.out is not None else None
    if folder is not None:
        folder.write_config(to_mapping(resolved))

    state = plan.init(jax.random.key(config.seed))
    plan.compile(state)
    run = _Run(config, f"{resolved.spec.name} on {config.env} [{config.fusion}]", plan, folder)
    try:
        state = run.execute(state)
    finally:
        summary = run.finish(loop)
        if loop.env_frag.placement == "host":
            from jaxrl_fdg.envs.host import close

            close(state.fragments[loop.env_frag.name].env)
    if print_summary:
        print(format_summary(summary))
    return RunResult(state, _concat(run.history), summary, folder.path if folder else None)


class _Run:
    """The loop between host boundaries and its bookkeeping: metrics rows, progress, profiling."""

    def __init__(self, config: TrainConfig, label: str, plan, folder: RunFolder | None):
        self.config, self.plan, self.folder = config, plan, folder
        self.timings: Timings = plan.timings
        total = config.num_iterations * config.steps_per_iteration
        self.display = ProgressDisplay(total, label, enabled=config.progress)
        self.history: list[dict[str, np.ndarray]] = []
        self.rows: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.session = 0.0  # the profiler's own start, stop and export: excluded from run time
        self.status = "interrupted"
        self.start = self.last = time.perf_counter()

    def execute(self, state: LoopState) -> LoopState:
        config, plan = self.config, self.plan
        chunks = _chunks(config.num_iterations, config.boundary_every)
        traced = None
        if config.profile == "trace":
            chunks, traced = _split_for_trace(chunks, TRACE_ITERATIONS)
        # One chunk stays queued behind the one being read, so the device never idles while the
        # host reads metrics and logs: chunk k+1 is dispatched before chunk k is collected.
        in_flight: collections.deque = collections.deque()
        for i, n in enumerate(chunks):
            if i == traced:  # the profiler window holds this chunk alone
                while in_flight:
                    self.record(in_flight.popleft())
                state = self.traced(state, n)
                continue
            state, pending = plan.advance(state, n)
            in_flight.append(pending)
            if len(in_flight) > 1:
                self.record(in_flight.popleft())
        while in_flight:
            self.record(in_flight.popleft())
        with self.timings.scope("collect"):
            self.timings.wait(state)
        self.status = "completed"
        return state

    def traced(self, state: LoopState, n: int) -> LoopState:
        """Advance ``n`` iterations inside a profiler window; its own cost goes to ``session``."""
        opened = time.perf_counter()
        with trace.capture() as self.events:
            window = time.perf_counter()
            self.timings.annotating = True
            state, pending = self.plan.advance(state, n)
            self.record(pending)
            self.timings.annotating = False
            window = time.perf_counter() - window
        self.session += time.perf_counter() - opened - window
        return state

    def record(self, pending: Any) -> None:
        """Read one chunk's metrics back (waiting for it), then log them."""
        with self.timings.scope("collect"):
            metrics = self.plan.collect(pending)
        with self.timings.scope("log"):
            self.history.append(metrics)
            now = time.perf_counter()
            iterations = sum(map(_length, self.history))
            row = _row(metrics, iterations, self.config, now - self.start, now - self.last)
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

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
    overhead = scope_overhead(config.profile) if timings.enabled else 0.0
    plan = make_plan(config.fusion, loop, timings, chunk=config.boundary_every)
    folder = RunFolder.create(config) if config.out is not None else None
    if folder is not None:
        folder.write_config(to_mapping(resolved))

    state = plan.init(jax.random.key(config.seed))
    plan.compile(state)

    label = f"{resolved.spec.name} on {config.env} [{config.fusion}]"
    total = config.num_iterations * config.steps_per_iteration
    display = ProgressDisplay(total, label, enabled=config.progress)
    history: list[dict[str, np.ndarray]] = []
    rows: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    session = 0.0  # the profiler's own start, stop and export: excluded from run time
    status = "interrupted"
    start = last = time.perf_counter()

    def record(pending: Any) -> None:
        """Read one chunk's metrics back (waiting for it), then log them."""
        nonlocal last
        with timings.scope("collect"):
            metrics = plan.collect(pending)
        with timings.scope("log"):
            history.append(metrics)
            now = time.perf_counter()
            row = _row(metrics, sum(map(_length, history)), config, now - start, now - last)
            last = now
            rows.append(row)
            if folder is not None:
                folder.append_metrics(row)
            display.update(row)

    chunks = _chunks(config.num_iterations, config.boundary_every)
    traced = None
    if config.profile == "trace":
        chunks, traced = _split_for_trace(chunks, TRACE_ITERATIONS)
    try:
        # One chunk stays queued behind the one being read, so the device never idles while the
        # host reads metrics and logs: chunk k+1 is dispatched before chunk k is collected.
        in_flight: collections.deque = collections.deque()
        for i, n in enumerate(chunks):
            if i == traced:  # the profiler window holds this chunk alone
                while in_flight:
                    record(in_flight.popleft())
                opened = time.perf_counter()
                with trace.capture() as events:
                    window = time.perf_counter()
                    timings.annotating = True
                    state, pending = plan.advance(state, n)
                    record(pending)
                    timings.annotating = False
                    window = time.perf_counter() - window
                session += time.perf_counter() - opened - window
                continue
            state, pending = plan.advance(state, n)
            in_flight.append(pending)
            if len(in_flight) > 1:
                record(in_flight.popleft())
        while in_flight:
            record(in_flight.popleft())
        with timings.scope("collect"):
            timings.wait(state)
        status = "completed"
    finally:
        run_seconds = time.perf_counter() - start - session
        display.close()
        metrics = _concat(history)
        attribution = None
        if events:
            scopes = {f.name for f in loop.graph.fragments} | user_scope_names()
            programs = [c.as_text() for c in plan.compiled.values()]
            attribution, events = trace.attribute(events, programs, scopes)
        timing = summarize(timings, run_seconds, overhead=overhead, attribution=attribution)
        timing["profiler_session_s"] = session
        summary = _summary(config, status, rows, metrics, timing)
        if folder is not None:
            folder.write_summary(summary)
            _write_profile(folder, config, timings, timing, events)
            folder.close()
    if print_summary:
        print(format_summary(summary))
    return RunResult(state, metrics, summary, folder.path if folder else None)


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


def _summary(config, status, rows, metrics, timing) -> dict[str, Any]:
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

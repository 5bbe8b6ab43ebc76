"""The runner: validate, build the graph, compile the plan ahead of time, run it, record it.

Host-side work happens at host boundaries only (every ``log_every`` iterations): reading metrics
back, writing ``metrics.jsonl``, updating progress. Between boundaries the plan runs untouched.
Every placement-specific step is the placement object's (``resolved.placement``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_fdg.config import Resolved, TrainConfig, check_environment, resolve, to_mapping
from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.core.loop import iterations_done
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError, OutOfMemory, warn
from jaxrl_fdg.policies import AUTO_FUSION, AUTO_PLACEMENT, distributed
from jaxrl_fdg.policies.fusion import Chunk
from jaxrl_fdg.profiling import Timings
from jaxrl_fdg.run import autotune, extension, lanes, loggers, memory, same_run, startup, video
from jaxrl_fdg.run import metrics as metric_rows
from jaxrl_fdg.run.build import build_loop, hazards
from jaxrl_fdg.run.checkpoint import FOLDER as CHECKPOINTS
from jaxrl_fdg.run.checkpoint import Checkpointer, NonFiniteError
from jaxrl_fdg.run.evaluation import check_evaluation, evaluation_function
from jaxrl_fdg.run.executables import ExecutableCache, for_run
from jaxrl_fdg.run.run_folder import RunFolder
from jaxrl_fdg.run.session import Session
from jaxrl_fdg.run.signals import Signals, signal_of


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


def initial_key(config: TrainConfig | Resolved, spec: AlgorithmSpec | None = None) -> jax.Array:
    """The key :func:`train` starts from: one per lane (seed × sweep point) if there are
    several. ``config`` may be resolved already (:func:`~jaxrl_fdg.config.resolve`)."""
    resolved = resolve(config, spec)
    return resolved.placement.initial_key(resolved.request)


def make_train(
    config: TrainConfig | Resolved, spec: AlgorithmSpec | None = None
) -> Callable[[jax.Array], tuple[LoopState, dict[str, jax.Array]]]:
    """The whole run as one pure function ``train(key) -> (final state, metrics [iterations])``.

    Jit it, or ``jax.vmap`` it over keys to train several seeds in one program. It is the scan
    plan's program (``policies.fusion.Chunk``) over the whole budget after ``init``: with
    ``key = initial_key(config)`` it computes what :func:`train` computes, up to float
    rounding: :func:`train` compiles ``init`` as a program of its own, without LLVM
    optimisation (``policies.compiling.RUN_ONCE``). ``config`` may be resolved already.
    """
    resolved = resolve(config, spec)
    loop, iterations = build_loop(resolved), resolved.config.num_iterations
    chunk = Chunk(loop, iterations)

    def train_fn(key: jax.Array):
        state, rows = chunk(loop.init(key), iterations)
        return state, chunk.read(rows, iterations)

    return train_fn


def train(
    config: TrainConfig | Resolved,
    spec: AlgorithmSpec | None = None,
    *,
    print_summary: bool = False,
    resume: str | Path | None = None,
) -> RunResult:
    """Train as ``config`` says; write the run folder; return the final state and metrics.

    ``config`` may be resolved already (:func:`~jaxrl_fdg.config.resolve`): it is resolved once
    per run, and what it resolved to is passed down.

    With ``resume`` (a run folder written with this ``config``), the run continues from that
    folder's latest checkpoint and computes what the uninterrupted run would have; rows logged
    after the checkpoint are replaced. ``RunResult.metrics`` then covers the resumed part only.

    A stop signal (Ctrl-C, SIGTERM, SIGHUP) stops the run within seconds, at the next safe
    point, with a checkpoint (when there is a run folder); a second one stops at once. One
    before training starts (while compiling, say) stops at once too; either way the summary says
    ``interrupted`` (:mod:`jaxrl_fdg.run.signals`).
    """
    if not isinstance(config, TrainConfig | Resolved):
        resolve(config)  # refuses it in one line, naming what it got
    unresolved = config.config if isinstance(config, Resolved) else config
    if unresolved.num_processes > 1:  # connect the processes before JAX starts its backends
        # (and before the handlers: it installs its own)
        distributed.initialize_for(
            unresolved.num_processes, unresolved.process_id, unresolved.coordinator
        )
    check_backend()
    with Signals() as signals:
        return _resolve_and_train(config, spec, print_summary, resume, signals)


_XLA_FLAG = re.compile(r"--xla_[a-z0-9_]+(=\S*)?")


def check_backend() -> None:
    """Start JAX's backend, or say in one line why it cannot: ``JAX_PLATFORMS=cuda`` on a
    machine without CUDA fails inside JAX with a bare ``AssertionError``, and a word in
    ``XLA_FLAGS`` that is no XLA flag makes XLA abort the process with a C++ stack (checked
    here by its form, ``--xla_NAME[=VALUE]``; a well-formed name XLA does not know still
    aborts)."""
    for word in os.environ.get("XLA_FLAGS", "").split():
        if not _XLA_FLAG.fullmatch(word):
            raise ConfigError(
                f"XLA_FLAGS holds {word!r}, which is no XLA flag (each is --xla_NAME or "
                "--xla_NAME=VALUE); XLA would stop the process on it"
            )
    try:
        jax.devices()
    except Exception as e:
        asked = os.environ.get("JAX_PLATFORMS") or jax.config.jax_platforms
        raise ConfigError(
            "JAX cannot start its backend"
            + (f" for JAX_PLATFORMS={asked!r}" if asked else "")
            + f" ({memory.first_line(e)}): is that platform installed here? Unset "
            "JAX_PLATFORMS to use what this machine has; NVIDIA GPUs need pip install -e "
            "'.[cuda]'"
        ) from None


def _resolve_and_train(config, spec, print_summary, resume, signals: Signals) -> RunResult:
    given = config
    config = config.config if isinstance(config, Resolved) else config
    # Only a budget the user gave is worth a word; an algorithm's default rounds down quietly.
    budget_given = not isinstance(given, Resolved) and config.total_steps is not None
    if config.compile_cache:  # before anything compiles; a cache configured otherwise is kept
        from jaxrl_fdg.run import compile_cache

        compile_cache.enable()
    # Every ConfigError is raised here, before compiling; the environment's contract is checked
    # below (a caller's resolution checked it already).
    checked = isinstance(given, Resolved)
    resolved = resolve(given, spec, check_env=False)
    saved = extension.recorded(resume) if resume is not None else None
    longer = extension.extended(resolved.config, saved)
    if longer != resolved.config:  # an extension: the schedules keep the horizon they ran under
        resolved = resolve(longer, resolved.spec, check_env=False)
    config = resolved.config
    if budget_given and (saved is None or config.total_steps != saved.get("total_steps")):
        _warn_of_steps_left_out(config)
    if resume is not None:
        done = _already_complete(resolved, Path(resume))
        if done is not None:
            return done
    chosen = None
    if config.fusion == AUTO_FUSION or config.placement == AUTO_PLACEMENT:
        if resume is not None:
            raise ConfigError(
                f"--fusion {AUTO_FUSION} and --placement {AUTO_PLACEMENT} choose when a run "
                "starts; a resumed run goes on with what it chose, which its config.toml names"
            )
        if not checked:
            check_environment(resolved.env, resolved.env_params)
            checked = True
        quiet = not (print_summary or config.progress)
        resolved, chosen = autotune.choose(resolved, out=None if quiet else sys.stderr)
    # JAX's NaN checks hook its jit dispatch; the plans then call programs through it.
    debug_nans = jax.config.jax_debug_nans
    jax.config.update("jax_debug_nans", config.debug_nans)
    try:
        # A run whose programs the executable cache holds has the code and configuration of a
        # run that passed the environment's check: checking again would trace it for nothing.
        cache = for_run(resolved)
        if not checked and (cache is None or not cache.holds()):
            check_environment(resolved.env, resolved.env_params)
        return _train(resolved, print_summary, resume, signals, chosen, cache)
    finally:
        jax.config.update("jax_debug_nans", debug_nans)


def _already_complete(resolved: Resolved, path: Path) -> RunResult | None:
    """The result of the completed run in ``path``, read back without compiling or writing
    anything (its summary and final checkpoint), or ``None`` where a resume has work left: the
    summary says otherwise, or its last intact checkpoint or metrics row is short of the
    budget, or a damaged checkpoint is to be removed."""
    config = resolved.config
    if config.num_processes > 1 or resolved.env.on_host:
        return None
    try:
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or summary.get("status") != "completed":
        return None
    if summary.get("iterations") != config.num_iterations:
        return None
    folder = RunFolder.open(path)
    folder.lock("train --resume")
    try:
        rows = folder.read_metrics()  # a damaged file stops here, as a resume stops
        if not rows or rows[-1]["iteration"] != config.num_iterations:
            return None  # rows the resume writes again
        checkpointer = Checkpointer(path / CHECKPOINTS, config.keep, to_mapping(resolved))
        try:
            candidates = checkpointer.candidates()
            if checkpointer.skipped or not candidates or candidates[0] != config.num_iterations:
                return None  # training left, or damage the resume repairs
            same_run.check(path, checkpointer, resolved)  # the same run, or refused
            loop = build_loop(resolved)
            like = jax.eval_shape(loop.init, resolved.placement.initial_key(resolved.request))
            state = checkpointer.restore(like)
        finally:
            checkpointer.close()
    finally:
        folder.release()
    print(
        f"jaxrl-fdg: {str(path)!r} is already complete ({config.num_iterations:,} "
        f"iterations, {config.num_iterations * config.steps_per_iteration:,} env steps): "
        "nothing was run or written (--total-steps beyond that extends it)",
        file=sys.stderr,
    )
    return RunResult(state, {}, summary, path)


# The share of a given budget a run may leave out, rounding down to whole iterations, without a
# word: 100,000 steps of 512 run 99,840 (0.16% fewer), as a person who typed 100000 expects.
STEPS_LEFT_OUT_QUIETLY = 0.01


def _warn_of_steps_left_out(config: TrainConfig) -> None:
    """A run takes whole iterations: warn where a given ``total_steps`` is not made of them and
    the iterations leave out more than :data:`STEPS_LEFT_OUT_QUIETLY` of it."""
    per, runs = config.steps_per_iteration, config.num_iterations * config.steps_per_iteration
    if config.total_steps - runs > STEPS_LEFT_OUT_QUIETLY * config.total_steps:
        warn(
            f"total_steps = {config.total_steps:,} is not a multiple of num_envs × rollout_len "
            f"= {per:,}: the run takes {config.num_iterations:,} "
            f"iteration{'s' if config.num_iterations != 1 else ''}, {runs:,} env steps "
            f"(give {runs:,} or {runs + per:,} to say which)"
        )


def _train(
    resolved: Resolved,
    print_summary: bool,
    resume: str | Path | None,
    signals: Signals,
    chosen: dict[str, Any] | None = None,
    cache: ExecutableCache | None = None,
) -> RunResult:
    config = resolved.config
    if not distributed.is_primary():  # process 0 alone shows progress and writes the run folder
        config = config.replace(out=None, progress=False)
        resolved = resolved._replace(config=config)
    loop = build_loop(resolved)
    _check_run(resolved, loop, resume)
    if distributed.is_primary():
        for hazard in hazards(loop, config.num_iterations):
            warn(hazard)
    plan = resolved.placement.plan(
        config.fusion, loop, Timings(config.profile), config.boundary_every
    )
    folder, path = startup.folder_of_every_process(resolved, resume)
    try:  # the folder stays locked until the run is over, however it ends
        return _run(
            resolved, loop, plan, folder, path, print_summary, resume, signals, chosen, cache
        )
    finally:
        if folder is not None:
            folder.release()


def _run(
    resolved, loop, plan, folder, path, print_summary, resume, signals, chosen, cache
) -> RunResult:
    """Start (:func:`_open`), train to the end in a :class:`Session`, write the summary
    however the run ends, and close what the run opened."""
    extra, evaluate = _evaluation(resolved, loop, plan, folder)
    opened = _open(resolved, plan, extra, folder, path, resume, signals, cache)
    session = _session(resolved, plan, folder, opened, evaluate, signals, chosen)
    state = opened.state
    try:
        state = _execute(session, resolved, state, signals)
    finally:
        summary = _finish(session, loop, opened, resolved, state, signals)
    if print_summary:
        print(metric_rows.format_summary(summary))
    return RunResult(state, metric_rows.concat(session.history), summary, folder and folder.path)


class _Opened(NamedTuple):
    """What a run holds once it has started: its first state, the metric rows logged before it
    (a resume's), its checkpointer and its lanes' log (``None`` where it has none)."""

    state: LoopState
    rows: list[dict[str, Any]]
    checkpointer: Checkpointer | None
    lane_log: lanes.LaneLog | None


def _evaluation(
    resolved: Resolved, loop: Loop, plan, folder
) -> tuple[dict[str, Any], Callable | None]:
    """With ``eval_every``, the evaluation program (compiled with the plan's programs, in
    ``extra``) and ``evaluate(state, iteration)``, which dispatches it behind a chunk; with
    ``eval_video`` too, it also writes a video then (waiting for it: a video is drawn on the
    device and written by the host)."""
    if not resolved.config.eval_every:
        return {}, None
    run_evaluation, keys = evaluation_function(resolved, loop)
    film = None
    if resolved.config.eval_video and folder is not None:
        film = video.Recorder(resolved, loop)

    def evaluate(state: LoopState, iteration: int):
        if film is not None:
            with plan.timings.scope("video", always=True):
                film(state, iteration, folder.path / video.FOLDER / f"iteration-{iteration}.gif")
        return plan.call("evaluate", state.fragments, keys(iteration))

    return {"evaluate": (run_evaluation, lambda state: (state.fragments, keys(0)))}, evaluate


def _open(resolved, plan, extra, folder, path, resume, signals: Signals, cache) -> _Opened:
    """Everything before the first iteration: the checkpointer (a resume's config checked), the
    first state with the programs compiled, the lanes' folders and the loggers. What stops it
    closes what it opened and is said in the run folder (``startup.stopped_before_training``)."""
    checkpointer, lane_log, rows = None, None, []
    try:
        checkpointer = startup.open_checkpointer(resolved, path, resume)
        state, rows = startup.start(resolved, plan, extra, checkpointer, folder, resume, cache)
        extension.warn_of_schedules(resolved)  # once the run is sure to go on
        lane_log = lanes.open_lanes(folder, resolved, resume, iterations_done(state))
        loggers.attach(resolved.config, folder, lane_log.folders if lane_log else [])
        signals.check()  # a stop signal during start-up that something swallowed still stops
    except BaseException as error:
        _close(lane_log, checkpointer)
        startup.stopped_before_training(resolved, plan, folder, resume, rows, error, signals)
        raise
    return _Opened(state, rows, checkpointer, lane_log)


def _session(resolved, plan, folder, opened: _Opened, evaluate, signals, chosen) -> Session:
    """The session that trains from ``opened``; its summary says how ``--fusion auto`` /
    ``--placement auto`` chose (``chosen``) and the budgets the run has had."""
    config = resolved.config
    label = f"{resolved.spec.name} on {config.env} [{config.fusion}]"
    agree = distributed.agree if config.num_processes > 1 else None
    session = Session(
        config,
        label,
        plan,
        folder,
        checkpointer=opened.checkpointer,
        rows=opened.rows,
        evaluate=evaluate,
        lanes=opened.lane_log,
        signals=signals,
        agree=agree,
    )
    agents = resolved.context.num_agents
    if agents > 1:  # a multi-agent game: its agents' steps beside the games' (env_steps)
        session.summary_extra["agents"] = agents
    if chosen is not None:  # how --fusion / --placement auto chose, in summary.json
        session.summary_extra["auto"] = chosen
    extended = extension.read(folder.path) if folder is not None else None
    if extended:  # the budgets the run has had
        session.summary_extra["extensions"] = extended
    return session


def _execute(session: Session, resolved: Resolved, state: LoopState, signals) -> LoopState:
    """Train from ``state`` to the end, a stop signal stopping it at the next safe point. How
    it ended goes to ``session.status``: ``non-finite``, ``failed`` (running out of memory
    raises :class:`OutOfMemory`, saying what to reduce), or interrupted by a second signal."""
    try:
        with signals.requesting(session.request_stop):
            return session.execute(state)
    except (NonFiniteError, FloatingPointError):
        session.status = "non-finite"
        raise
    except KeyboardInterrupt as e:  # a second stop signal: at once, from where it landed
        session.signal = signal_of(e)
        raise
    except Exception as e:  # a full disk, a lost permission, anything else: the run failed
        session.status = "failed"
        if memory.is_out_of_memory(e):
            raise OutOfMemory(
                f"out of memory at iteration {session.iterations} ({memory.first_line(e)}); "
                + memory.advice(resolved, state)
            ) from None
        raise


def _finish(session: Session, loop: Loop, opened: _Opened, resolved, state, signals) -> dict:
    """The run's summary, written however the run ended (a signal now changes nothing); then
    the checkpointer and lanes' log are closed and the placement releases ``state``."""
    try:
        with signals.absorbing():  # the summary says how the run ended, whatever comes
            return session.finish(loop)
    finally:
        _close(opened.lane_log, opened.checkpointer)
        resolved.placement.release(loop, state)


def _close(lane_log: lanes.LaneLog | None, checkpointer: Checkpointer | None) -> None:
    if lane_log is not None:
        lane_log.close()
    if checkpointer is not None:
        checkpointer.close()


def _check_run(resolved: Resolved, loop: Loop, resume: str | Path | None) -> None:
    """What needs the loop built, checked before anything compiles."""
    config = resolved.config
    if config.eval_every:
        check_evaluation(resolved, loop)
    if config.eval_video:
        if not config.eval_every:
            raise ConfigError("eval_video records at each evaluation: set eval_every too")
        video.check_video(resolved, "gif")
    if resolved.env.on_host and (config.checkpoint_every or resume is not None):
        raise ConfigError(
            f"{config.env} is a host simulator: its state lives outside JAX and cannot be "
            "checkpointed (use a JAX environment, or checkpoint_every = 0)"
        )

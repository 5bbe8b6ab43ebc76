"""The runner: validate, build the graph, compile the plan ahead of time, run it, record it.

Host-side work happens at host boundaries only (every ``log_every`` iterations): reading metrics
back, writing ``metrics.jsonl``, updating progress. Between boundaries the plan runs untouched.
Every placement-specific step is the placement object's (``resolved.placement``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_fdg.config import (
    NOT_COMPUTED,
    Resolved,
    TrainConfig,
    load,
    resolve,
    to_mapping,
)
from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.core.loop import iterations_done
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError, OutOfMemory, warn
from jaxrl_fdg.policies import AUTO_FUSION, AUTO_PLACEMENT, distributed
from jaxrl_fdg.policies.fusion import Chunk
from jaxrl_fdg.profiling import Timings, summarize
from jaxrl_fdg.profiling.timers import block_until_ready
from jaxrl_fdg.run import autotune, extension, lanes, loggers, memory, versions
from jaxrl_fdg.run import metrics as metric_rows
from jaxrl_fdg.run.build import build_loop, hazards
from jaxrl_fdg.run.checkpoint import FOLDER as CHECKPOINTS
from jaxrl_fdg.run.checkpoint import Checkpointer, NonFiniteError
from jaxrl_fdg.run.evaluation import check_evaluation, evaluation_function
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
    unresolved = config.config if isinstance(config, Resolved) else config
    if unresolved.num_processes > 1:  # connect the processes before JAX starts its backends
        # (and before the handlers: it installs its own)
        distributed.initialize_for(
            unresolved.num_processes, unresolved.process_id, unresolved.coordinator
        )
    with Signals() as signals:
        return _resolve_and_train(config, spec, print_summary, resume, signals)


def _resolve_and_train(config, spec, print_summary, resume, signals: Signals) -> RunResult:
    given = config
    config = config.config if isinstance(config, Resolved) else config
    # Only a budget the user gave is worth a word; an algorithm's default rounds down quietly.
    budget_given = not isinstance(given, Resolved) and config.total_steps is not None
    if config.compile_cache:  # before anything compiles; a cache configured otherwise is kept
        from jaxrl_fdg.run import compile_cache

        compile_cache.enable()
    resolved = resolve(given, spec)  # every ConfigError is raised here, before compiling
    saved = extension.recorded(resume) if resume is not None else None
    longer = extension.extended(resolved.config, saved)
    if longer != resolved.config:  # an extension: the schedules keep the horizon they ran under
        resolved = resolve(longer, resolved.spec)
    config = resolved.config
    if budget_given and (saved is None or config.total_steps != saved.get("total_steps")):
        _warn_of_steps_left_out(config)
    chosen = None
    if config.fusion == AUTO_FUSION or config.placement == AUTO_PLACEMENT:
        if resume is not None:
            raise ConfigError(
                f"--fusion {AUTO_FUSION} and --placement {AUTO_PLACEMENT} choose when a run "
                "starts; a resumed run goes on with what it chose, which its config.toml names"
            )
        quiet = not (print_summary or config.progress)
        resolved, chosen = autotune.choose(resolved, out=None if quiet else sys.stderr)
    # JAX's NaN checks hook its jit dispatch; the plans then call programs through it.
    debug_nans = jax.config.jax_debug_nans
    jax.config.update("jax_debug_nans", config.debug_nans)
    try:
        return _train(resolved, print_summary, resume, signals, chosen)
    finally:
        jax.config.update("jax_debug_nans", debug_nans)


def _warn_of_steps_left_out(config: TrainConfig) -> None:
    """A run takes whole iterations: warn where a given ``total_steps`` is not made of them."""
    per, runs = config.steps_per_iteration, config.num_iterations * config.steps_per_iteration
    if runs != config.total_steps:
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
    folder, path = _folder_of_every_process(resolved, resume)
    try:  # the folder stays locked until the run is over, however it ends
        return _run(resolved, loop, plan, folder, path, print_summary, resume, signals, chosen)
    finally:
        if folder is not None:
            folder.release()


def _folder_of_every_process(resolved: Resolved, resume) -> tuple[RunFolder | None, Path | None]:
    """This process's run folder (process 0's alone, in a run across processes) and the path
    of the run's folder, which every process knows: each writes its shards of the checkpoints
    there. Process 0 makes (or opens) the folder and tells the others where it is."""
    if resolved.config.num_processes == 1:
        folder = _folder(resolved, resume)
        return folder, folder and folder.path
    if not distributed.is_primary():
        path = distributed.share_path(None)
        return None, Path(path) if path else None
    try:
        folder = _folder(resolved, resume)
    except BaseException:
        distributed.share_path(None, failed=True)
        raise
    distributed.share_path(str(folder.path) if folder else None)
    return folder, folder and folder.path


def _run(resolved, loop, plan, folder, path, print_summary, resume, signals, chosen) -> RunResult:
    config = resolved.config
    extra, evaluate = {}, None
    if config.eval_every:  # compiled with the plan's programs, called behind its chunks
        run_evaluation, keys = evaluation_function(resolved, loop)
        extra["evaluate"] = (run_evaluation, lambda state: (state.fragments, keys(0)))

        def evaluate(state: LoopState, iteration: int):
            return plan.call("evaluate", state.fragments, keys(iteration))

    checkpointer, lane_log, rows = None, None, []
    try:
        checkpointer = _checkpointer(resolved, path, resume)  # a resume's config is checked
        state, rows = _start(resolved, plan, extra, checkpointer, folder, resume)
        extension.warn_of_schedules(resolved)  # once the run is sure to go on
        lane_log = lanes.open_lanes(folder, resolved, resume, iterations_done(state))
        loggers.attach(config, folder, lane_log.folders if lane_log else [])
        signals.check()  # a stop signal during start-up that something swallowed still stops
    except BaseException as error:
        if lane_log is not None:
            lane_log.close()
        if checkpointer is not None:
            checkpointer.close()
        _stopped_before_training(resolved, plan, folder, resume, rows, error, signals)
        raise
    label = f"{resolved.spec.name} on {config.env} [{config.fusion}]"
    agree = distributed.agree if config.num_processes > 1 else None
    session = Session(
        config, label, plan, folder, checkpointer, rows, evaluate, lane_log, signals, agree
    )
    if chosen is not None:  # how --fusion / --placement auto chose, in summary.json
        session.summary_extra["auto"] = chosen
    extended = extension.read(folder.path) if folder is not None else None
    if extended:  # the budgets the run has had
        session.summary_extra["extensions"] = extended
    try:
        with signals.requesting(session.request_stop):
            state = session.execute(state)
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
    finally:
        try:
            with signals.absorbing():  # the summary says how the run ended, whatever comes
                summary = session.finish(loop)
        finally:
            if lane_log is not None:
                lane_log.close()
            if checkpointer is not None:
                checkpointer.close()
            resolved.placement.release(loop, state)
    if print_summary:
        print(metric_rows.format_summary(summary))
    return RunResult(state, metric_rows.concat(session.history), summary, folder and folder.path)


def _stopped_before_training(resolved, plan, folder, resume, rows, error, signals) -> None:
    """A run that stopped before it trained: bad input (a :class:`ConfigError`) leaves no half
    folder behind (a fresh one is removed; a resumed one is left as it was); anything else (a
    stop signal while compiling, a failure) is said in ``summary.json``."""
    if folder is None:
        return
    if isinstance(error, ConfigError):
        if resume is None:
            folder.remove()
        return
    status, extra = "failed", {}
    if isinstance(error, KeyboardInterrupt):
        status, extra = "interrupted", {"signal": signal.Signals(signal_of(error)).name}
    rows = rows or _readable_rows(folder)
    elapsed = float(rows[-1]["wall_s"]) if rows else 0.0
    timing = summarize(plan.timings, 0.0)
    summary = metric_rows.summary(resolved.config, status, rows, timing, elapsed)
    # The error that stopped it is the one to report; a signal now changes nothing.
    with contextlib.suppress(OSError), signals.absorbing():
        folder.write_summary({**summary, **extra})


def _readable_rows(folder: RunFolder) -> list[dict[str, Any]]:
    try:
        return folder.read_metrics()
    except ConfigError:
        return []


def _checkpointer(resolved: Resolved, path: Path | None, resume) -> Checkpointer | None:
    """The run's checkpointer (every process's, in a run across processes), which stores the
    resolved config with every checkpoint; for a resume, that config must match this run's
    (checked before anything compiles)."""
    config = resolved.config
    if path is None or resolved.env.on_host:
        return None
    checkpointer = Checkpointer(
        path / CHECKPOINTS, config.keep, to_mapping(resolved), primary=distributed.is_primary()
    )
    if resume is not None:
        try:
            _check_same_run(path, checkpointer, resolved)
        except BaseException:
            checkpointer.close()
            raise
    return checkpointer


def _check_run(resolved: Resolved, loop: Loop, resume: str | Path | None) -> None:
    """What needs the loop built, checked before anything compiles."""
    config = resolved.config
    if config.eval_every:
        check_evaluation(resolved, loop)
    if resolved.env.on_host and (config.checkpoint_every or resume is not None):
        raise ConfigError(
            f"{config.env} is a host simulator: its state lives outside JAX and cannot be "
            "checkpointed (use a JAX environment, or checkpoint_every = 0)"
        )


def _folder(resolved: Resolved, resume: str | Path | None) -> RunFolder | None:
    """The run folder: opened (and locked) to resume, created with its ``config.toml``, or
    ``None``. A fresh folder that cannot be completed is removed again."""
    config = resolved.config
    if resume is not None:
        folder = RunFolder.open(resume)
        folder.lock("train --resume")
    elif config.out is not None:
        folder = RunFolder.create(config, resolved.spec.name)  # created locked
    else:
        return None
    try:
        if resume is None:
            folder.write_config(to_mapping(resolved))
            versions.record(folder, 0, versions.current())
        else:  # a damaged metrics file stops the resume before anything compiles
            folder.read_metrics()
        return folder
    except BaseException:
        if resume is None:
            folder.remove()
        folder.release()
        raise


def _start(resolved, plan, extra, checkpointer, folder, resume):
    """The compiled plan's initial state (or the checkpoint it resumes from) and the metric
    rows logged before it. Where the shapes describe the programs, all of them compile at once
    for the shapes ``init`` returns (``Plan.start``), fresh run or resume alike: a checkpoint
    restores the same shapes, and compiling for the restored arrays instead would lower other
    programs (orbax commits them to their device, which the lowering records), missing the
    compilation cache the run that wrote the checkpoint filled. Otherwise init runs first and
    the rest compile for its result, or for the restored checkpoint."""
    key = resolved.placement.initial_key(resolved.request)
    from_shapes = resolved.placement.compiles_from_shapes(resolved.request)
    with _sweep_errors(resolved), _memory_errors(resolved):
        if from_shapes:  # checked for memory before init makes its state
            state = plan.start(key, extra, lambda p: memory.check_programs(resolved, p))
        else:
            state = plan.init(key)
        block_until_ready(state)  # a state too large for memory fails here, not in a chunk
    rows: list[dict[str, Any]] = []
    if resume is not None and not checkpointer.steps():
        # Stopped before its first checkpoint (killed while compiling, say): nothing to
        # restore, so the run starts again; its rows, if any, are logged again.
        warn(
            f"{str(checkpointer.directory.parent)!r} has no checkpoint yet; the run starts again "
            "from iteration 0"
        )
    elif resume is not None:
        state = checkpointer.restore(state)
        checkpointer.discard_skipped()  # this run writes those iterations again
    if resume is not None and folder is not None:  # process 0's, in a run across processes
        rows = folder.truncate_metrics(iterations_done(state))
        versions.record(folder, iterations_done(state), checkpointer.versions)
        extension.record(folder.path, resolved, iterations_done(state))
    if not from_shapes:
        with _sweep_errors(resolved), _memory_errors(resolved):
            plan.compile(state, extra)
        memory.check_programs(resolved, plan.compiled_so_far, state)
    return state, rows


@contextlib.contextmanager
def _memory_errors(resolved: Resolved):
    """Memory a run's start runs out of (its state, a compile) is a size this machine cannot
    hold: said in one line with the settings to reduce, as a prediction would."""
    try:
        yield
    except jax.errors.JaxRuntimeError as e:
        if not memory.is_out_of_memory(e):
            raise
        raise ConfigError(
            f"out of memory while the run starts ({memory.first_line(e)}); "
            + memory.advice(resolved)
        ) from None


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


def _check_same_run(path: Path, checkpointer: Checkpointer, resolved: Resolved) -> None:
    """A run resumes only with the configuration its checkpoints were written with (settings
    that change nothing it computes aside, ``config.NOT_COMPUTED``): editing ``config.toml``
    or giving a flag that changes the run is refused, naming each changed key."""
    current = to_mapping(resolved)
    saved, source, written, done = None, "its config.toml", None, None
    for step in reversed(checkpointer.steps()):
        if checkpointer.damage(step) is None:
            done = step if done is None else done  # where the resume goes on from
            saved = checkpointer.stored_config(step)
            if saved is not None:
                source = f"its checkpoint at iteration {step}"
                written = checkpointer.stored_versions(step)
                break
    if saved is None:  # no checkpoint yet, or one written before configs were stored
        saved = load(path / "config.toml")
    if written is None:  # then the versions its folder last ran under, if it says
        stretches = versions.read(path)
        written = stretches[-1]["versions"] if stretches else None
    changed_versions = versions.differences(written or {}, checkpointer.versions)
    if changed_versions:
        warn(
            f"resuming {str(path)!r} under other versions than {source}'s "
            f"({', '.join(changed_versions)}): the same bits are promised for the same versions "
            "only"
        )
    changed = _changed_keys(*extension.comparable(saved, current))
    if changed:
        details = ", ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in changed)
        raise ConfigError(
            f"cannot resume {str(path)!r} with a configuration other than {source}'s ({details})"
        )
    extension.check_budget(path, done or 0, resolved)


def _changed_keys(saved: dict, current: dict, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, saved value, current value)`` for every computed setting that differs."""
    changed = []
    for key in sorted(set(saved) | set(current)):
        if not prefix and key in NOT_COMPUTED:
            continue
        if key not in saved and prefix:  # a hyperparameter newer than the checkpoint
            continue
        # A setting newer than the checkpoint (or unset there) had its default then.
        a = saved[key] if key in saved else getattr(TrainConfig, key, None)
        b = current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            changed += _changed_keys(a, b, f"{prefix}{key}.")
        elif _normal(a) != _normal(b):
            changed.append((f"{prefix}{key}", a, b))
    return changed


def _normal(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value

"""A run's start: its folder, its checkpointer, its initial (or restored) state with its programs
compiled, and what a run that stops before it trains leaves behind.

Start-up fails in one line that says what to change: memory a run's start runs out of is a size
this machine cannot hold (:func:`memory_errors`), and a swept hyperparameter that decides the
program's structure cannot be swept in one program (:func:`sweep_errors`).
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path
from typing import Any

import jax

from jaxrl_fdg import plugins
from jaxrl_fdg.config import Resolved, to_mapping
from jaxrl_fdg.core.loop import iterations_done
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.policies import distributed
from jaxrl_fdg.profiling import summarize
from jaxrl_fdg.profiling.timers import block_until_ready
from jaxrl_fdg.run import executables, extension, memory, same_run, versions
from jaxrl_fdg.run import metrics as metric_rows
from jaxrl_fdg.run.checkpoint import FOLDER as CHECKPOINTS
from jaxrl_fdg.run.checkpoint import Checkpointer
from jaxrl_fdg.run.run_folder import RunFolder
from jaxrl_fdg.run.signals import Signals, signal_of


def open_folder(resolved: Resolved, resume: str | Path | None) -> RunFolder | None:
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
            mapping = to_mapping(resolved)
            folder.write_config(mapping)
            versions.record(folder, 0, versions.current(mapping))
        else:  # a damaged metrics file stops the resume before anything compiles
            folder.read_metrics()
        return folder
    except BaseException:
        if resume is None:
            folder.remove()
        folder.release()
        raise


def folder_of_every_process(
    resolved: Resolved, resume: str | Path | None
) -> tuple[RunFolder | None, Path | None]:
    """This process's run folder (process 0's alone, in a run across processes) and the path
    of the run's folder, which every process knows: each writes its shards of the checkpoints
    there. Process 0 makes (or opens) the folder and tells the others where it is."""
    if resolved.config.num_processes == 1:
        folder = open_folder(resolved, resume)
        return folder, folder and folder.path
    if not distributed.is_primary():
        path = distributed.share_path(None)
        return None, Path(path) if path else None
    try:
        folder = open_folder(resolved, resume)
    except BaseException:
        distributed.share_path(None, failed=True)
        raise
    distributed.share_path(str(folder.path) if folder else None)
    return folder, folder and folder.path


def open_checkpointer(
    resolved: Resolved, path: Path | None, resume: str | Path | None
) -> Checkpointer | None:
    """The run's checkpointer (every process's, in a run across processes), which stores the
    resolved config with every checkpoint; for a resume, that config must match this run's
    (checked before anything compiles: :func:`~jaxrl_fdg.run.same_run.check`)."""
    if path is None or resolved.env.on_host:
        return None
    checkpointer = Checkpointer(
        path / CHECKPOINTS,
        resolved.config.keep,
        to_mapping(resolved),
        primary=distributed.is_primary(),
    )
    if resume is not None:
        try:
            same_run.check(path, checkpointer, resolved)
        except BaseException:
            checkpointer.close()
            raise
    return checkpointer


def start(
    resolved: Resolved,
    plan: Any,
    extra: dict[str, Any],
    checkpointer: Checkpointer | None,
    folder: RunFolder | None,
    resume: str | Path | None,
    cache: executables.ExecutableCache | None = None,
) -> tuple[LoopState, list[dict[str, Any]]]:
    """The compiled plan's initial state (or the checkpoint it resumes from) and the metric
    rows logged before it. Where the shapes describe the programs, all of them compile at once
    for the shapes ``init`` returns (``Plan.start``), fresh run or resume alike: a checkpoint
    restores the same shapes, and compiling for the restored arrays instead would lower other
    programs (orbax commits them to their device, which the lowering records), missing the
    compilation cache the run that wrote the checkpoint filled. Otherwise init runs first and
    the rest compile for its result, or for the restored checkpoint. ``cache`` is the run's
    entry in the executable cache (:func:`executables.for_run`), if it has one."""

    def key() -> jax.Array:
        return resolved.placement.initial_key(resolved.request)

    from_shapes = resolved.placement.compiles_from_shapes(resolved.request)
    with sweep_errors(resolved), memory_errors(resolved):
        if from_shapes:  # checked for memory before init makes its state
            state = plan.start(key, extra, lambda p: memory.check_programs(resolved, p), cache)
        else:
            state = plan.init(key())
        block_until_ready(state)  # a state too large for memory fails here, not in a chunk
    rows: list[dict[str, Any]] = []
    if resume is not None:
        state = _restore(state, checkpointer)
        if folder is not None:  # process 0's, in a run across processes
            rows = folder.truncate_metrics(iterations_done(state))
            versions.record(folder, iterations_done(state), checkpointer.versions)
            extension.record(folder.path, resolved, iterations_done(state))
            same_run.record_settings(folder.path, resolved)
    if not from_shapes:
        with sweep_errors(resolved), memory_errors(resolved):
            plan.compile(state, extra)
        memory.check_programs(resolved, plan.compiled_so_far, state)
    return state, rows


def _restore(state: LoopState, checkpointer: Checkpointer) -> LoopState:
    """The latest checkpoint's state (``state`` gives the shapes), its later iterations
    discarded (the run writes them again); ``state`` itself where there is no checkpoint yet."""
    if not checkpointer.steps():
        # Stopped before its first checkpoint (killed while compiling, say): nothing to
        # restore, so the run starts again; its rows, if any, are logged again.
        warn(
            f"{str(checkpointer.directory.parent)!r} has no checkpoint yet; the run starts again "
            "from iteration 0"
        )
        return state
    state = checkpointer.restore(state)
    checkpointer.discard_skipped()  # this run writes those iterations again
    return state


@contextlib.contextmanager
def memory_errors(resolved: Resolved):
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
def sweep_errors(resolved: Resolved):
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


def stopped_before_training(
    resolved: Resolved,
    plan: Any,
    folder: RunFolder | None,
    resume: str | Path | None,
    rows: list[dict[str, Any]],
    error: BaseException,
    signals: Signals,
) -> None:
    """A run that stopped before it trained: bad input (a :class:`ConfigError`, or an error
    raised in the user's own code) leaves no half folder behind (a fresh one is removed; a
    resumed one is left as it was); anything else (a stop signal while compiling, a failure)
    is said in ``summary.json``."""
    if folder is None:
        return
    if isinstance(error, ConfigError) or plugins.user_error(error) is not None:
        if resume is None:  # bad input, or the user's code raised: said in one line, no folder
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

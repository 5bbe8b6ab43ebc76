"""Evaluation during and after training: the evaluator fragment on the learner's ``params``,
compiled ahead of time, with keys that depend only on the seed and the iteration."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxrl_fdg import validate
from jaxrl_fdg.config import Resolved, from_mapping, load, resolve
from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.core.evaluation import evaluation_key, evaluator
from jaxrl_fdg.core.fragment import EmptyState, call, published
from jaxrl_fdg.core.loop import iterations_done
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.policies.exported import Exported
from jaxrl_fdg.profiling import Timings
from jaxrl_fdg.run import compile_cache, executables, memory
from jaxrl_fdg.run.build import build_loop
from jaxrl_fdg.run.checkpoint import FOLDER as CHECKPOINTS
from jaxrl_fdg.run.checkpoint import Checkpointer
from jaxrl_fdg.run.run_folder import RunFolder
from jaxrl_fdg.run.video import FOLDER as VIDEOS
from jaxrl_fdg.run.video import check_video, record


def check_evaluation(resolved: Resolved, loop: Loop) -> None:
    if loop.info.policy is None:
        raise ConfigError(f"algorithm {resolved.spec.name!r} defines no policy to evaluate")
    if resolved.env.on_host:
        raise ConfigError(
            f"evaluation needs a JAX environment; {resolved.config.env} is a host simulator"
        )


def evaluation_function(
    resolved: Resolved, loop: Loop
) -> tuple[Callable[[dict, jax.Array], dict[str, jax.Array]], Callable[[int], jax.Array]]:
    """``(run, keys)``: ``run(state.fragments, keys(iteration))`` evaluates the learner's current
    ``params`` (its metrics stay on the device), with this placement's layout of the state."""
    config = resolved.config
    check_evaluation(resolved, loop)
    frag = evaluator(
        resolved.env,
        resolved.env_params,
        loop.info.policy,
        config.eval_episodes,
        memory=loop.info.policy_memory,
    )

    def run(states: dict, key: jax.Array) -> dict[str, jax.Array]:
        learner = loop.info.learner
        params = published(learner, states[learner.name])["params"]
        return call(frag, EmptyState(), {"params": params}, key)[1]

    seeds = np.asarray([lane.seed for lane in resolved.lanes])

    def keys(iteration: int) -> jax.Array:
        if len(seeds) == 1:
            return evaluation_key(config.seed, iteration)
        return jax.vmap(lambda seed: evaluation_key(seed, iteration))(seeds)

    return resolved.placement.evaluation(run), keys


def evaluation_program(
    resolved: Resolved, loop: Loop, state: LoopState, timings: Timings, exported: bool = False
) -> tuple[Callable[[LoopState, int], Any], Any]:
    """``(state, iteration) -> evaluation metrics`` (on the device): :func:`evaluation_function`
    compiled ahead of time for the shapes of ``state`` (shapes alone, so that a restored state,
    whose arrays orbax commits to their device, gives the program a training run compiled), and
    the compiled program itself.

    With ``exported``, the program is compiled from its StableHLO
    (:class:`~jaxrl_fdg.policies.exported.Exported`), as a training run that fills or reads the
    executable cache compiles its evaluation: the same program then, which JAX's persistent
    cache holds from the run (:func:`compiled_as_exported`)."""
    run, keys = evaluation_function(resolved, loop)
    shapes = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=jax.typeof(x).weak_type),
        state.fragments,
    )
    with timings.scope("compile:evaluate", always=True):
        fn, args = run, (shapes, keys(0))
        if exported:
            try:
                program = Exported.of(fn, args)
                fn, args = program.function(), program.args
            except Exception:  # what jax.export refuses, the run compiled as it is too
                pass
        program = jax.jit(fn).lower(*args).compile()

    def evaluate(state: LoopState, iteration: int):
        with timings.scope("evaluate"):
            return program(state.fragments, keys(iteration))

    return evaluate, program


def compiled_as_exported(resolved: Resolved, loop: Loop) -> bool:
    """Whether the run of ``resolved`` compiled its programs from their StableHLO: a run whose
    mode takes its programs from the executable cache (:mod:`jaxrl_fdg.run.executables`)
    exports each program as it traces it, and runs what it exported."""
    config = resolved.config
    if config.debug_nans or executables.for_run(resolved) is None:
        return False
    plan = resolved.placement.plan(config.fusion, loop, Timings("off"), config.boundary_every)
    return plan.cacheable


class Video(NamedTuple):
    """What ``evaluate(..., video=Video(...))`` records: ``episodes`` episodes as a ``gif`` or
    ``mp4`` at ``path`` (default: ``videos/eval-<iteration>.<format>`` in the run folder)."""

    episodes: int = 1
    format: str = "gif"
    path: str | Path | None = None


def evaluate(
    run_dir: str | Path,
    episodes: int | None = None,
    iteration: int | None = None,
    spec: AlgorithmSpec | None = None,
    video: Video | None = None,
) -> dict[str, Any]:
    """Evaluate a run's checkpoint (the latest, or the one at ``iteration``): the deterministic
    policy on ``episodes`` fresh environments (default: the run's ``eval_episodes``), with the
    same keys as the run's own evaluation at that iteration. Writes ``evaluation.json`` into the
    run folder and returns what it holds; with ``video``, also a video of the policy's episodes
    (:mod:`jaxrl_fdg.run.video`), whose path the result names under ``"video"``.

    The evaluation program is the same for every checkpoint of a run and every run of its
    configuration: where the run kept ``compile_cache`` on, JAX's persistent compilation cache
    (:mod:`~jaxrl_fdg.run.compile_cache`) is turned on as training turns it on, and the program
    is compiled as the run compiled its own evaluation (:func:`compiled_as_exported`). So the
    first evaluation of a run that evaluated while it trained loads the program the run
    compiled, and any evaluation after the first loads its own."""
    folder = RunFolder.open(run_dir)
    checkpoints = folder.path / CHECKPOINTS
    if not checkpoints.is_dir():
        raise ConfigError(f"run {str(folder.path)!r} has no checkpoints to evaluate")
    # It writes evaluation.json, and a training run rotates checkpoints; a folder that cannot be
    # written to is evaluated all the same (the result is returned and printed, not written).
    folder.lock("evaluate", read_only=True)
    try:
        return _evaluate(folder, episodes, iteration, spec, video)
    finally:
        folder.release()


def _evaluate(folder: RunFolder, episodes, iteration, spec, video) -> dict[str, Any]:
    checkpointer = Checkpointer(folder.path / CHECKPOINTS)
    try:
        # The config stored with the checkpoint is the one its state was computed with, even
        # if config.toml was edited since; a checkpoint without one falls back to config.toml.
        candidates = checkpointer.candidates(iteration)
        mapping = checkpointer.stored_config(candidates[0]) if candidates else None
        source = f"{checkpointer.directory}/{candidates[0]}" if mapping else None
        if mapping is None:
            source = str(folder.path / "config.toml")
            mapping = load(source)
        config = from_mapping(mapping, source=source).replace(out=None, progress=False)
        if config.compile_cache:  # as the run had it: every evaluation of it is one program
            compile_cache.enable()
        if episodes is not None:
            config = config.replace(eval_episodes=episodes)
        resolved = resolve(config, spec)
        if video is not None:
            check_video(resolved, video.format)
            validate.positive_int("video episodes", video.episodes)
        loop = build_loop(resolved)
        # The shapes init returns are all a restore needs: nothing is compiled for them.
        like = jax.eval_shape(loop.init, resolved.placement.initial_key(resolved.request))
        state = checkpointer.restore(like, iteration)
    finally:
        checkpointer.close()
    exported = compiled_as_exported(resolved, loop)
    program, compiled = evaluation_program(resolved, loop, state, Timings("off"), exported)
    reduce = f"reduce --episodes ({config.eval_episodes:,})"
    memory.check_programs(resolved, {"evaluate": compiled}, state, reduce, "the evaluation")
    done = iterations_done(state)
    try:
        values = jax.device_get(program(state, done))
    except jax.errors.JaxRuntimeError as e:
        if not memory.is_out_of_memory(e):
            raise
        raise ConfigError(f"out of memory ({memory.first_line(e)}); {reduce}") from None
    result = {
        "run": str(folder.path),
        "iteration": done,
        "env_steps": done * resolved.config.steps_per_iteration,
        "episodes": config.eval_episodes,
        **{k: float(np.mean(v)) for k, v in values.items()},  # the mean over seeds, if several
    }
    if len(resolved.lanes) > 1:
        result["runs"] = [lane.name for lane in resolved.lanes]
        result["per_run"] = {k: np.asarray(v).tolist() for k, v in values.items()}
    if video is not None:
        path = video.path or folder.path / VIDEOS / f"eval-{done}.{video.format}"
        recorded = record(resolved, loop, state, done, Path(path), video.episodes, video.format)
        result["video"] = recorded["path"]
    if os.access(folder.path, os.W_OK):
        folder.write_json("evaluation.json", result)
    else:
        warn(f"{str(folder.path)!r} cannot be written to: evaluation.json is not written")
    return result

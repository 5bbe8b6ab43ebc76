"""Helpers for testing algorithms, environments and fragments written for jaxrl-fdg: what the
library's own tests use, public so that a user's tests can say the same things the same way.

The contract they check is the framework's: for a fixed seed, every fusion mode computes the same
bits. A test of a new algorithm is then a few lines::

    from jaxrl_fdg import testing

    def test_my_algorithm_is_the_same_in_every_mode():
        testing.assert_modes_agree(testing.tiny("ppo"), MY_SPEC)

:func:`tiny` gives a configuration that compiles and runs in seconds; :func:`run_modes` trains it
under several fusion modes; :func:`assert_same_bits` compares two results (or any two pytrees,
PRNG keys included) leaf by leaf and names the first leaf that differs.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl_fdg.config import TrainConfig
from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.step import StepCall, open_streams, step_body
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.policies.compiling import RUN_ONCE_OPTIONS, compile_with
from jaxrl_fdg.run import RunResult, train

# The compiled fusion modes (eager runs op by op: too slow for most tests).
COMPILED_MODES = ("step", "fragment", "iteration", "scan")

_OFF_POLICY = {"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125}
# Each built-in's hyperparameters at the smallest sizes that still exercise every part of it.
TINY_HPARAMS: Mapping[str, Mapping[str, Any]] = {
    "ppo": {"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,)},
    "a2c": {"hidden_sizes": (16,)},
    "impala": {"hidden_sizes": (16,)},
    "pqn": {"num_minibatches": 2, "update_epochs": 1, "hidden_sizes": (16,)},
    "dqn": {**_OFF_POLICY, "hidden_sizes": (16,)},
    "c51": {**_OFF_POLICY, "hidden_sizes": (16,), "num_atoms": 11},
    "sac": {**_OFF_POLICY, "hidden_sizes": (16, 16)},
    "td3": {**_OFF_POLICY, "hidden_sizes": (16, 16)},
    "ddpg": {**_OFF_POLICY, "hidden_sizes": (16, 16)},
}
_CONTINUOUS = ("sac", "td3", "ddpg")


def tiny(
    algo: str = "ppo", iterations: int = 3, like: str | None = None, **changes: Any
) -> TrainConfig:
    """A configuration of ``algo`` that compiles and runs in seconds: ``iterations``
    iterations of 2 envs × 8 steps, small networks, no run folder, no progress display, no
    profiling; ``changes`` are set last (``hparams`` merged into the tiny ones). ``like`` names
    the built-in whose tiny hyperparameters and environment an algorithm built on it takes
    (default: ``algo`` itself)."""
    like = algo if like is None else like
    hparams = {**TINY_HPARAMS.get(like, {}), **changes.pop("hparams", {})}
    config = TrainConfig(
        algo=algo,
        env="Pendulum-v1" if like in _CONTINUOUS else "CartPole-v1",
        total_steps=2 * 8 * iterations,
        num_envs=2,
        rollout_len=8,
        log_every=2,
        out=None,
        progress=False,
        profile="off",
        hparams=hparams,
    )
    return config.replace(**changes)


def run_modes(
    config: TrainConfig,
    spec: AlgorithmSpec | None = None,
    modes: Iterable[str] = COMPILED_MODES,
) -> dict[str, RunResult]:
    """``config`` trained under each fusion mode of ``modes`` (``spec``: a user algorithm's,
    else the one ``config.algo`` names), by mode."""
    return {mode: train(config.replace(fusion=mode), spec) for mode in modes}


def leaves(tree: Any) -> list[tuple[str, np.ndarray]]:
    """``(path, value)`` of every leaf of ``tree`` on the host; a PRNG key as its raw bits."""

    def host(x: Any) -> np.ndarray:
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(jax.tree_util.keystr(path), host(x)) for path, x in flat]


def differences(a: Any, b: Any) -> list[str]:
    """The paths of the leaves where ``a`` and ``b`` differ (structure, shape, dtype or bits);
    a :class:`RunResult` is compared by its final state and its metrics."""
    a, b = _comparable(a), _comparable(b)
    left, right = leaves(a), leaves(b)
    if [p for p, _ in left] != [p for p, _ in right]:
        return [f"structure: {[p for p, _ in left]} != {[p for p, _ in right]}"]
    return [
        path
        for (path, x), (_, y) in zip(left, right, strict=True)
        if x.shape != y.shape or x.dtype != y.dtype or not np.array_equal(x, y, equal_nan=True)
    ]


def assert_same_bits(a: Any, b: Any, what: str = "") -> None:
    """Raise an ``AssertionError`` naming the leaves where ``a`` and ``b`` differ."""
    found = differences(a, b)
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise AssertionError(f"{what + ': ' if what else ''}not the same bits at {shown}")


def assert_modes_agree(
    config: TrainConfig,
    spec: AlgorithmSpec | None = None,
    modes: Iterable[str] = COMPILED_MODES,
) -> dict[str, RunResult]:
    """Train ``config`` under each fusion mode of ``modes`` and assert that every run ends on the
    same bits (state and metrics) as the first; returns the runs by mode."""
    runs = run_modes(config, spec, modes)
    (first, reference), *others = runs.items()
    for mode, run in others:
        assert_same_bits(run, reference, f"fusion {mode!r} against {first!r}")
    return runs


def assert_resumes_bit_for_bit(
    config: TrainConfig, out: str | Path, resume_after: int
) -> tuple[RunResult, RunResult]:
    """Train ``config`` whole (run ``whole`` under ``out``) and again (run ``part``), drop every
    checkpoint of ``part`` after iteration ``resume_after`` (as if it had died there), resume it,
    and assert it ends on the whole run's bits (state and metrics of the resumed part aside);
    returns ``(resumed, whole)``. ``config`` must checkpoint at ``resume_after``."""
    out = Path(out)
    whole = train(config.replace(out=str(out), run_name="whole"))
    train(config.replace(out=str(out), run_name="part"))
    checkpoints = out / "part" / "checkpoints"
    kept = [p for p in checkpoints.iterdir() if p.name.isdigit()]
    if resume_after not in {int(p.name) for p in kept}:
        raise ValueError(f"no checkpoint at iteration {resume_after} in {checkpoints}")
    for late in (p for p in kept if int(p.name) > resume_after):
        shutil.rmtree(late)
    resumed = train(config.replace(out=str(out), run_name="part"), resume=out / "part")
    assert_same_bits(resumed.state, whole.state, "resumed against whole")
    return resumed, whole


def initial_state(loop: Loop, key: jax.Array) -> LoopState:
    """``loop.init(key)``, compiled with the options the fusion modes compile ``init`` with
    (:data:`~jaxrl_fdg.policies.compiling.RUN_ONCE_OPTIONS`, no LLVM optimisation): a program
    that runs once compiles in about a quarter of the time a plain ``jax.jit`` takes."""
    return compile_with(jax.jit(loop.init).lower(key), RUN_ONCE_OPTIONS)(key)


def first_call(loop: Loop, state: LoopState, key: jax.Array) -> StepCall:
    """The first call of ``loop``'s step body at the start of a rollout from ``state`` with
    rollout key ``key`` (the actor's, in every built-in algorithm): its index, fragment, the
    inputs it reads (only those it declares) and its key."""
    fixed = loop.fixed_edges(state.fragments)
    (stream, *_) = open_streams(loop.info, loop.carry(state.fragments, key))
    return next(step_body(loop.info, fixed, stream))


def _comparable(x: Any) -> Any:
    if isinstance(x, RunResult):
        return {"state": x.state, "metrics": x.metrics}
    return x


__all__ = [
    "assert_resumes_bit_for_bit",
    "COMPILED_MODES",
    "TINY_HPARAMS",
    "assert_modes_agree",
    "assert_same_bits",
    "differences",
    "first_call",
    "leaves",
    "run_modes",
    "tiny",
]

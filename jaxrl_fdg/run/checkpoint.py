"""Checkpoints of the whole loop state with orbax: every fragment's state (parameters, optimizer
moments, target networks, replay buffer, environment state, step counters), the key stream and
the iteration counter. Restoring one and running on computes exactly what an uninterrupted run
computes (tests/run/test_checkpoint.py).

orbax writes each checkpoint into a temporary folder and renames it into place once complete, so
a crash while writing leaves the previous checkpoints as they were; ``keep`` bounds how many stay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl_fdg.core.loop import iterations_done
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError

FOLDER = "checkpoints"


class NonFiniteError(RuntimeError):
    """A fragment's state or outputs hold NaN or inf; names the fragment and the iteration."""


class Checkpointer:
    """Saves and restores :class:`LoopState` under ``directory``, one sub-folder per iteration."""

    def __init__(self, directory: Path, keep: int = 3):
        import orbax.checkpoint as ocp  # imported when a run writes or reads checkpoints

        self._ocp = ocp
        self.directory = Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def save(self, state: LoopState) -> int:
        """Write ``state`` (blocking until it is on disk); returns the iteration saved."""
        iteration = iterations_done(state)
        if iteration not in self._manager.all_steps():
            args = self._ocp.args.StandardSave(_saveable(state))
            self._manager.save(iteration, args=args)
            self._manager.wait_until_finished()
        return iteration

    def latest(self) -> int | None:
        return self._manager.latest_step()

    def restore(self, like: LoopState, iteration: int | None = None) -> LoopState:
        """The checkpoint at ``iteration`` (default: the latest), shaped like ``like``."""
        iteration = self.latest() if iteration is None else iteration
        if iteration is None:
            raise ConfigError(f"no checkpoint in {str(self.directory)!r}")
        target = jax.tree.map(self._ocp.utils.to_shape_dtype_struct, _saveable(like))
        saved = self._manager.restore(iteration, args=self._ocp.args.StandardRestore(target))
        return _restored(saved, like)

    def close(self) -> None:
        self._manager.close()


def _saveable(state: LoopState) -> dict[str, Any]:
    """The state as ``{leaf index: array}`` of the leaves that hold data: typed PRNG keys as their
    raw key data; zero-size arrays (some Brax states have them) and non-array leaves, which
    orbax cannot write and which carry nothing a restore needs beyond their shape, left out."""
    leaves = jax.tree.leaves(_raw_keys(state))
    return {_name(i): x for i, x in enumerate(leaves) if _holds_data(x)}


def _restored(saved: dict[str, Any], like: LoopState) -> LoopState:
    """``like`` with every leaf that holds data taken from ``saved``."""
    raw = _raw_keys(like)
    leaves, treedef = jax.tree.flatten(raw)
    leaves = [saved[_name(i)] if _holds_data(x) else x for i, x in enumerate(leaves)]
    state = jax.tree.unflatten(treedef, leaves)
    return state._replace(key=jax.random.wrap_key_data(state.key))


def _raw_keys(state: LoopState) -> LoopState:
    return state._replace(key=jax.random.key_data(state.key))


def _holds_data(x: Any) -> bool:
    return isinstance(x, jax.Array | np.ndarray) and x.size > 0


def _name(index: int) -> str:
    return f"leaf_{index:05d}"


def find_non_finite(state: LoopState) -> str | None:
    """The first fragment (and leaf path) whose state holds a NaN or inf, or ``None``."""
    for name, fragment_state in state.fragments.items():
        leaves = jax.tree_util.tree_leaves_with_path(fragment_state)
        floats = [(p, x) for p, x in leaves if jax.numpy.issubdtype(x.dtype, jax.numpy.floating)]
        if not floats:
            continue
        finite = jax.device_get(_all_finite([x for _, x in floats]))
        for (path, _), ok in zip(floats, finite, strict=True):
            if not ok:
                return f"{name}{jax.tree_util.keystr(path)}"
    return None


@jax.jit
def _all_finite(leaves: list[jax.Array]) -> list[jax.Array]:
    return [jax.numpy.isfinite(x).all() for x in leaves]


def check_metrics(metrics: dict[str, np.ndarray], first_iteration: int, fragment: str) -> None:
    """Raise :class:`NonFiniteError` at the first iteration whose metrics are not finite."""
    for key, values in metrics.items():
        per_iteration = np.reshape(values, (len(values), -1))  # [n] or [n, seeds]
        bad = np.flatnonzero(~np.isfinite(per_iteration).all(axis=1))
        if bad.size:
            value = per_iteration[bad[0]][~np.isfinite(per_iteration[bad[0]])][0]
            raise NonFiniteError(
                f"non-finite {key} ({value}) from fragment {fragment!r} "
                f"at iteration {first_iteration + int(bad[0]) + 1}"
            )

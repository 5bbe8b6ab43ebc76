"""Checkpoints of the whole loop state with orbax: every fragment's state (parameters, optimizer
moments, target networks, replay buffer, environment state, step counters), the key stream and
the iteration counter. Restoring one and running on computes exactly what an uninterrupted run
computes (tests/run/test_checkpoint.py).

orbax writes each checkpoint into a temporary folder and renames it into place once complete, so
a crash while writing leaves the previous checkpoints as they were; ``keep`` bounds how many stay.

Each checkpoint also carries the resolved configuration it was written under (orbax's per-step
``custom_metadata``), which a resume compares with its own, and a manifest of its files' sizes and
SHA-256 digests (``MANIFEST``, written once orbax has renamed the folder into place). A checkpoint
whose files disagree with its manifest, or which has none and fails to restore, is damaged:
:meth:`Checkpointer.restore` skips it for the newest intact one and says which it skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import shutil
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl_fdg.core.loop import iterations_done
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError, error_line, warn
from jaxrl_fdg.run import quiet, versions

FOLDER = "checkpoints"
MANIFEST = "jaxrl_fdg_manifest.json"


class NonFiniteError(RuntimeError):
    """A fragment's state or outputs hold NaN or inf; names the fragment and the iteration."""


class Checkpointer:
    """Saves and restores :class:`LoopState` under ``directory``, one sub-folder per iteration.

    ``config`` (the resolved configuration, as ``config.to_mapping`` gives it) and the versions
    this process runs under (``run.versions``) are stored with every checkpoint saved;
    :meth:`stored_config` and :meth:`stored_versions` read them back.
    """

    def __init__(
        self,
        directory: Path,
        keep: int = 3,
        config: Mapping[str, Any] | None = None,
        primary: bool = True,
    ):
        """``primary``: this process writes what is one per checkpoint (the manifest) and
        deletes; in a run across processes every process saves and restores its own shards."""
        self.directory = Path(directory).absolute()
        if self.directory.exists() and not self.directory.is_dir():
            raise ConfigError(
                f"{str(self.directory)!r} is a file, not a folder of checkpoints: move it aside "
                "(the run keeps its checkpoints there)"
            )
        self.config = dict(config) if config is not None else None
        self.primary = primary
        self.keep = keep
        self.versions = versions.current(self.config)
        self.skipped: list[tuple[int, str]] = []  # what the last restore passed over, and why
        self._failed = False
        self.directory.mkdir(parents=True, exist_ok=True)

    @functools.cached_property
    def _ocp(self) -> Any:
        """orbax.checkpoint, imported on the first read or write (about 0.2 s that a run would
        otherwise spend before its first iteration; its first save is usually its last)."""
        import orbax.checkpoint as ocp

        quiet.drop_closed_loop_reports()
        return ocp

    @functools.cached_property
    def _manager(self) -> Any:
        # Saving blocks until the checkpoint is on disk either way (``save``); orbax's
        # asynchronous saving would add threads that wait for its folder to be made, which a
        # failed mkdir leaves waiting ~300 s at exit (a file named ``checkpoints``).
        options = self._ocp.CheckpointManagerOptions(
            max_to_keep=self.keep, create=True, enable_async_checkpointing=False
        )
        # The manager reads every checkpoint's metadata as it starts, and logs an ERROR for
        # each it cannot parse (a write cut short): candidates() names those checkpoints in
        # one warning and skips them.
        with quiet.orbax_logs():
            return self._ocp.CheckpointManager(self.directory, options=options)

    def save(self, state: LoopState) -> int:
        """Write ``state`` (blocking until it is on disk); returns the iteration saved."""
        iteration = iterations_done(state)
        if iteration in self._manager.all_steps():
            return iteration
        args = self._ocp.args.StandardSave(_saveable(state))
        metadata = {"versions": self.versions}
        if self.config is not None:
            metadata["config"] = self.config
        try:
            with quiet.orbax_logs():  # orbax logs each failing thread; one error is reported
                self._manager.save(iteration, args=args, custom_metadata=metadata)
                self._manager.wait_until_finished()
        except Exception as e:  # a full disk, a lost permission: orbax's many shapes of it
            self._failed = True
            for tmp in self.directory.glob(f"{iteration}.orbax-checkpoint-tmp*"):
                shutil.rmtree(tmp, ignore_errors=True)
            raise _write_error(e, f"cannot write the checkpoint at iteration {iteration}") from None
        if self.primary:
            _write_manifest(self.directory / str(iteration))
        return iteration

    def latest(self) -> int | None:
        return self._manager.latest_step()

    def steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def damage(self, iteration: int) -> str | None:
        """Why the checkpoint at ``iteration`` cannot be read (a missing, resized or altered
        file), or ``None`` when its files match its manifest or it has no manifest."""
        return _check_manifest(self.directory / str(iteration))

    def stored_config(self, iteration: int) -> dict[str, Any] | None:
        """The configuration saved with the checkpoint at ``iteration`` (``None``: none saved)."""
        return self._stored(iteration, "config")

    def stored_versions(self, iteration: int) -> dict[str, Any] | None:
        """The versions the checkpoint at ``iteration`` was written under (``None``: not saved,
        a checkpoint older than the record)."""
        return self._stored(iteration, "versions")

    def _stored(self, iteration: int, key: str) -> dict[str, Any] | None:
        with quiet.orbax_logs():
            try:
                custom = self._manager.metadata(iteration).custom_metadata
            except Exception:  # an unreadable metadata file: as if none were stored
                return None
        value = (custom or {}).get(key)
        return value if isinstance(value, dict) else None

    def candidates(self, iteration: int | None = None) -> list[int]:
        """The iterations a restore tries, newest first: ``[iteration]`` if given (which must
        name an intact checkpoint), else every checkpoint not known to be damaged. Those
        passed over are added to :attr:`skipped`."""
        steps = self.steps()
        if iteration is not None:
            if iteration not in steps:
                raise ConfigError(
                    f"no checkpoint at iteration {iteration} in {str(self.directory)!r} "
                    f"(checkpoints: {_listing(steps)})"
                )
            why = self.damage(iteration)
            if why is not None:
                raise ConfigError(f"the checkpoint at iteration {iteration} is damaged: {why}")
            return [iteration]
        found = []
        for step in reversed(steps):
            why = self.damage(step)
            if why is None:
                found.append(step)
            else:
                self.skipped.append((step, why))
        return found

    def restore(self, like: LoopState, iteration: int | None = None) -> LoopState:
        """The checkpoint at ``iteration`` (default: the newest intact one), shaped like
        ``like``. Damaged checkpoints are skipped, with a warning naming each one."""
        self.skipped = []
        target = jax.tree.map(self._ocp.utils.to_shape_dtype_struct, _saveable(like))
        for step in self.candidates(iteration):
            unlike = self._unlike(step, target, like)
            if unlike is not None:
                raise ConfigError(
                    f"the checkpoint at iteration {step} holds a state unlike the one this run "
                    f"makes ({unlike}): its algorithm or environment code changed since it was "
                    "written; resume with the code it ran, or start a new run"
                    + versions.note(self.stored_versions(step), self.versions)
                )
            try:
                with quiet.orbax_logs():
                    args = self._ocp.args.StandardRestore(target)
                    saved = self._manager.restore(step, args=args)
            except Exception as e:
                # Files as written (its manifest says so) that do not read: this install reads
                # them otherwise, which no older checkpoint would change; never skip (and so
                # delete) it. Without a manifest it may be a write cut short: skipped.
                if iteration is not None or (self.directory / str(step) / MANIFEST).is_file():
                    raise ConfigError(
                        f"the checkpoint at iteration {step} cannot be read: {error_line(e)}"
                        + versions.note(self.stored_versions(step), self.versions)
                    ) from None
                self.skipped.append((step, error_line(e)))
                continue
            for skipped, why in self.skipped:
                warn(f"skipped checkpoint {skipped} ({why}); using iteration {step}")
            return _restored(saved, like)
        if self.skipped:
            raise ConfigError(
                f"no intact checkpoint in {str(self.directory)!r}: "
                + "; ".join(f"{s}: {why}" for s, why in self.skipped)
            )
        raise ConfigError(f"no checkpoint in {str(self.directory)!r}")

    def _unlike(self, step: int, target: dict[str, Any], like: LoopState) -> str | None:
        """How the arrays stored at ``step`` differ in number, shape or dtype from ``target``
        (the first one named by its place in the state, and how many differ); ``None`` where
        they match or the metadata cannot be read (the restore then says what is wrong). Read
        before restoring: a restore of other shapes fails deep in orbax, whose threads then
        print pages of tracebacks."""
        try:
            with quiet.orbax_logs(), self._ocp.StandardCheckpointer() as reader:
                stored = reader.metadata(self.directory / str(step) / "default")
            stored = getattr(stored, "item_metadata", stored)
            stored = dict(getattr(stored, "tree", stored))
        except Exception:
            return None
        if set(stored) != set(target):
            return f"{len(stored)} arrays stored, {len(target)} now"
        paths = [
            jax.tree_util.keystr(p)
            for p, _ in jax.tree_util.tree_flatten_with_path(_raw_keys(like))[0]
        ]
        differ = []
        for name, now in target.items():
            was = stored[name]
            if tuple(was.shape) != tuple(now.shape) or np.dtype(was.dtype) != np.dtype(now.dtype):
                where = paths[int(name.rsplit("_", 1)[-1])]
                differ.append(
                    f"state{where}: {tuple(was.shape)} {np.dtype(was.dtype)} stored, "
                    f"{tuple(now.shape)} {np.dtype(now.dtype)} now"
                )
        if not differ:
            return None
        more = f"; {len(differ) - 1} more arrays differ" if len(differ) > 1 else ""
        return differ[0] + more

    def discard_skipped(self) -> None:
        """Delete the checkpoints the last restore skipped, so that the run saves those
        iterations afresh and ``keep`` counts intact checkpoints only."""
        from jaxrl_fdg.policies import distributed

        if self.primary:
            for step, _ in self.skipped:
                shutil.rmtree(self.directory / str(step), ignore_errors=True)
        if self.skipped:
            distributed.barrier("jaxrl_fdg: skipped checkpoints deleted")
            self._manager.reload()

    def close(self) -> None:
        if "_manager" not in self.__dict__:  # never opened: nothing to finish
            return
        try:
            with quiet.orbax_logs():
                self._manager.close()
        except Exception as e:  # it re-raises a failed save's error, reported already
            if not self._failed:
                raise _write_error(e, "cannot finish writing checkpoints") from None


def _write_error(error: Exception, doing: str) -> OSError:
    """One ``OSError`` for orbax's and tensorstore's write failures, with the system's words
    for the cause (``No space left on device``) where the error carries an errno."""
    if isinstance(error, OSError) and error.errno:
        return OSError(error.errno, f"{doing}: {error.strerror}")
    code = re.search(r"os_error_code='?(\d+)", str(error))
    if code:
        return OSError(int(code.group(1)), f"{doing}: {os.strerror(int(code.group(1)))}")
    return OSError(f"{doing}: {error_line(error)}")


def _write_manifest(folder: Path) -> None:
    files = {
        str(f.relative_to(folder)): [f.stat().st_size, _digest(f)]
        for f in sorted(folder.rglob("*"))
        if f.is_file() and f.name != MANIFEST
    }
    tmp = folder / (MANIFEST + ".tmp")
    try:
        tmp.write_text(json.dumps(files, indent=0))
        os.replace(tmp, folder / MANIFEST)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _check_manifest(folder: Path) -> str | None:
    manifest = folder / MANIFEST
    if not folder.is_dir():
        return "missing"
    if not manifest.is_file():
        # Written by an earlier version, or the writer died between orbax's rename and the
        # manifest: only a restore can tell. A folder with no files at all is not a checkpoint.
        return None if any(f.is_file() for f in folder.rglob("*")) else "empty folder"
    try:
        files = json.loads(manifest.read_text())
    except (ValueError, UnicodeDecodeError):
        return "unreadable manifest"
    for name, (size, digest) in files.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size} bytes, {size} when written"
        if _digest(path) != digest:
            return f"{name} changed since it was written"
    return None


def _digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _listing(steps: list[int]) -> str:
    return ", ".join(map(str, steps)) if steps else "none"


def _saveable(state: LoopState) -> dict[str, Any]:
    """The state as ``{leaf index: array}`` of the leaves that hold data: typed PRNG keys as their
    raw key data; zero-size arrays (some Brax states have them) and non-array leaves, which
    orbax cannot write and which carry nothing a restore needs beyond their shape, left out."""
    leaves = jax.tree.leaves(_raw_keys(state))
    return {_name(i): x for i, x in enumerate(leaves) if _holds_data(x)}


def _restored(saved: dict[str, Any], like: LoopState) -> LoopState:
    """``like`` with every leaf that holds data taken from ``saved`` (``like`` may be shapes
    only, ``jax.ShapeDtypeStruct`` leaves: its zero-size leaves are then made empty arrays)."""
    raw = _raw_keys(like)
    leaves, treedef = jax.tree.flatten(raw)
    leaves = [
        saved[_name(i)] if _holds_data(x) else _empty_if_shape(x) for i, x in enumerate(leaves)
    ]
    state = jax.tree.unflatten(treedef, leaves)
    return state._replace(key=jax.random.wrap_key_data(state.key))


def _raw_keys(state: LoopState) -> LoopState:
    if isinstance(state.key, jax.ShapeDtypeStruct):
        return state._replace(key=jax.eval_shape(jax.random.key_data, state.key))
    return state._replace(key=jax.random.key_data(state.key))


def _holds_data(x: Any) -> bool:
    shaped = isinstance(x, jax.Array | np.ndarray | jax.ShapeDtypeStruct)
    return shaped and math.prod(x.shape) > 0


def _empty_if_shape(x: Any) -> Any:
    return jax.numpy.zeros(x.shape, x.dtype) if isinstance(x, jax.ShapeDtypeStruct) else x


def _name(index: int) -> str:
    return f"leaf_{index:05d}"


def find_non_finite(state: LoopState) -> str | None:
    """The first fragment (and leaf path) whose state holds a NaN or inf, or ``None``.

    A fragment in host memory (the CPU backend) is checked with numpy, which reads its buffers
    where they are: a compiled check (a program to trace and compile per run, inside the run's
    time) cost the default PPO 0.3–0.5 s at its one checkpoint, a tenth of its run. A fragment on
    an accelerator is checked by one compiled program, so that only a flag per leaf comes back;
    one per fragment, because fragments may sit on different devices (the actor/learner split),
    and one program takes its arguments from one set of devices."""
    for name, fragment_state in state.fragments.items():
        floats = [
            (path, x)
            for path, x in jax.tree_util.tree_leaves_with_path(fragment_state)
            if jax.numpy.issubdtype(x.dtype, jax.numpy.floating)
        ]
        if not floats:
            continue
        leaves = [x for _, x in floats]
        if not all(getattr(x, "is_fully_addressable", True) for x in leaves):
            finite = _finite_across_processes(leaves)
        elif all(_in_host_memory(x) for x in leaves):
            finite = [bool(np.isfinite(np.asarray(x)).all()) for x in leaves]
        else:
            finite = np.asarray(_all_finite(leaves))
        for (path, _), ok in zip(floats, finite, strict=True):
            if not ok:
                return f"{name}{jax.tree_util.keystr(path)}"
    return None


def _finite_across_processes(leaves: list[jax.Array]) -> np.ndarray:
    """``[len(leaves)]`` bools for arrays that span processes: each process looks at its own
    shards, and every process gets the answer for all of them (a collective, so that all of
    them save the checkpoint or all refuse it)."""
    from jaxrl_fdg.policies import distributed

    local = np.array(
        [all(np.isfinite(np.asarray(s.data)).all() for s in x.addressable_shards) for x in leaves]
    )
    return distributed.every_process(local).all(axis=0)


def _in_host_memory(x: Any) -> bool:
    return not isinstance(x, jax.Array) or all(d.platform == "cpu" for d in x.devices())


@jax.jit
def _all_finite(leaves: list[jax.Array]) -> jax.Array:
    """``[len(leaves)]`` bools: whether each leaf is free of NaN and inf."""
    return jax.numpy.stack([jax.numpy.isfinite(x).all() for x in leaves])


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


def describe_nan(error: FloatingPointError) -> str:
    """``--debug-nans``'s error in one line: JAX's message (it names the op), the fragment whose
    code ran the op and the line of that code, read from the traceback's frames."""
    fragment, line = None, None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        code = frame.f_code
        frag = frame.f_locals.get("frag") if code.co_name == "call" else None
        if frag is not None and hasattr(frag, "name"):
            fragment, line = frag.name, None  # the innermost fragment call wins
        elif fragment is not None and "/jax/" not in code.co_filename.replace(os.sep, "/"):
            line = f"{Path(code.co_filename).name}:{lineno} in {code.co_name}"
    message = str(error).strip().splitlines()[0] if str(error).strip() else "NaN"
    where = [f"fragment {fragment!r}"] if fragment else []
    where += [line] if line else []
    return message + (f" ({', '.join(where)})" if where else "")

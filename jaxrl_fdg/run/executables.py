"""A cache of programs above JAX's: a run of a configuration seen before loads the executables
the run before compiled and ran, without tracing, lowering or compiling anything.

JAX's persistent compilation cache (:mod:`~jaxrl_fdg.run.compile_cache`) saves XLA's compile,
but its key is computed from the lowered program, so every run still traces and lowers each
program first: about 1.7 s of a 2.5 s warm start for the default PPO on two CPU cores. This
cache is keyed before any tracing, by what decides the programs:

* the resolved configuration (every setting and hyperparameter; the seed too, which a
  population's programs hold as a constant), less the output folder;
* the code: the SHA-256 of every source file of the framework, and of every module the process
  had imported from outside the installed libraries when it made its first key (the user's
  algorithm and environment files and what they import), and the versions of the libraries that
  make programs (:data:`LIBRARIES`) and of every other library module imported by then;
* every ``jax.config`` value, ``XLA_FLAGS`` and the other ``JAX_``/``XLA_`` variables, the
  Python version, and the devices (platform, kind, count, the backend's version).

An entry holds each program as StableHLO (:class:`~jaxrl_fdg.policies.exported.Exported`),
what tracing taught the fusion mode on the host side (where each metric sits in a chunk's rows),
the executables XLA compiled from that StableHLO in the writing process
(``jax.experimental.serialize_executable``: the mode's own programs, not ``init``, which is
compiled with options of its own), and the state ``init`` returned where it is small. The run
that writes an entry runs the exported programs too, so every run of the configuration runs the
same program: the next loads the executables themselves and starts from the kept state, which
is all a warm start then waits for; a program without an executable (an evaluation program,
still compiling when the entry was written; ``init`` where its state was too large) is lowered
from its StableHLO, which traces nothing, and JAX's persistent cache serves its compile. Since
such an entry exists only for code and settings that ran before, a run that finds one skips the
environment's contract check too (:func:`check_environment
<jaxrl_fdg.config.check_environment>`), which traces a reset and a step. Entries are written
beside JAX's cache (``<cache>-executables/``, at most :data:`MAX_ENTRIES`, the least recently
used removed first), atomically; one that cannot be read is removed and the run traces.

What the key cannot see: code changed in memory only (a monkeypatched function, a function
redefined in a notebook whose module has no file). A module whose source changed after it was
imported turns the cache off for the process, where Python kept its bytecode (the default), whose
header says from what source it was compiled; without bytecode (``PYTHONDONTWRITEBYTECODE``)
such an edit is not seen either. ``JAXRL_FDG_EXECUTABLE_CACHE=0`` turns
it off; so does turning JAX's persistent cache off. Only the ``scan`` mode opts in
(``Plan.cacheable``), on placements whose programs the shapes describe
(``Placement.compiles_from_shapes``); runs of algorithms or environments registered from Python
at run time, runs across processes, ``--profile trace`` and ``--debug-nans`` are not cached.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pickle
import platform
import sys
import sysconfig
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import jax

from jaxrl_fdg.policies.exported import Exported, Serialized

SWITCH = "JAXRL_FDG_EXECUTABLE_CACHE"  # "0" turns the cache off
MAX_ENTRIES = 64
FORMAT = 2
SUFFIX = ".executables"


class Entry(NamedTuple):
    """What a hit gives: each program's exported form (:class:`Exported`) by name, what
    tracing them set on the host side that the fusion mode keeps (where a chunk's metrics sit
    in its rows), and the executables the run that stored the entry compiled and ran, by name
    (:data:`~jaxrl_fdg.policies.exported.Serialized`; those it had compiled by then, where the
    backend serializes them), and the state ``init`` returned (``None`` where it was too large
    to keep: ``init`` then runs again)."""

    programs: dict[str, Exported]
    traced: Any
    compiled: dict[str, Serialized]
    initial: Any = None


class ExecutableCache:
    """One configuration's entry in the cache folder ``directory``: :meth:`load` it, or
    :meth:`store` the programs a run exported. ``outcome`` says which happened: ``"loaded"``,
    ``"stored"``, ``"not stored"`` (a program could not be exported, or the write failed), or
    ``"traced"`` (neither yet)."""

    def __init__(self, directory: Path, key: str):
        self.directory = directory
        self.key = key
        self.path = directory / f"{key}{SUFFIX}"
        self.outcome = "traced"

    def holds(self) -> bool:
        """Whether the folder holds an entry under this key (not yet read: it may not load)."""
        return self.path.is_file()

    def load(self) -> Entry | None:
        """The entry, or ``None`` on a miss. An entry that does not read is removed."""
        try:
            blob = self.path.read_bytes()
        except OSError:
            return None
        try:
            saved = pickle.loads(blob)
            if saved.get("format") != FORMAT or saved.get("key") != self.key:
                raise ValueError("another format")
            programs, compiled = dict(saved["programs"]), dict(saved["compiled"])
            entry = Entry(programs, saved["traced"], compiled, saved["initial"])
            for program in entry.programs.values():
                program.args  # noqa: B018 (deserializes: a damaged blob raises here)
        except Exception:  # written by another version, cut short, ...: trace instead
            with contextlib.suppress(OSError):  # a cache folder this user cannot write
                self.path.unlink(missing_ok=True)
            return None
        with contextlib.suppress(OSError):
            os.utime(self.path)  # most recently used
        self.outcome = "loaded"
        return entry

    def store(
        self,
        programs: dict[str, Exported],
        traced: Any,
        compiled: Mapping[str, Serialized] | None = None,
        initial: Any = None,
    ) -> None:
        """Write the entry (atomically: a reader sees the whole entry or none). ``initial``:
        the state ``init`` returned, where it is kept (a pytree of arrays, copied to the host
        as it is pickled)."""
        entry = {"programs": programs, "traced": traced, "compiled": dict(compiled or {})}
        try:
            blob = pickle.dumps({"format": FORMAT, "key": self.key, **entry, "initial": initial})
            self.directory.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.partial")
            partial.write_bytes(blob)
            os.replace(partial, self.path)
            _prune(self.directory)
            self.outcome = "stored"
        except Exception:  # a cache that cannot be written costs the next run its trace
            self.outcome = "not stored"


def for_run(resolved: Any) -> ExecutableCache | None:
    """The cache entry of the run ``resolved`` describes, or ``None`` where the run is not
    cached (see the module's docstring). Which programs a run has besides its mode's (its
    evaluation's, say) follows from its configuration and code, which the key holds; an entry
    whose programs differ from the run's is not used (``Plan.start``)."""
    compile_cache = jax.config.jax_compilation_cache_dir
    config = resolved.config
    if (
        not enabled()
        or not jax.config.jax_enable_compilation_cache
        or not compile_cache
        or jax.process_count() > 1
        or config.profile == "trace"
        or not resolved.placement.compiles_from_shapes(resolved.request)
        or not _named_by_code(config.algo, config.env)
    ):
        return None
    from jaxrl_fdg.config import to_mapping

    try:
        key = key_of(to_mapping(resolved))
    except Exception:  # ChangedSinceImport (the key would describe the file, not the code
        return None  # that runs), or a JAX without one of the settings read
    return ExecutableCache(directory(Path(compile_cache)), key)


def _named_by_code(algo: str, env: str | None) -> bool:
    """Whether the algorithm and environment are what files say they are: built-ins, installed
    entry points, references to a module or file; not objects registered from Python at run
    time, which the key cannot see."""
    from jaxrl_fdg import plugins
    from jaxrl_fdg.core import algorithm
    from jaxrl_fdg.envs import registry

    if algo in algorithm._REGISTRY and plugins.split_reference(algo) is None:
        return False
    if env is None or plugins.split_reference(env) is not None or "/" in env:
        return True
    factory = registry._REGISTRY.get(env)
    return factory is None or getattr(factory, "__module__", "").startswith("jaxrl_fdg.")


def directory(compile_cache: Path) -> Path:
    """The folder beside JAX's cache folder ``compile_cache`` that holds the entries."""
    return compile_cache.with_name(f"{compile_cache.name}-executables")


def enabled() -> bool:
    return os.environ.get(SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def key_of(config: Mapping[str, Any]) -> str:
    """The key of the programs of the resolved configuration ``config``."""
    material = {
        "format": FORMAT,
        "config": {k: v for k, v in config.items() if k != "out"},
        "code": loaded_code(),
        "libraries": library_versions(),
        "jax config": {k: repr(v) for k, v in sorted(jax.config.values.items())},
        "environment": {
            k: v for k, v in sorted(os.environ.items()) if k.startswith(("JAX_", "XLA_", "TF_"))
        },
        "python": platform.python_version(),
        "devices": _devices(),
    }
    text = json.dumps(material, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _devices() -> list[str]:
    devices = jax.devices()
    client = devices[0].client
    version = getattr(client, "platform_version", "")
    return [
        f"{d.platform}:{d.device_kind}:{d.id}:{version}:{jax.process_index()}/{jax.process_count()}"
        for d in devices
    ]


_DIGESTS: dict[str, tuple[int, int, str]] = {}  # path -> (mtime_ns, size, sha256), this process
_SEEN: tuple[str, ...] | None = None  # the modules imported when the first key was made

# The framework's packages, whose every source file the key holds, imported or not.
FRAMEWORK = ("jaxrl_fdg", "jaxrl_fdg.envs", "jaxrl_fdg.fragments", "jaxrl_fdg.profiling")
# Libraries that make programs, whose versions the key holds whether imported yet or not (the
# framework imports some of them only while it traces).
LIBRARIES = (
    "jax", "jaxlib", "flax", "optax", "numpy", "scipy", "ml_dtypes", "chex", "gymnax", "brax",
    "mujoco", "mujoco-mjx", "playground", "craftax", "jumanji", "navix", "xminigrid", "envpool",
)  # fmt: skip


class ChangedSinceImport(Exception):
    """The source of a module changed after this process imported it: the code it runs is not
    the code on disk."""


def loaded_code() -> dict[str, str]:
    """The code a program may come from, as ``{path or module: digest}``: the SHA-256 of every
    source file of the framework, and of each module imported from outside the installed
    libraries and Python's own (the user's algorithm and environment files and what they import)
    with the version of each library module, as they stood when this process first made a key
    (a module imported later, by a run's own writers say, does not change the next run's key).
    A module without a file (``python -c``, a notebook) is named without one.

    Raises:
      ChangedSinceImport: the source of an imported module changed after it was imported.
    """
    global _SEEN
    if _SEEN is None:
        _SEEN = tuple(sorted(name for name in list(sys.modules) if "." not in name or
                             not name.startswith(FRAMEWORK)))  # fmt: skip
    python, libraries = _python_roots(), _library_roots()
    imported = {getattr(m, "__file__", None): m for m in list(sys.modules.values())}
    found = {path: _digest(path, imported.get(path)) for path in _framework_files()}
    for name in _SEEN:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            if name == "__main__":
                found[name] = "no file"
        elif path.startswith(python) and not path.startswith(libraries):
            continue  # Python's own (the key holds Python's version)
        elif path.startswith(libraries):
            if "." not in name:
                found[f"module {name}"] = _stamp(path)
        elif path.endswith(".py"):
            found[path] = _digest(path, module)
    return found


def _framework_files() -> list[str]:
    import importlib.util

    files = set()
    for package in FRAMEWORK:
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            files.update(str(p) for p in Path(root).rglob("*.py"))
    return sorted(files)


def _digest(path: str, module: Any) -> str:
    """The SHA-256 of source file ``path`` (once per version of the file in this process)."""
    try:
        stat = os.stat(path)
    except OSError:
        return "unreadable"
    if module is not None and _changed_since_compiled(module, stat):
        raise ChangedSinceImport(path)
    known = _DIGESTS.get(path)
    if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size):
        return known[2]
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"
    _DIGESTS[path] = (stat.st_mtime_ns, stat.st_size, digest)
    return digest


def _changed_since_compiled(module: Any, stat: os.stat_result) -> bool:
    """Whether ``module``'s source differs from the one its bytecode was compiled from: the
    cached bytecode's header holds the source's modification time and size when Python compiled
    it, as it imported the module. Unknown (no bytecode file, hash-based bytecode, bytecode not
    written by this process): ``False``."""
    if sys.dont_write_bytecode:  # a bytecode file there was written by another process
        return False
    cached = getattr(module, "__cached__", None)
    try:
        with open(cached, "rb") as f:
            header = f.read(16)
    except (OSError, TypeError):
        return False
    if len(header) < 16 or int.from_bytes(header[4:8], "little") != 0:
        return False
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return (int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF) != (mtime, size)


def _stamp(path: str) -> str:
    """A library module's file's size and time (a reinstall rewrites it; the versions of the
    libraries that make programs are in the key apart). Nothing is asked of the module itself: a
    package imported in part (gymnax, :mod:`jaxrl_fdg.envs.gymnax_imports`) runs its whole
    ``__init__`` on the first attribute it lacks, seaborn and scipy.stats included."""
    try:
        stat = os.stat(path)
    except OSError:
        return "unreadable"
    return f"{stat.st_size} {stat.st_mtime_ns}"


def _library_roots() -> tuple[str, ...]:
    """Where installed libraries live."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("purelib", "platlib") if k in paths}
    roots |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    return tuple(os.path.join(root, "") for root in roots)


def _python_roots() -> tuple[str, ...]:
    """Where Python's own modules live."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib") if k in paths}
    roots |= {os.path.dirname(os.__file__)}
    return tuple(os.path.join(root, "") for root in roots)


@functools.cache
def library_versions() -> dict[str, str]:
    """The installed version of each of :data:`LIBRARIES`, once per process: ``{"jax":
    "0.10.2", "jaxlib": "0.10.2", ...}``."""
    from jaxrl_fdg.run import versions

    return versions.installed(LIBRARIES)


def _prune(folder: Path) -> None:
    """Keep the :data:`MAX_ENTRIES` most recently used entries; remove writes left partial an
    hour ago or more (by a process that ended while writing)."""
    entries = []
    now = time.time()
    for path in folder.iterdir():
        try:
            modified = path.stat().st_mtime
        except OSError:
            continue
        if path.name.endswith(".partial"):
            if now - modified > 3600:
                path.unlink(missing_ok=True)
        elif path.name.endswith(SUFFIX):
            entries.append((modified, path))
    for _, path in sorted(entries, reverse=True)[MAX_ENTRIES:]:
        path.unlink(missing_ok=True)

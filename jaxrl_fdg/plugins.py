"""User code by reference: ``package.module:NAME`` or ``path/to/file.py:NAME``, and entry points.

The command line reaches algorithms and environments written outside the package in two ways:

* a *reference* names where the object lives: ``--algo mylab.algos:VTRACE`` imports
  ``mylab.algos`` and takes its ``VTRACE``; ``--algo experiments/vtrace.py:SPEC`` loads that
  file. ``--env mylab.envs:Maze-v0`` imports ``mylab.envs`` (which registers ``Maze-v0``, or a
  gymnasium id) and then builds ``Maze-v0``. A run folder records the reference, so
  ``evaluate``, ``--resume``, ``plot`` and ``compare`` find the code again in a fresh process.
* an installed package declares *entry points* in the groups :data:`ALGORITHMS` and
  :data:`ENVIRONMENTS`; their names appear in ``jaxrl-fdg list`` and work as plain names. The
  built-in algorithms are found this way too.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from jaxrl_fdg.errors import ConfigError, error_line

ALGORITHMS = "jaxrl_fdg.algorithms"
ENVIRONMENTS = "jaxrl_fdg.envs"

_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def split_reference(text: str) -> tuple[str, str] | None:
    """``(module or file, rest)`` for a reference, ``None`` for a plain name.

    The part before the first ``:`` must be a dotted module path or a path ending in ``.py``, so
    that names with a colon of their own (``brax/ant:generalized``) are not taken for one."""
    where, sep, rest = text.partition(":")
    if not sep or not rest:
        return None
    if where.endswith(".py") or _MODULE.fullmatch(where):
        return where, rest
    return None


def normalize(text: str) -> str:
    """A reference to a file made absolute (so it names the same file from any folder); any
    other text as it is."""
    parts = split_reference(text)
    if parts is None or not parts[0].endswith(".py"):
        return text
    return f"{Path(parts[0]).expanduser().resolve()}:{parts[1]}"


def source_file(text: str) -> Path | None:
    """The file of code a reference names (``algo.py`` of ``algo.py:SPEC``, the module's file of
    ``pkg.mod:SPEC``, found without importing it), or ``None`` for a plain name or a module that
    is not there."""
    parts = split_reference(text)
    if parts is None:
        return None
    if parts[0].endswith(".py"):
        return Path(parts[0]).expanduser()
    try:
        found = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    return Path(found.origin) if found is not None and found.origin else None


def display_name(text: str) -> str:
    """What a reference names (``SPEC`` of ``pkg.mod:SPEC``, ``Maze-v0`` of
    ``pkg.envs:Maze-v0``); a plain name as it is."""
    parts = split_reference(text)
    return text if parts is None else parts[1]


# The files of the user's code that references loaded: an error raised in one of them is the
# user's, said in one line (:func:`user_error`).
USER_FILES: set[Path] = set()


def import_module(where: str, purpose: str) -> Any:
    """The module ``where`` names (a dotted path, or a ``.py`` file loaded under a name derived
    from its absolute path); a :class:`ConfigError` saying what failed for ``purpose``: the
    module cannot be found, its code has a syntax error, or running it raised."""
    source = source_file(where + ":_")
    if source is not None:  # before it runs: an error raised as it runs is the user's too
        with contextlib.suppress(OSError):
            USER_FILES.add(source.resolve())
    try:
        if where.endswith(".py"):
            module = _load_file(Path(where).expanduser().resolve(), purpose)
        else:
            module = importlib.import_module(where)
    except ImportError as e:
        raise ConfigError(f"{purpose}: cannot import module {where!r} ({e})") from None
    except SyntaxError as e:
        raise ConfigError(f"{purpose}: {e.filename}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:  # the module's own code raised as it ran
        raise ConfigError(
            f"{purpose}: importing {where!r}: {user_error(e) or error_line(e)}"
        ) from None
    if getattr(module, "__file__", None):
        USER_FILES.add(Path(module.__file__).resolve())
    return module


def user_error(error: BaseException) -> str | None:
    """``"in your code algo.py, line 12, in build: ValueError: ..."`` for an error raised in a
    file of the user's code (the innermost such frame of its traceback, or of the error it was
    raised from), else ``None``."""
    where = user_location(error)
    return None if where is None else f"in your code {where}: {error_line(error)}"


def user_location(error: BaseException) -> str | None:
    """``"algo.py, line 12, in build"``: the innermost frame in the user's code that ``error``
    (or an error it was raised from, unless raised ``from None``: a message that says where
    already) passed through, or ``None``."""
    seen = 0
    while error is not None and seen < 8:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if _is_user(f.filename)]
        if frames:
            return f"{frames[-1].filename}, line {frames[-1].lineno}, in {frames[-1].name}"
        context = None if error.__suppress_context__ else error.__context__
        error, seen = error.__cause__ or context, seen + 1
    return None


def _is_user(filename: str) -> bool:
    try:
        return Path(filename).resolve() in USER_FILES
    except OSError:
        return False


def _load_file(path: Path, purpose: str) -> Any:
    if not path.is_file():
        raise ConfigError(f"{purpose}: file {str(path)!r} does not exist")
    for module in list(sys.modules.values()):  # imported already, by its own name: that module
        where = getattr(module, "__file__", None)
        if where and Path(where).resolve() == path:
            return module
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.stem)
    name = f"jaxrl_fdg_user_{stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load(reference: str, expected: type, purpose: str) -> Any:
    """The object ``module:NAME`` refers to (``NAME`` may be dotted), checked to be an
    ``expected``."""
    parts = split_reference(reference)
    if parts is None:
        raise ConfigError(
            f"{purpose}: {reference!r} is not a reference (package.module:NAME or "
            "path/to/file.py:NAME)"
        )
    where, name = parts
    obj = import_module(where, purpose)
    for attribute in name.split("."):
        if not hasattr(obj, attribute):
            raise ConfigError(f"{purpose}: {where!r} has no attribute {name!r}")
        obj = getattr(obj, attribute)
    if not isinstance(obj, expected):
        raise ConfigError(
            f"{purpose}: {reference!r} is a {type(obj).__name__}, not an {expected.__name__}"
        )
    return obj


@functools.cache
def entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The installed entry points of ``group`` by name (the first of each name, should two
    installed packages declare one)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for point in importlib.metadata.entry_points(group=group):
        found.setdefault(point.name, point)
    return found


def load_entry_point(group: str, name: str) -> Any:
    point = entry_points(group)[name]
    try:
        return point.load()
    except (ImportError, AttributeError) as e:
        raise ConfigError(
            f"entry point {name!r} of group {group!r} ({point.value}) cannot be loaded: {e}"
        ) from None

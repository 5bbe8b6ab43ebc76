"""JaxMARL's games, each imported alone.

``import jaxmarl`` imports every suite JaxMARL has, MABrax's Brax and MuJoCo and STORM among
them: about 9 s on a 2-core CPU, whichever game is made. :func:`jaxmarl_factory` imports the one
module that defines the game asked for (0.5 s for MPE, 1 s for SMAX) and leaves JaxMARL's
packages to run their ``__init__`` when something asks for them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.partial_imports import defining_module, import_alone
from jaxrl_fdg.envs.source_names import jaxmarl_names


def jaxmarl_factory(name: str) -> Callable[..., Any]:
    """What ``jaxmarl.make(name, **kwargs)`` calls for game ``name``: its class, imported alone
    (:func:`~jaxrl_fdg.envs.partial_imports.import_alone`). Where JaxMARL's registry is imported
    already, or the class cannot be found or imported alone (MABrax without Brax, JaxRobotarium's
    games, a JaxMARL laid out otherwise), ``jaxmarl.make`` itself, which says what is missing.

    Raises:
      UnknownEnvironmentError: ``name`` is not one of JaxMARL's games (close matches named).
    """
    names = jaxmarl_names() or tuple(import_jaxmarl().registered_envs)
    if name not in names:
        raise UnknownEnvironmentError(unknown("JaxMARL environment", name, names))
    cls = None if "jaxmarl.registration" in sys.modules else _builtin_classes().get(name)
    where = defining_module("jaxmarl.environments", cls) if cls else None
    if where is not None:
        with contextlib.suppress(ImportError, AttributeError):
            return getattr(import_alone(where[0]), where[1])
    jaxmarl = import_jaxmarl()
    return lambda **kwargs: jaxmarl.make(name, **kwargs)


@functools.cache
def _builtin_classes() -> dict[str, str]:
    """The class ``jaxmarl.make`` builds for each name, read from its ``registration.py``
    without running it: each ``env_id == "NAME"`` branch whose body is ``env = Class(
    **env_kwargs)``, ``{"MPE_simple_spread_v3": "SimpleSpreadMPE", ...}``; empty where the file
    cannot be read."""
    spec = importlib.util.find_spec("jaxmarl")
    if spec is None or not spec.origin:
        return {}
    try:
        tree = ast.parse(Path(spec.origin).with_name("registration.py").read_text("utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    classes = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and len(node.body) == 1:
            name, cls = _compared_name(node.test), _built_class(node.body[0])
            if name is not None and cls is not None:
                classes[name] = cls
    return classes


def _compared_name(test: ast.expr) -> str | None:
    """``"NAME"`` of the test ``env_id == "NAME"``."""
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "env_id"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and isinstance(test.comparators[0].value, str)
    ):
        return test.comparators[0].value
    return None


def _built_class(statement: ast.stmt) -> str | None:
    """``Class`` of the statement ``env = Class(**env_kwargs)``."""
    if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    plain = not call.args and [k.arg for k in call.keywords] == [None]  # only **env_kwargs
    return call.func.id if plain and isinstance(call.func, ast.Name) else None


def probe() -> None:
    """JaxMARL's base module alone, to tell a JaxMARL that fails to import from a bad name."""
    import_alone("jaxmarl.environments.multi_agent_env")


def import_jaxmarl() -> Any:
    """``jaxmarl``, whole, without the lines its import prints about optional submodules.

    Its MABrax module silences Brax's import and then sets ``sys.stdout`` to
    ``sys.__stdout__`` (not to what it was), so both are replaced while it imports. Where a game
    was imported alone before, ``jaxmarl`` is registered but has not run its ``__init__``:
    asking it for ``make`` runs it here, inside the same guard."""
    saved = sys.stdout, sys.__stdout__
    sys.stdout = sys.__stdout__ = io.StringIO()
    try:
        import jaxmarl

        jaxmarl.make  # noqa: B018 -- a package registered empty runs its __init__ now
    finally:
        sys.stdout, sys.__stdout__ = saved
    return jaxmarl

"""gymnax's environments, each imported alone.

``import gymnax`` imports every environment gymnax has, and three of them import matplotlib,
seaborn and scipy.stats for their rendering helpers: about 2.9 s on a 2-core CPU whichever
environment is made. :func:`gymnax_factory` imports the one module that defines the environment
asked for, and leaves gymnax's packages to run their ``__init__`` when something asks for them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.partial_imports import import_alone


def gymnax_factory(env_id: str) -> Callable[..., Any]:
    """The class of gymnax environment ``env_id``, as ``gymnax.make`` would call it: one of
    gymnax's own imported alone (:func:`import_alone`). Where gymnax is imported already, or the
    id is not one of gymnax's own (one a user registered), ``gymnax.make``'s registry is asked.

    Raises:
      UnknownEnvironmentError: ``env_id`` is not registered with gymnax (close matches named).
    """
    where = None if "gymnax.registration" in sys.modules else _builtin_modules().get(env_id)
    if where is not None:
        with contextlib.suppress(ImportError, AttributeError):  # a gymnax laid out otherwise
            return getattr(import_alone(f"gymnax.environments.{where[0]}"), where[1])
    from gymnax import registration

    if env_id not in registration.registered_envs:
        raise UnknownEnvironmentError(
            unknown("gymnax environment", env_id, registration.registered_envs)
        )
    return lambda **kwargs: registration.make(env_id, **kwargs)[0]


@functools.cache
def _builtin_modules() -> dict[str, tuple[str, str]]:
    """gymnax's own environments, read from its ``registration.py`` without running it:
    ``{"Breakout-MinAtar": ("minatar.breakout", "MinBreakout"), ...}``; empty where the file is
    not laid out as in gymnax 1.0 (the registry is asked then)."""
    spec = importlib.util.find_spec("gymnax")
    if spec is None or not spec.submodule_search_locations:
        return {}
    source = Path(spec.submodule_search_locations[0], "registration.py")
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    suite_of = {}  # module name -> its suite (e.g. "breakout" -> "minatar")
    builtins: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "gymnax.environments."
        ):
            suite = node.module.removeprefix("gymnax.environments.")
            suite_of.update({alias.asname or alias.name: suite for alias in node.names})
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "_builtins":
            if isinstance(node.value, ast.Dict):
                for key, value in zip(node.value.keys, node.value.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and isinstance(value, ast.Attribute)
                        and isinstance(value.value, ast.Name)
                    ):
                        builtins[key.value] = (value.value.id, value.attr)
    return {
        env_id: (f"{suite_of[module]}.{module}", name)
        for env_id, (module, name) in builtins.items()
        if module in suite_of
    }

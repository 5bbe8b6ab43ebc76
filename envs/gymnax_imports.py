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
import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown


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


def import_alone(name: str) -> ModuleType:
    """Import module ``name`` without running its parent packages' ``__init__`` where they are
    not imported yet: each such parent is registered empty, with its path, and runs its
    ``__init__`` the first time an attribute it lacks is asked for (``gymnax.make``). A
    submodule asked for as an attribute (``from gymnax.environments import spaces``) is
    imported alone, too. ``import gymnax`` after this is the whole package, as before."""
    parts = name.split(".")
    for i in range(1, len(parts)):
        parent = ".".join(parts[:i])
        if parent not in sys.modules:
            _register_empty(parent)
    return importlib.import_module(name)


def _register_empty(name: str) -> None:
    parent, _, child = name.rpartition(".")
    if parent:
        search = sys.modules[parent].__path__
        spec = importlib.machinery.PathFinder.find_spec(name, search)
    else:
        spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not a package")
    module = importlib.util.module_from_spec(spec)
    state = {"ran": False}

    def __getattr__(attribute: str) -> Any:
        path = spec.submodule_search_locations
        if importlib.machinery.PathFinder.find_spec(f"{name}.{attribute}", path) is not None:
            return importlib.import_module(f"{name}.{attribute}")
        if state["ran"]:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        state["ran"] = True
        spec.loader.exec_module(module)  # the package's own __init__, run now
        return getattr(module, attribute)

    module.__getattr__ = __getattr__
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], child, module)

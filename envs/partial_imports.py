"""A package's module imported without its parents' ``__init__``, and where a package defines a
name it re-exports, read without running it.

Some suites' ``__init__`` imports every environment they have, with plotting libraries and
physics engines beside them: ``import gymnax`` takes about 2.9 s on a 2-core CPU, ``import
jaxmarl`` about 9 s, whichever environment is asked for. Their adapters import the one module
that defines it (:mod:`~jaxrl_fdg.envs.gymnax_imports`, :mod:`~jaxrl_fdg.envs.jaxmarl_adapter`).
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def defining_module(package: str, name: str) -> tuple[str, str] | None:
    """Where ``package`` defines what it exports as ``name``: ``(module, name there)``, found
    by following the package's re-exports with :mod:`ast`, nothing run (``from .mpe import
    SimpleSpreadMPE`` in its ``__init__``, then ``from .simple_spread import SimpleSpreadMPE`` in
    ``mpe/__init__.py``: ``("jaxmarl.environments.mpe.simple_spread", "SimpleSpreadMPE")``; an
    ``as`` renames on the way). ``None`` where the name is not imported by a relative import of
    the package, a file cannot be read, or the chain is longer than 8. Nothing is imported:
    ``find_spec`` of a dotted name would run its parents' ``__init__``, so only the top package
    is looked up and the rest of the name is its folders."""
    top, *inner = package.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    module, folder = package, Path(spec.submodule_search_locations[0]).joinpath(*inner)
    for _ in range(8):
        try:
            tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return None
        found = _relative_import_of(tree, name)
        if found is None:
            return None
        relative, name = found
        target = folder.joinpath(*relative.split("."))
        module = f"{module}.{relative}"
        if not (target / "__init__.py").is_file():  # a module, not a package: it defines it
            return (module, name) if target.with_suffix(".py").is_file() else None
        folder = target
    return None


def _relative_import_of(tree: ast.Module, name: str) -> tuple[str, str] | None:
    """``(X, original)`` of ``from .X import original as name`` (or ``import name``) anywhere in
    ``tree``, a ``try`` around it included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return node.module, alias.name
    return None


def import_alone(name: str) -> ModuleType:
    """Import module ``name`` without running its parent packages' ``__init__`` where they are
    not imported yet: each such parent is registered empty, with its path, and runs its
    ``__init__`` the first time an attribute it lacks is asked for (``gymnax.make``, say). A
    submodule asked for as an attribute (``from gymnax.environments import spaces``) is
    imported alone, too; asked for anything else, the package is whole, as before."""
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

"""Names a package declares in its source, read without importing it: ``jaxrl-fdg list`` names
an adapter's environments this way where importing the package would cost seconds (JaxMARL's
import loads every suite it has)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path


def jaxmarl_names() -> tuple[str, ...]:
    """JaxMARL's registered environment names (``jaxmarl.registered_envs``), read from its
    ``registration.py`` without importing JaxMARL (``import jaxmarl`` imports every suite, about
    10 s); empty where JaxMARL is not installed or the list is not one of string literals."""
    spec = importlib.util.find_spec("jaxmarl")
    if spec is None or not spec.origin:
        return ()
    return literal_strings(Path(spec.origin).with_name("registration.py"), "registered_envs")


def literal_strings(source: Path, variable: str) -> tuple[str, ...]:
    """The strings of the module-level ``variable = [...]`` in the Python file ``source``, read
    with :mod:`ast` (the file is not run); empty where the file cannot be read or parsed, or the
    value is not a list or tuple of string literals."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ()
    value = None
    for node in tree.body:  # the last assignment wins, as when the module runs
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(target, ast.Name) and target.id == variable for target in targets):
            value = node.value
    try:
        names = ast.literal_eval(value) if value is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ()
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        return ()
    return tuple(names)

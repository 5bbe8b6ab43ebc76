"""Names of a package that load on first use (PEP 562): ``import jaxrl_fdg`` imports no JAX, so
the command can take over the stop signals before its heavy imports."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any


def names(
    package: str, module_of: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: a name of ``module_of`` is imported from its
    module when first asked for, and kept in the package's ``namespace``; any other name is the
    package's subpackage or module of that name, imported (``rl.config``), if there is one."""

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            if importlib.util.find_spec(f"{package}.{name}") is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return importlib.import_module(f"{package}.{name}")
        value = namespace[name] = getattr(importlib.import_module(module), name)
        return value

    def __dir__() -> list[str]:  # the submodules a package names in __all__ too
        return sorted({*namespace, *module_of, *namespace.get("__all__", ())})

    return __getattr__, __dir__

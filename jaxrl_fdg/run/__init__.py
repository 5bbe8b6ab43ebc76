"""Running a configuration: the runner, sessions, checkpoints, run folders, evaluation,
metrics and progress. Heavy optional backends (orbax, rich, tensorboardX) load when used.

The names below load on first use (PEP 562), so that a light module of this package
(:mod:`~jaxrl_fdg.run.signals`) imports without JAX."""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxrl_fdg.run.build import build_loop
    from jaxrl_fdg.run.evaluation import evaluate
    from jaxrl_fdg.run.runner import RunResult, initial_key, make_train, train

__all__ = ["RunResult", "build_loop", "evaluate", "initial_key", "make_train", "train"]

_MODULE_OF = {
    "build_loop": "jaxrl_fdg.run.build",
    "evaluate": "jaxrl_fdg.run.evaluation",
    "RunResult": "jaxrl_fdg.run.runner",
    "initial_key": "jaxrl_fdg.run.runner",
    "make_train": "jaxrl_fdg.run.runner",
    "train": "jaxrl_fdg.run.runner",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:  # a subpackage or module, as ``rl.config`` or ``rl.core.algorithm``
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module 'jaxrl_fdg.run' has no attribute {name!r}")
        return importlib.import_module(f"{__name__}.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

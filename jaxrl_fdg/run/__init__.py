"""Running a configuration: the runner, sessions, checkpoints, run folders, evaluation,
metrics and progress. Heavy optional backends (orbax, rich, tensorboardX) load when used.

The names below load on first use (PEP 562), so that a light module of this package
(:mod:`~jaxrl_fdg.run.signals`) imports without JAX."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_fdg import lazy

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

__getattr__, __dir__ = lazy.names(__name__, _MODULE_OF, globals())

"""Algorithm building blocks, and in :mod:`~jaxrl_fdg.fragments.algorithms` the built-in
algorithms made of them.

Layout:

* here, the building blocks: ``networks`` (``recurrent`` for the GRU/LSTM ones),
  ``distributions``, ``losses``, ``minibatch``, ``exploration``, ``normalization``,
  ``actor_critic_policy`` (the actor-critic algorithms' networks and what is asked of them) and
  ``replay``. None of them imports an algorithm;
* ``algorithms/``: one module per algorithm (``ppo``, ``a2c``, ``impala``, ``dqn``, ``c51``,
  ``pqn``, ``sac``, ``dpg`` for TD3 and DDPG), each with its hyperparameter dataclass and its
  ``SPEC``, and the families they share (``actor_critic``, ``offpolicy``, ``continuous``).
  ``jaxrl_fdg.core.algorithm`` finds the specs by name through entry points and imports them on
  first use.

The algorithms used to live here (``jaxrl_fdg.fragments.ppo``). Those paths still give the same
module objects, with a ``DeprecationWarning`` naming the new one: ``from jaxrl_fdg.fragments
import ppo`` and ``jaxrl_fdg.fragments.ppo`` through this module's ``__getattr__``, and ``import
jaxrl_fdg.fragments.ppo`` or ``from jaxrl_fdg.fragments.ppo import SPEC`` through
:class:`_MovedFinder`, an import finder that answers for exactly those names. Once the import
system has bound an old name on this package (after ``import jaxrl_fdg.fragments.ppo``), later
attribute access finds it without a further warning.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from jaxrl_fdg.fragments import (
    actor_critic_policy,
    distributions,
    exploration,
    losses,
    minibatch,
    networks,
    normalization,
    recurrent,
    replay,
)
from jaxrl_fdg.fragments import algorithms as algorithms

__all__ = [
    "actor_critic_policy",
    "algorithms",
    "distributions",
    "exploration",
    "losses",
    "minibatch",
    "networks",
    "normalization",
    "recurrent",
    "replay",
]

# Modules that moved to jaxrl_fdg.fragments.algorithms, by their old name here.
_MOVED = frozenset("a2c actor_critic c51 continuous dpg dqn impala offpolicy ppo pqn sac".split())


def _moved(name: str, stacklevel: int):
    """The module ``algorithms.<name>``, after a DeprecationWarning for its old path."""
    new = f"{__name__}.algorithms.{name}"
    warnings.warn(
        f"{__name__}.{name} moved to {new}; import it from there",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return importlib.import_module(new)


def __getattr__(name: str):
    if name in _MOVED:
        return _moved(name, stacklevel=2)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``jaxrl_fdg.fragments.<old>`` as the module ``jaxrl_fdg.fragments.algorithms.<old>``
    itself (one module object under two names in ``sys.modules``), with a DeprecationWarning.
    Appended to ``sys.meta_path``, it is asked only about names no other finder found."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package != __name__ or name not in _MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = _moved(spec.name.rpartition(".")[2], stacklevel=2)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        # The import system has just set module.__spec__ to the old name's spec: restore the
        # module's own, so that the module stays what it is under its new name.
        module.__spec__ = module.__spec__.loader_state


# One finder, however often this module is executed (importlib.reload).
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__ != __name__]
sys.meta_path.append(_MovedFinder())

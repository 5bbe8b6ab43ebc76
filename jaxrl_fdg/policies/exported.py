"""A program kept for the executable cache (:mod:`jaxrl_fdg.run.executables`): as StableHLO, to
be lowered again without tracing the code that made it (:class:`Exported`), and as the
executable XLA compiled from it, to be loaded without lowering or compiling anything
(:func:`serialize`, :func:`load`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import jax


class Exported:
    """A program as StableHLO (``jax.export``), flat: its inputs and outputs are the leaves of
    the pytrees it takes and returns, whose structures are kept beside it (``jax.export``
    serializes only the pytree types registered with it).

    :meth:`function` is the program again as a function of its pytrees, and :attr:`args` the
    shapes it takes: ``jax.jit(function).lower(*args)`` embeds the StableHLO without tracing
    any of the code that made it."""

    def __init__(self, blob: bytes, in_tree: Any, out_tree: Any, calls_lapack: bool | None = None):
        self.blob, self.in_tree, self.out_tree = blob, in_tree, out_tree
        self._exported: Any = None
        self._calls_lapack = calls_lapack

    @classmethod
    def of(cls, fn: Callable, args: tuple) -> Exported:
        """Export ``fn`` for ``args`` (arrays or shapes); this traces and lowers it."""
        leaves, in_tree = jax.tree.flatten(args)
        out_trees = []

        def flat(*leaves):
            out, out_tree = jax.tree.flatten(fn(*in_tree.unflatten(leaves)))
            out_trees.append(out_tree)
            return out

        exported = jax.export.export(jax.jit(flat))(*leaves)
        made = cls(exported.serialize(), in_tree, out_trees[-1])
        made._exported = exported
        return made

    def _program(self) -> Any:
        if self._exported is None:
            self._exported = jax.export.deserialize(bytearray(self.blob))
        return self._exported

    @property
    def out_info(self) -> Any:
        """The shapes the program returns (``jax.ShapeDtypeStruct`` leaves)."""
        return _shapes(self.out_tree, self._program().out_avals)

    @property
    def args(self) -> tuple:
        """The shapes the program takes, as the pytrees it was exported for."""
        return _shapes(self.in_tree, self._program().in_avals)

    def calls_lapack(self) -> bool:
        """Whether the program calls one of the CPU's LAPACK kernels: a custom call whose target
        is ``lapack_...``, as JAX names every one. Read from the program's text once (about
        0.03 s for a PPO iteration) and, once read, kept with it when it is pickled."""
        if self._calls_lapack is None:
            try:
                text = self._program().mlir_module()
            except Exception:  # a JAX that cannot print it: assume it may, and set them up
                return True
            self._calls_lapack = bool(_LAPACK_CALL.search(text))
        return self._calls_lapack

    def function(self) -> Callable:
        program, out_tree = self._program(), self.out_tree

        def call(*args):
            return out_tree.unflatten(program.call(*jax.tree.leaves(args)))

        return call

    def __getstate__(self) -> dict[str, Any]:
        return {
            "blob": self.blob,
            "in_tree": self.in_tree,
            "out_tree": self.out_tree,
            "calls_lapack": self._calls_lapack,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)


# A custom call to one of the CPU's LAPACK kernels, in the pretty or the generic printed form.
_LAPACK_CALL = re.compile(r'custom_call @lapack_|call_target_name = "lapack_')


def _shapes(tree: Any, avals: Any) -> Any:
    return tree.unflatten([jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals])


# A compiled program as jax.experimental.serialize_executable keeps it: the executable's bytes
# and the pytree structures of its arguments and results.
Serialized = tuple[bytes, Any, Any]


def serialize(compiled: Any) -> Serialized | None:
    """The executable ``compiled`` (a ``jax.stages.Compiled``) as bytes with its pytrees, or
    ``None`` where this backend or program cannot be serialized (the program then loads from its
    StableHLO)."""
    from jax.experimental import serialize_executable

    try:
        return serialize_executable.serialize(compiled)
    except Exception:  # ValueError, NotImplementedError, a backend's own refusal, ...
        return None


def load(saved: Serialized) -> Any:
    """The executable :func:`serialize` kept, loaded onto this process's devices: what the
    run that kept it ran, bit for bit, with nothing lowered or compiled."""
    from jax.experimental import serialize_executable

    return serialize_executable.deserialize_and_load(*saved)


def kernels_setup(loading: Iterable[Exported]) -> Callable[[], None] | None:
    """What lowering an exported program does first on CPU, and a program loaded without
    lowering needs before it runs if it calls LAPACK (QR, Cholesky, ...): pointing XLA's LAPACK
    kernels at the BLAS and LAPACK routines of scipy, which JAX imports for it (about 0.08 s;
    a program that calls LAPACK without it crashes the process). Returned as a function to call
    once the loads of ``loading`` (the programs whose executables load) are under way; it does
    nothing off CPU or where none of them calls LAPACK (:meth:`Exported.calls_lapack`). ``None``
    where this JAX does the setup otherwise than JAX 0.10 did: the caller then lowers its
    programs, which does it."""
    if jax.default_backend() != "cpu" or not any(p.calls_lapack() for p in loading):
        return lambda: None
    try:  # JAX's own call, made before any CPU program it lowers from StableHLO
        from jax._src.lax import linalg

        return linalg.initialize_lapack
    except (ImportError, AttributeError):
        return None

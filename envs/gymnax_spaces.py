"""gymnax's spaces and state types as this package's: :func:`gymnax_space` converts a space
(gymnax's, or a suite's copy of it), :func:`cast_to_space` an observation to the dtypes its
space declares, and :func:`as_strong`/:func:`cast_like` keep a wrapped environment's state in
one set of dtypes from reset to step (a scan's carry must not change type)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs.spaces import Box, Dict, Discrete, Space, Tuple


def gymnax_space(space: Any, name: str = "environment") -> Space:
    """A gymnax space as ours: ``Discrete`` (``n``), ``Box`` (``low``, ``high``, ``shape``,
    ``dtype``, kept), ``Dict`` and ``Tuple`` (``spaces``, converted inside).

    Spaces are read by their attributes and class names, not their classes, so the copies
    other suites keep of gymnax's spaces (Craftax's ``environment_base.spaces``) convert too.

    Raises:
      ValueError: a space of another kind (the message names it and the kinds converted).
    """
    kind = type(space).__name__
    if kind == "Discrete" and hasattr(space, "n"):
        return Discrete(int(space.n))
    if kind == "Box" and hasattr(space, "low"):
        dtype = jnp.dtype(getattr(space, "dtype", jnp.float32))
        low, high = (jnp.asarray(bound, dtype) for bound in (space.low, space.high))
        return Box(low, high, tuple(space.shape), dtype)
    inner = getattr(space, "spaces", None)
    if kind == "Dict" and isinstance(inner, Mapping):
        return Dict({k: gymnax_space(s, name) for k, s in inner.items()})
    if kind == "Tuple" and isinstance(inner, tuple | list):
        return Tuple(tuple(gymnax_space(s, name) for s in inner))
    raise ValueError(
        f"{name} has a {kind} space; only gymnax's Discrete, Box, Dict and Tuple are supported"
    )


def cast_to_space(value: Any, space: Any) -> Any:
    """``value`` (an array, or the dict or tuple of a nested space) in the dtypes of ``space``:
    an environment's observations then match what it declares, as
    :func:`~jaxrl_fdg.envs.contracts.check_reset` requires."""
    if isinstance(space, Dict):
        return {k: cast_to_space(value[k], s) for k, s in space.spaces.items()}
    if isinstance(space, Tuple):
        return tuple(cast_to_space(v, s) for v, s in zip(value, space.spaces, strict=True))
    return jnp.asarray(value, space.dtype)


def _float_boxes(space: Space) -> Space:
    """``space`` with every ``Box`` float32 (gymnax's own environments)."""
    if isinstance(space, Box):
        low, high = (jnp.asarray(b, jnp.float32) for b in (space.low, space.high))
        return Box(low, high, space.shape, jnp.float32)
    if isinstance(space, Dict):
        return Dict({k: _float_boxes(s) for k, s in space.spaces.items()})
    if isinstance(space, Tuple):
        return Tuple(tuple(_float_boxes(s) for s in space.spaces))
    return space


def as_strong(tree: Any) -> Any:
    """Every leaf of ``tree`` an array of its own dtype, none weakly typed (a state's Python
    ints become int32): a reset state then has the types of the states stepped from it."""
    return jax.tree.map(_strong, tree)


def cast_like(tree: Any, ref: Any) -> Any:
    """``tree`` with every leaf in the dtype of the same leaf of ``ref`` (the state it was
    stepped from), so that a scan's carry keeps one type."""
    return jax.tree.map(_cast_like, tree, ref)


def _is_key(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.extended)


def _strong(x: Any) -> Any:
    """``x`` as an array of its own dtype, not weakly typed (PRNG keys pass through)."""
    if _is_key(x):
        return x
    x = jnp.asarray(x)
    return jax.lax.convert_element_type(x, x.dtype)


def _cast_like(x: Any, ref: jax.Array) -> Any:
    """``x`` in the dtype of ``ref``, the state it was stepped from (PRNG keys pass through)."""
    if _is_key(ref):
        return x
    return jax.lax.convert_element_type(jnp.asarray(x), ref.dtype)

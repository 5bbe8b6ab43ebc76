"""Observation and action spaces: shapes, dtypes, sampling and membership.

Four kinds of a single value (:class:`Discrete`, :class:`MultiDiscrete`, :class:`Box`) and two
that nest other spaces (:class:`Dict`, :class:`Tuple`), for structured observations such as an
image beside a vector. A nested space describes a pytree of arrays (a dict, a tuple) with one
leaf space per array: :func:`leaves` lists them, :func:`example` builds the zeros of the right
shapes and dtypes, and :func:`mismatch` says, in one line, where a value departs from its space.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import rng


class Discrete(NamedTuple):
    """Integers ``0 .. n-1``."""

    n: int
    dtype: jnp.dtype = jnp.int32

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        return jnp.logical_and(x >= 0, x < self.n) & (x.astype(self.dtype) == x)


class MultiDiscrete(NamedTuple):
    """A vector of integers, the ``i``-th in ``0 .. nvec[i]-1`` (Jumanji's Minesweeper picks a
    row and a column)."""

    nvec: tuple[int, ...]
    dtype: jnp.dtype = jnp.int32

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.nvec),)

    def sample(self, key: jax.Array) -> jax.Array:
        high = jnp.asarray(self.nvec, self.dtype)
        return jax.random.randint(key, self.shape, 0, high, dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        high = jnp.asarray(self.nvec)
        return jnp.all((x >= 0) & (x < high) & (x.astype(self.dtype) == x))


class Box(NamedTuple):
    """A product of closed intervals ``[low, high]`` of a fixed shape."""

    low: jax.Array | float
    high: jax.Array | float
    shape: tuple[int, ...]
    dtype: jnp.dtype = jnp.float32

    def sample(self, key: jax.Array) -> jax.Array:
        low = jnp.broadcast_to(jnp.asarray(self.low, self.dtype), self.shape)
        high = jnp.broadcast_to(jnp.asarray(self.high, self.dtype), self.shape)
        # Unbounded dimensions are sampled from a standard normal, as gymnasium does.
        finite = jnp.isfinite(low) & jnp.isfinite(high)
        uniform = jax.random.uniform(
            key, self.shape, self.dtype, jnp.where(finite, low, 0.0), jnp.where(finite, high, 1.0)
        )
        normal = jax.random.normal(key, self.shape, self.dtype)
        return jnp.where(finite, uniform, normal)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != tuple(self.shape):
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high))


class Dict(NamedTuple):
    """A dict of named spaces; its values are dicts with the same keys (an image ``"img"``
    beside a ``"direction"``). Keys are kept in the order given."""

    spaces: Mapping[str, Any]

    def sample(self, key: jax.Array) -> dict[str, jax.Array]:
        keys = rng.split(key, len(self.spaces))
        return {name: s.sample(k) for (name, s), k in zip(self.spaces.items(), keys, strict=True)}

    def contains(self, x: Any) -> jax.Array:
        if not isinstance(x, Mapping) or set(x) != set(self.spaces):
            return jnp.asarray(False)
        return jnp.all(jnp.stack([s.contains(x[n]) for n, s in self.spaces.items()]))


class Tuple(NamedTuple):
    """A tuple of spaces; its values are tuples (or named tuples) of as many values."""

    spaces: tuple[Any, ...]

    def sample(self, key: jax.Array) -> tuple[jax.Array, ...]:
        keys = rng.split(key, len(self.spaces))
        return tuple(s.sample(k) for s, k in zip(self.spaces, keys, strict=True))

    def contains(self, x: Any) -> jax.Array:
        if not isinstance(x, tuple) or len(x) != len(self.spaces):
            return jnp.asarray(False)
        return jnp.all(jnp.stack([s.contains(v) for s, v in zip(self.spaces, x, strict=True)]))


Space = Discrete | MultiDiscrete | Box | Dict | Tuple
Leaf = Discrete | MultiDiscrete | Box
NESTED = (Dict, Tuple)


def is_nested(space: Any) -> bool:
    """Whether ``space`` describes a pytree of several arrays (a :class:`Dict` or a
    :class:`Tuple`) rather than one array."""
    return isinstance(space, NESTED)


def leaves(space: Any, path: str = "") -> Iterator[tuple[str, Leaf]]:
    """``(path, leaf space)`` for every array the space describes, in pytree order (a dict's
    keys sorted, as ``jax.tree`` flattens dicts); paths read ``"img"``, ``"0"``, ``"a/b"``."""
    if isinstance(space, Dict):
        for name in sorted(space.spaces):
            yield from leaves(space.spaces[name], f"{path}/{name}" if path else str(name))
    elif isinstance(space, Tuple):
        for i, inner in enumerate(space.spaces):
            yield from leaves(inner, f"{path}/{i}" if path else str(i))
    else:
        yield path, space


def leaves_shapes(space: Any) -> Iterator[tuple[str, tuple[int, ...]]]:
    """``(path, shape)`` of every leaf of ``space`` (:func:`leaves`), for messages."""
    return ((path, tuple(leaf.shape)) for path, leaf in leaves(space))


def example(space: Any, batch: tuple[int, ...] = ()) -> Any:
    """Zeros shaped as one value of ``space`` (with leading ``batch`` axes): an array, or the
    dict or tuple of arrays of a nested space. NumPy arrays: made on the host, they cost no
    program (a network's ``init`` and a traced step take them as JAX arrays)."""
    if isinstance(space, Dict):
        return {name: example(s, batch) for name, s in space.spaces.items()}
    if isinstance(space, Tuple):
        return tuple(example(s, batch) for s in space.spaces)
    return np.zeros((*batch, *space.shape), space.dtype)


def structure(space: Any, batch: tuple[int, ...] = ()) -> Any:
    """:func:`example` as ``jax.ShapeDtypeStruct`` leaves, for ``io_callback`` results and
    ``jax.eval_shape`` comparisons: no array is made."""
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype),
        jax.eval_shape(lambda: example(space, batch)),
    )


def mismatch(space: Any, value: Any, batch: tuple[int, ...] = (), what: str = "observation"):
    """One line on where ``value`` (arrays or ``ShapeDtypeStruct``\\ s, with leading ``batch``
    axes) departs from ``space`` in structure, shape or dtype, or None where it matches.

    Values are not compared (that needs the data): this is what can be told before compiling,
    from ``jax.eval_shape`` of a reset."""
    if isinstance(space, Dict):
        if not isinstance(value, Mapping):
            return f"{what} is a {type(value).__name__}, its space a Dict of {sorted(space.spaces)}"
        if set(value) != set(space.spaces):
            return (
                f"{what} has keys {sorted(value)}, its space {sorted(space.spaces)}: declare "
                "the same keys in observation_space"
            )
        for name, inner in space.spaces.items():
            found = mismatch(inner, value[name], batch, f"{what}[{name!r}]")
            if found:
                return found
        return None
    if isinstance(space, Tuple):
        if not isinstance(value, tuple) or len(value) != len(space.spaces):
            return f"{what} is not a tuple of {len(space.spaces)} as its Tuple space says"
        for i, (inner, v) in enumerate(zip(space.spaces, value, strict=True)):
            found = mismatch(inner, v, batch, f"{what}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, (Mapping, tuple, list)):
        return (
            f"{what} is a {type(value).__name__}, its space a {type(space).__name__} of one "
            "array: declare a spaces.Dict or spaces.Tuple observation space"
        )
    shape, dtype = tuple(np.shape(value)), jnp.dtype(value.dtype)
    want = (*batch, *space.shape)
    if shape != want:
        return f"{what} has shape {shape[len(batch) :]}, its space says {tuple(space.shape)}"
    if dtype != jnp.dtype(space.dtype):
        return f"{what} has dtype {dtype}, its space says {jnp.dtype(space.dtype)}"
    return None


def describe(space: Any) -> str:
    """A short description for messages and listings: ``Box(float32, (4,))``,
    ``Dict(direction: Discrete(4), img: Box(uint8, (5, 5, 2)))``."""
    if isinstance(space, Dict):
        inner = ", ".join(f"{n}: {describe(s)}" for n, s in space.spaces.items())
        return f"Dict({inner})"
    if isinstance(space, Tuple):
        return f"Tuple({', '.join(describe(s) for s in space.spaces)})"
    if isinstance(space, Discrete):
        return f"Discrete({space.n})"
    if isinstance(space, MultiDiscrete):
        return f"MultiDiscrete({list(space.nvec)})"
    return f"Box({jnp.dtype(space.dtype)}, {tuple(space.shape)})"

"""Observation and action spaces: shapes, dtypes, sampling and membership."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


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


Space = Discrete | Box

"""Random bits for sampling from the sum tree: ``jax.random.bits`` as one fused elementwise op."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry2x32(key: tuple[jax.Array, jax.Array], x0: jax.Array, x1: jax.Array):
    """Threefry-2x32 with 20 rounds (Salmon et al., SC 2011), unrolled: the block cipher behind
    ``jax.random``, whose CPU lowering is a rolled loop of separately dispatched ops."""
    ks = (key[0], key[1], key[0] ^ key[1] ^ np.uint32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def random_bits(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """``jax.random.bits(key, shape, uint32)``, the same bits, as one fused elementwise op.

    For a threefry key (JAX's default) with ``jax_threefry_partitionable`` (the default), element
    ``n`` of the flattened output is ``x0 ^ x1`` where ``(x0, x1)`` is Threefry-2x32 of the key
    applied to the 64-bit counter ``n``. On CPU JAX lowers that as a loop of five rolled iterations
    that costs tens of µs however few bits are drawn; unrolled it is one fused kernel. Other keys
    go to ``jax.random.bits``.
    """
    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)  # a legacy uint32 key, of the default implementation
    size = math.prod(shape)
    if (
        str(jax.random.key_impl(key)) != "threefry2x32"
        or not jax.config.jax_threefry_partitionable
        or size >= 2**32
    ):
        return jax.random.bits(key, shape, jnp.uint32)
    data = jax.random.key_data(key)
    counter = lax.iota(jnp.uint32, size).reshape(shape)
    x0, x1 = _threefry2x32((data[0], data[1]), jnp.zeros_like(counter), counter)
    return x0 ^ x1


def unit_floats(bits: jax.Array) -> jax.Array:
    """Uniforms in [0, 1) from uint32 bits, as ``jax.random.uniform`` makes them: the top 23 bits
    as the mantissa of a float in [1, 2), minus 1."""
    one = lax.bitcast_convert_type((bits >> np.uint32(9)) | np.uint32(0x3F800000), jnp.float32)
    return one - 1.0

"""``jax.random.split``, ``bits``, ``uniform``, ``randint`` and ``categorical`` for Threefry keys,
the same values, as fused elementwise ops.

On CPU JAX lowers the Threefry-2x32 hash as a loop of five rolled iterations, each a handful of
separately dispatched kernels plus copies of the loop's constants. Inside a training iteration
that loop costs about 2 µs per hash however few words it makes, and the loop splits keys several
times per iteration (the iteration's keys, each fragment's, each learner round's): DQN's
CartPole iteration spent a tenth of its time there (docs/decisions.md, "Random keys on CPU").
Unrolled, a hash is one fused kernel. The bits are JAX's own, so nothing a run computes changes;
keys of other implementations, and JAX without ``jax_threefry_partitionable``, go to
``jax.random``. Each function is compiled as one program where it is called outside ``jit``, as
``jax.random``'s are, so that a value rounds the same in and out of a compiled program.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry2x32(key: tuple[jax.Array, jax.Array], x0: jax.Array, x1: jax.Array):
    """Threefry-2x32 with 20 rounds (Salmon et al., SC 2011), unrolled: the block cipher behind
    ``jax.random``, whose CPU lowering is a rolled loop of separately dispatched ops.

    The two words leave through an optimization barrier, so that keys drawn from keys do not fuse
    into one kernel several hashes deep: the loop vectorizer of the LLVM in jaxlib 0.11 (VPlan's
    ``onlyFirstLaneUsed``) took minutes over three chained hashes and did not finish a training
    iteration's chain. (jaxlib 0.10's XLA drops the barrier before fusion; its LLVM copes.)
    """
    ks = (key[0], key[1], key[0] ^ key[1] ^ np.uint32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return lax.optimization_barrier((x0, x1))


def _threefry_data(key: jax.Array, size: int) -> jax.Array | None:
    """The key's two data words, where this module computes JAX's bits itself; else None."""
    if (
        key.shape != ()
        or str(jax.random.key_impl(key)) != "threefry2x32"
        or not jax.config.jax_threefry_partitionable
        or size >= 2**32
    ):
        return None
    return jax.random.key_data(key)


@functools.partial(jax.jit, static_argnames="num")
def split(key: jax.Array, num: int | tuple[int, ...] = 2) -> jax.Array:
    """``jax.random.split(key, num)``: the same keys, as one fused elementwise op.

    ``key`` is a typed key (``jax.random.key``) or a legacy ``uint32[2]`` one
    (``jax.random.PRNGKey``); the keys come back of the same kind, shaped ``num`` (an int or a
    shape). With ``jax_threefry_partitionable`` (the default), key ``n`` is the two words of
    Threefry-2x32 of ``key`` applied to the 64-bit counter ``n``.
    """
    shape = (num,) if isinstance(num, int) else tuple(num)
    typed = jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
    typed_key = key if typed else jax.random.wrap_key_data(key)
    data = _threefry_data(typed_key, math.prod(shape))
    if data is None:
        return jax.random.split(key, num)
    counter = lax.iota(jnp.uint32, math.prod(shape)).reshape(shape)
    x0, x1 = _threefry2x32((data[0], data[1]), jnp.zeros_like(counter), counter)
    words = jnp.stack([x0, x1], axis=-1)
    return jax.random.wrap_key_data(words, impl=jax.random.key_impl(typed_key)) if typed else words


@functools.partial(jax.jit, static_argnames="shape")
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
    data = _threefry_data(key, size)
    if data is None:
        return jax.random.bits(key, shape, jnp.uint32)
    counter = lax.iota(jnp.uint32, size).reshape(shape)
    x0, x1 = _threefry2x32((data[0], data[1]), jnp.zeros_like(counter), counter)
    return x0 ^ x1


def unit_floats(bits: jax.Array) -> jax.Array:
    """Uniforms in [0, 1) from uint32 bits, as ``jax.random.uniform`` makes them: the top 23 bits
    as the mantissa of a float in [1, 2), minus 1."""
    one = lax.bitcast_convert_type((bits >> np.uint32(9)) | np.uint32(0x3F800000), jnp.float32)
    return one - 1.0


@functools.partial(jax.jit, static_argnames=("shape", "dtype"))
def uniform(
    key: jax.Array,
    shape: tuple[int, ...],
    dtype: Any = jnp.float32,
    minval: Any = 0.0,
    maxval: Any = 1.0,
) -> jax.Array:
    """``jax.random.uniform(key, shape, dtype, minval, maxval)``: the same values, for float32
    (other dtypes go to ``jax.random.uniform``): ``max(minval, u · (maxval − minval) + minval)``
    with ``u`` in [0, 1) from the top 23 bits of each word."""
    if jnp.dtype(dtype) != jnp.float32:
        return jax.random.uniform(key, shape, dtype, minval, maxval)
    minval = lax.broadcast_to_rank(jnp.asarray(minval, jnp.float32), len(shape))
    maxval = lax.broadcast_to_rank(jnp.asarray(maxval, jnp.float32), len(shape))
    floats = unit_floats(random_bits(key, shape))
    return lax.max(minval, floats * (maxval - minval) + minval)


def randint(key: jax.Array, shape: tuple[int, ...], minval: int, maxval: int) -> jax.Array:
    """``jax.random.randint(key, shape, minval, maxval, jnp.int32)``: the same int32 values, for
    Python int bounds with ``minval < maxval`` (other bounds go to ``jax.random.randint``).

    JAX's algorithm, which this follows step for step: two words of random bits per value, from
    the two halves of ``split(key)``, reduced modulo the span ``n = maxval − minval`` as the
    64-bit number ``hi · 2³² + lo``: ``((hi mod n) · (2³² mod n) + lo mod n) mod n``, the
    factor ``2³² mod n`` computed in 32-bit words as ``(2¹⁶ mod n)² mod n``.
    """
    info = np.iinfo(np.int32)
    if (
        not (isinstance(minval, int) and isinstance(maxval, int) and info.min <= minval < maxval)
        or maxval > info.max
    ):
        return jax.random.randint(key, shape, minval, maxval, jnp.int32)
    k_high, k_low = split(key)
    high, low = random_bits(k_high, shape), random_bits(k_low, shape)
    span = jnp.uint32(maxval - minval)
    multiplier = lax.rem(jnp.uint32(2**16), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.rem(lax.add(lax.mul(lax.rem(high, span), multiplier), lax.rem(low, span)), span)
    return lax.add(jnp.int32(minval), lax.convert_element_type(offset, jnp.int32))


@jax.jit
def categorical(key: jax.Array, logits: jax.Array) -> jax.Array:
    """``jax.random.categorical(key, logits)`` over the last axis: the same draws, for float32
    logits (others, and JAX's high-dynamic-range Gumbel mode, go to ``jax.random``). The
    Gumbel-max trick: ``argmax(logits − log(−log u))``, ``u`` uniform in [tiny, 1)."""
    if logits.dtype != jnp.float32 or jax.config.jax_high_dynamic_range_gumbel:
        return jax.random.categorical(key, logits)
    tiny = np.float32(np.finfo(np.float32).tiny)
    gumbel = -jnp.log(-jnp.log(uniform(key, logits.shape, jnp.float32, tiny, np.float32(1.0))))
    return jnp.argmax(gumbel + logits, axis=-1)

"""``jaxrl_fdg.rng``: JAX's own keys and bits, computed as one fused op."""

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import rng, testing

KEYS = (jax.random.key(0), jax.random.key(12345), jax.random.PRNGKey(7))


@pytest.mark.parametrize("num", [1, 2, 3, 10, (2, 3)])
def test_split_gives_jax_random_split_keys(num):
    for key in KEYS:
        ours = jax.jit(rng.split, static_argnums=1)(key, num)
        theirs = jax.random.split(key, num)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        testing.assert_same_bits(ours, theirs)


def test_split_under_vmap_and_of_other_key_kinds():
    keys = jax.random.split(jax.random.key(1), 4)
    testing.assert_same_bits(
        jax.vmap(lambda k: rng.split(k, 3))(keys),
        jax.vmap(lambda k: jax.random.split(k, 3))(keys),
    )
    other = jax.random.key(0, impl="rbg")  # not threefry: jax.random.split itself
    testing.assert_same_bits(rng.split(other, 3), jax.random.split(other, 3))


def test_split_is_one_fused_op_on_cpu():
    """The point of the module: no rolled Threefry loop in the compiled program."""
    hlo = jax.jit(lambda k: rng.split(k, 3)).lower(jax.random.key(0)).compile().as_text()
    assert " while(" not in hlo
    rolled = jax.jit(lambda k: jax.random.split(k, 3)).lower(jax.random.key(0)).compile()
    if jax.default_backend() == "cpu":
        assert " while(" in rolled.as_text()  # what it replaces


def _chained_draw(key):
    """Keys drawn from keys drawn from keys, then floats: the shape of a training iteration's
    chain (the iteration's key, a fragment's, the env batch's, a reset's uniforms)."""
    for _ in range(4):
        key = rng.split(key, 2)[0]
    return 1.0 / (0.3 + rng.uniform(key, (4,), jnp.float32, -0.05, 0.05))


def test_chained_draws_compile_in_seconds():
    """Chained hashes fused into one kernel stalled the loop vectorizer of jaxlib 0.11's LLVM for
    minutes (each hash now ends in a barrier). Compiled in a child process that must finish within
    a minute; it takes under a second."""
    code = (
        "import jax, tests.core.test_rng as t; "
        "jax.jit(t._chained_draw).lower(jax.random.key(0)).compile()"
    )
    root = Path(__file__).parents[2]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True, timeout=60)


@pytest.mark.parametrize("shape", [(1,), (7, 256), (3, 5, 2)])
def test_random_bits_are_jax_random_bits(shape):
    for key in KEYS:
        np.testing.assert_array_equal(
            jax.jit(rng.random_bits, static_argnums=1)(key, shape),
            jax.random.bits(key, shape, jnp.uint32),
        )
    keys = jax.random.split(jax.random.key(1), 4)
    np.testing.assert_array_equal(
        jax.vmap(lambda k: rng.random_bits(k, shape))(keys),
        jax.vmap(lambda k: jax.random.bits(k, shape, jnp.uint32))(keys),
    )
    other = jax.random.key(0, impl="rbg")
    np.testing.assert_array_equal(
        rng.random_bits(other, shape), jax.random.bits(other, shape, jnp.uint32)
    )


INT_BOUNDS = [(0, 2), (0, 18), (-5, 7), (3, 2**31 - 1), (-(2**31), 2**31 - 1)]


@pytest.mark.parametrize("bounds", INT_BOUNDS)
def test_randint_gives_jax_random_randint_values(bounds):
    for key in KEYS:
        for shape in [(), (10,), (7, 3)]:
            np.testing.assert_array_equal(
                jax.jit(lambda k, shape=shape: rng.randint(k, shape, *bounds))(key),
                jax.random.randint(key, shape, *bounds, jnp.int32),
            )


@pytest.mark.parametrize(
    "bounds",
    [(0.0, 1.0), (-0.05, 0.05), (np.float32([-1, -2, -3]), np.float32([1, 2, 3]))],
)
def test_uniform_gives_jax_random_uniform_values(bounds):
    for key in KEYS:
        for shape in [(3,), (7, 3)]:
            expected = jax.random.uniform(key, shape, jnp.float32, *bounds)
            np.testing.assert_array_equal(
                jax.jit(lambda k, shape=shape: rng.uniform(k, shape, jnp.float32, *bounds))(key),
                expected,
            )
            # Called outside jit too: one compiled program, rounding as inside one.
            np.testing.assert_array_equal(rng.uniform(key, shape, jnp.float32, *bounds), expected)
    # Other dtypes are JAX's own.
    np.testing.assert_array_equal(
        rng.uniform(KEYS[0], (3,), jnp.float16), jax.random.uniform(KEYS[0], (3,), jnp.float16)
    )


@pytest.mark.parametrize("shape", [(3,), (4, 2), (10, 6), (2, 3, 18)])
def test_categorical_gives_jax_random_categorical_draws(shape):
    logits = 3.0 * jax.random.normal(jax.random.key(5), shape)
    for key in KEYS:
        np.testing.assert_array_equal(
            jax.jit(rng.categorical)(key, logits), jax.random.categorical(key, logits)
        )

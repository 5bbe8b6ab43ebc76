"""``chunks.on_selected``: a computation on the selected rows only, a chunk of them at a time."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import chunks


def _expected(selected, x, current, chunk):
    """Row by row: the k-th selected row gets 10 x + its chunk k // chunk; the others keep."""
    rank = np.cumsum(selected) - 1
    return np.where(selected, 10 * x + rank // chunk, current)


def _run(selected, x, current, chunk):
    def compute(c, index):
        return 10 * x[index] + c

    return chunks.on_selected(selected, chunk, compute, current)


def test_selected_rows_are_computed_in_chunks_and_the_rest_kept():
    rng = np.random.default_rng(0)
    x = jnp.arange(23, dtype=jnp.int32)
    current = jnp.full(23, -1, jnp.int32)
    run = jax.jit(_run, static_argnums=3)
    for count in (0, 1, 4, 5, 11, 23):  # no chunk, one, one full, two, three, every row
        selected = np.zeros(23, bool)
        selected[rng.choice(23, count, replace=False)] = True
        got = run(jnp.asarray(selected), x, current, 4)
        np.testing.assert_array_equal(got, _expected(selected, np.asarray(x), -1, 4))


def test_under_vmap_each_lane_gets_its_own_rows():
    # Lanes needing 0, 1 and 3 chunks run in one loop of 3: a lane's rows outside its chunks keep.
    selected = np.zeros((3, 10), bool)
    selected[1, [2, 7]] = True
    selected[2, [0, 1, 3, 4, 5, 8, 9]] = True
    x = jnp.arange(30, dtype=jnp.int32).reshape(3, 10)
    current = -jnp.ones((3, 10), jnp.int32)
    got = jax.jit(jax.vmap(lambda s, x, c: _run(s, x, c, 3)))(jnp.asarray(selected), x, current)
    for lane in range(3):
        want = _expected(selected[lane], np.asarray(x[lane]), -1, 3)
        np.testing.assert_array_equal(got[lane], want)

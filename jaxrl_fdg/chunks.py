"""A computation on the selected rows of a batch only, a fixed number of rows at a time.

Under ``jit`` shapes are fixed, so "reset the environments that finished" or "value the
observations the actor never saw" is either computed for the whole batch and selected, or
gathered into a smaller batch of slots. :func:`on_selected` does the second: it gathers the
selected rows ``chunk`` at a time, computes there and writes the results back, in a loop of as
many chunks as the selected rows need (none when no row is selected). The environments'
auto-reset (``envs.base``) and the actor-critic learners' bootstrap values
(``Policy.next_values``) both use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def on_selected(
    selected: jax.Array,
    chunk: int,
    compute: Callable[[jax.Array, jax.Array], Any],
    current: Any,
) -> Any:
    """``current`` (a pytree of ``[N, ...]`` arrays) with ``compute`` written over its
    ``selected`` (bool ``[N]``) rows.

    The k-th selected row (in row order) is slot ``k mod chunk`` of chunk ``k // chunk``.
    ``compute(c, index)`` gets the chunk's number ``c`` and the rows in its slots ``index``
    (int32 ``[chunk]``; a slot left empty holds row 0, computed and never read) and returns a
    pytree shaped like ``current`` with ``chunk`` rows. The chunks run in a ``fori_loop`` whose
    trip count is traced: under a ``vmap`` it runs as many as the lane that needs most, which is
    still correct, since a lane's rows outside its chunks keep what they hold.
    """
    num_rows = selected.shape[0]
    rank = rank_of_selected(selected)

    def one_chunk(c: jax.Array, out: Any) -> Any:
        start = c * chunk
        here = selected & (rank >= start) & (rank < start + chunk)
        slot = rank - start
        index = (
            jnp.zeros((chunk,), jnp.int32)
            .at[jnp.where(here, slot, chunk)]
            .set(jnp.arange(num_rows, dtype=jnp.int32), mode="drop")
        )
        result = compute(c, index)
        slot = jnp.clip(slot, 0, chunk - 1)
        return select(here, jax.tree.map(lambda x: x[slot], result), out)

    count = jnp.sum(selected, dtype=jnp.int32)
    return jax.lax.fori_loop(0, (count + chunk - 1) // chunk, one_chunk, current)


def rank_of_selected(selected: jax.Array) -> jax.Array:
    """For each row, how many selected rows precede it (``selected``: bool ``[N]``)."""
    return jnp.cumsum(selected, dtype=jnp.int32) - 1


def select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Leaf-wise ``where(pred, a, b)`` with ``pred`` ``[N]`` broadcast over trailing axes."""

    def where(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.where(pred.reshape(pred.shape + (1,) * (jnp.ndim(b) - pred.ndim)), a, b)

    return jax.tree.map(where, on_true, on_false)

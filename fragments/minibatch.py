"""Epochs of shuffled minibatch updates over a flat batch: the inner loop of on-policy learners."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import jax

S = TypeVar("S")


def minibatch_epochs(
    state: S,
    batch: Any,
    key: jax.Array,
    *,
    epochs: int,
    num_minibatches: int,
    update: Callable[[S, Any], tuple[S, dict[str, jax.Array]]],
) -> tuple[S, dict[str, jax.Array]]:
    """Run ``epochs`` passes; each shuffles ``batch`` (leading axis ``N``) and applies ``update``
    to ``num_minibatches`` disjoint minibatches of ``N / num_minibatches`` samples in turn.

    Returns the final state and each metric averaged over all ``epochs × num_minibatches`` updates.
    """
    size = jax.tree.leaves(batch)[0].shape[0]
    if size % num_minibatches:
        raise ValueError(f"batch of {size} does not split into {num_minibatches} minibatches")

    def epoch(state, key):
        perm = jax.random.permutation(key, size)
        minibatches = jax.tree.map(
            lambda x: x[perm].reshape(num_minibatches, size // num_minibatches, *x.shape[1:]), batch
        )
        return jax.lax.scan(update, state, minibatches)

    state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, epochs))
    return state, jax.tree.map(lambda m: m.mean(), metrics)

"""Epochs of shuffled minibatch updates: the inner loop of on-policy learners, over a flat batch
(:func:`minibatch_epochs`) or over whole env sequences (:func:`sequence_minibatch_epochs`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp

S = TypeVar("S")


def minibatch_epochs(
    state: S,
    batch: Any,
    key: jax.Array,
    *,
    epochs: int,
    num_minibatches: int,
    update: Callable[[S, Any], tuple[S, dict[str, jax.Array]]],
    group: int = 1,
) -> tuple[S, dict[str, jax.Array]]:
    """Run ``epochs`` passes; each shuffles ``batch`` (leading axis ``N``) and applies ``update``
    to ``num_minibatches`` disjoint minibatches of ``N / num_minibatches`` samples in turn.

    With ``group`` > 1 the samples come in groups of ``group`` consecutive rows (a multi-agent
    game's agents, row ``g·group + i`` agent ``i`` of game ``g``), and the passes shuffle whole
    groups, each kept together and in its order: every minibatch is again game-major, as a
    network with a copy of its parameters per agent needs (``networks.PerAgent``). ``group`` 1
    shuffles rows, as before.

    Returns the final state and each metric averaged over all ``epochs × num_minibatches`` updates.
    """
    size = jax.tree.leaves(batch)[0].shape[0]
    if size % (num_minibatches * group):
        raise ValueError(
            f"batch of {size} does not split into {num_minibatches} minibatches"
            + (f" of whole groups of {group} rows" if group > 1 else "")
        )

    # Metrics are summed in the carry as one vector rather than stacked per update: many tiny
    # per-update outputs give XLA's CPU runtime independent work to spread across threads, which
    # on small machines costs more than it saves (see docs/decisions.md).
    minibatch_shape = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct((size // num_minibatches, *x.shape[1:]), x.dtype), batch
    )
    _, metric_shapes = jax.eval_shape(update, state, minibatch_shape)
    names = sorted(metric_shapes)

    def update_and_sum(carry, minibatch):
        state, sums = carry
        state, metrics = update(state, minibatch)
        return (state, sums + jnp.stack([metrics[k] for k in names])), None

    def epoch(carry, key):
        if group == 1:
            perm = jax.random.permutation(key, size)
        else:  # the groups' order shuffled, each group's rows in their order
            games = jax.random.permutation(key, size // group)
            perm = (games[:, None] * group + jnp.arange(group)).reshape(size)
        minibatches = jax.tree.map(
            lambda x: x[perm].reshape(num_minibatches, size // num_minibatches, *x.shape[1:]), batch
        )
        return jax.lax.scan(update_and_sum, carry, minibatches)[0], None

    sums = jnp.zeros(len(names), jnp.float32)
    (state, sums), _ = jax.lax.scan(epoch, (state, sums), jax.random.split(key, epochs))
    means = sums / (epochs * num_minibatches)
    return state, {k: means[i] for i, k in enumerate(names)}


def sequence_minibatch_epochs(
    state: S,
    sequences: Any,
    key: jax.Array,
    *,
    epochs: int,
    num_minibatches: int,
    update: Callable[[S, Any], tuple[S, dict[str, jax.Array]]],
    group: int = 1,
) -> tuple[S, dict[str, jax.Array]]:
    """:func:`minibatch_epochs` over whole sequences: the inner loop of a recurrent learner.

    ``sequences`` is env-major: every leaf has the env axis ``B`` first (``[B, T, ...]`` for what
    varies in time, ``[B, ...]`` for what a sequence starts from, such as its memory). Each pass
    shuffles the environments and hands ``update`` minibatches of ``B / num_minibatches`` whole
    sequences ``[B / num_minibatches, T, ...]``: time is never split, so a recurrent network
    re-runs each sequence from its start with the memory it had there, and never sees one
    environment's steps next to another's. ``group`` keeps whole groups of consecutive
    sequences together (a game's agents), as in :func:`minibatch_epochs`.
    """
    num_sequences = jax.tree.leaves(sequences)[0].shape[0]
    if num_sequences % (num_minibatches * group):
        raise ValueError(
            f"{num_sequences} sequences (one per environment) do not split into "
            f"{num_minibatches} minibatches"
            + (f" of whole groups of {group} sequences" if group > 1 else "")
        )
    return minibatch_epochs(
        state,
        sequences,
        key,
        epochs=epochs,
        num_minibatches=num_minibatches,
        update=update,
        group=group,
    )

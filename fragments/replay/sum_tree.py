"""A K-ary sum tree over priorities, as pure functions on a pytree.

Zhang, Kuppannagari & Prasanna (HiPC 2021), "Parallel Actors and Learners: A Framework for
Generating Scalable RL Implementations": a K-ary tree whose siblings are contiguous (one cache line
for K = 16 float32), so a descent reads one contiguous group per level.

Layout: one array per level, leaves first. Level 0 holds the ``capacity`` leaves padded to a
multiple of K; level l+1 holds one node per group of K nodes of level l, again padded to a
multiple of K; the last level has at most K nodes and the total is its sum. Padding per level is
below K, so memory stays near ``capacity · K / (K − 1)`` rather than growing to K × capacity.

Memory: the levels (about ``capacity · K / (K − 1)`` float32) plus one int32 per leaf of update
workspace (see :func:`latest_values`).

Numerics (float32):

* an update writes the leaves, then recomputes every touched parent as the sum of its K children,
  level by level. No delta is ever added, so sums do not drift however many updates run;
* sampling draws a *fresh* uniform at every level and picks a child in proportion to the children's
  sums. The probability of a leaf is the product of the per-level conditionals, exactly
  ``p_i / Σp`` up to one rounding per level; a single global target carried down the tree instead
  loses the low bits of small priorities, over-sampling them;
* a child whose sum is zero is never chosen, even when rounding pushes the uniform to the top of
  its range.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class SumTree(NamedTuple):
    """Levels from leaves (``levels[0]``) to the top group (``levels[-1]``, at most K nodes), and
    ``latest``, an int32 workspace per leaf that :func:`update` uses to resolve duplicate indices
    without sorting.

    The arity K is static configuration, passed to each function, not stored in the pytree.
    """

    levels: tuple[jax.Array, ...]
    latest: jax.Array

    @property
    def total(self) -> jax.Array:
        return self.levels[-1].sum()


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


MIN_ARITY, MAX_ARITY = 2, 64


def level_sizes(capacity: int, arity: int) -> list[int]:
    """Padded size of each level, leaves first."""
    if not MIN_ARITY <= arity <= MAX_ARITY:
        raise ValueError(f"tree arity must be in [{MIN_ARITY}, {MAX_ARITY}], got {arity}")
    if capacity < 1:
        raise ValueError(f"tree capacity must be positive, got {capacity}")
    sizes = [_ceil_div(capacity, arity) * arity]
    while sizes[-1] > arity:
        sizes.append(_ceil_div(sizes[-1] // arity, arity) * arity)
    return sizes


def init(capacity: int, arity: int = 16) -> SumTree:
    """An all-zero tree over ``capacity`` leaves."""
    sizes = level_sizes(capacity, arity)
    levels = tuple(jnp.zeros(n, jnp.float32) for n in sizes)
    return SumTree(levels, jnp.zeros(sizes[0], jnp.int32))


def latest_values(
    tree: SumTree, indices: jax.Array, values: jax.Array
) -> tuple[SumTree, jax.Array]:
    """For each position ``j``, the value of the *last* position holding ``indices[j]``.

    Scatter writes to one index in XLA are unordered; giving every duplicate the same value makes
    the write deterministic ("last write wins"). Without sorting: reset the touched workspace
    slots, scatter-max the batch positions (max is order-independent), gather the winners.
    """
    positions = jnp.arange(indices.shape[0], dtype=jnp.int32)
    latest = tree.latest.at[indices].set(-1).at[indices].max(positions)
    winner = latest.at[indices].get(mode="promise_in_bounds")
    return tree._replace(latest=latest), values[winner]


def update(tree: SumTree, indices: jax.Array, values: jax.Array, arity: int) -> SumTree:
    """Set leaves ``indices`` ``[B]`` to ``values`` ``[B]`` (last write wins), then recompute the
    touched parents of every level from their children."""
    tree, values = latest_values(tree, indices, values.astype(jnp.float32))
    levels = [tree.levels[0].at[indices].set(values)]
    nodes = indices
    for above in tree.levels[1:]:
        parents = nodes // arity
        # [B, K] contiguous sibling groups; every writer of one parent computes the same sum from
        # the updated level below, so duplicate parents agree too.
        children = levels[-1].reshape(-1, arity).at[parents].get(mode="promise_in_bounds")
        levels.append(above.at[parents].set(children.sum(axis=1)))
        nodes = parents
    return SumTree(tuple(levels), tree.latest)


def sample(tree: SumTree, key: jax.Array, batch_size: int, arity: int) -> jax.Array:
    """``batch_size`` leaf indices drawn i.i.d. with probability ``p_i / Σp``; a fresh uniform per
    level per draw. The tree must hold some positive priority."""
    depth = len(tree.levels)
    uniforms = jax.random.uniform(key, (depth, batch_size))  # one draw per level per sample
    # The top level is one group (at most K nodes, padded to K with zeros when shorter).
    top = jnp.pad(tree.levels[-1], (0, arity - tree.levels[-1].shape[0]))
    node = _choose(jnp.broadcast_to(top, (batch_size, arity)), uniforms[-1])
    for i, level in zip(range(depth - 2, -1, -1), reversed(tree.levels[:-1]), strict=True):
        # [B, K]: the children of each chosen node (in bounds by construction).
        groups = level.reshape(-1, arity).at[node].get(mode="promise_in_bounds")
        node = node * arity + _choose(groups, uniforms[i])
    return node


def _choose(groups: jax.Array, uniform: jax.Array) -> jax.Array:
    """Per row of ``groups`` ``[B, K]``, a child with probability proportional to its sum.

    The target is kept strictly below the row's cumulative total, so the chosen child is the
    first whose cumulative sum exceeds it: its own sum is positive (adding zero leaves a float
    cumulative sum unchanged). Zero-priority children are never chosen, whatever the rounding.
    """
    cumulative = prefix_sum(groups)
    total = cumulative[:, -1]
    target = jnp.minimum(uniform * total, jnp.nextafter(total, 0.0))
    return jnp.sum(cumulative <= target[:, None], axis=1).astype(jnp.int32)


def sample_stratified(tree: SumTree, key: jax.Array, batch_size: int, arity: int) -> jax.Array:
    """``batch_size`` indices, one per equal slice of the total mass (Schaul et al. 2016): a single
    target ``t_i = (i + u_i) · Σp / B`` carried down the tree. Lower variance, but the draws are
    not independent and the carried target loses precision for tiny priorities in float32."""
    total = tree.total
    u = jax.random.uniform(key, (batch_size,))
    target = (jnp.arange(batch_size) + u) * (total / batch_size)
    top = jnp.pad(tree.levels[-1], (0, arity - tree.levels[-1].shape[0]))
    node, target = _descend(jnp.broadcast_to(top, (batch_size, arity)), target)
    for level in reversed(tree.levels[:-1]):
        groups = level.reshape(-1, arity).at[node].get(mode="promise_in_bounds")
        child, target = _descend(groups, target)
        node = node * arity + child
    return node


def prefix_sum(groups: jax.Array) -> jax.Array:
    """Cumulative sums along the last axis (K ≤ 64), added strictly left to right.

    Sequential order makes ``c_j == c_{j−1}`` exactly when ``g_j == 0``, which the zero-priority
    guarantee relies on; XLA fuses the K adds into one kernel, several times faster on CPU than
    ``jnp.cumsum`` (a reduce-window).
    """
    columns = [groups[:, 0]]
    for j in range(1, groups.shape[1]):
        columns.append(columns[-1] + groups[:, j])
    return jnp.stack(columns, axis=1)


def _descend(groups: jax.Array, target: jax.Array) -> tuple[jax.Array, jax.Array]:
    cumulative = prefix_sum(groups)
    target = jnp.minimum(target, jnp.nextafter(cumulative[:, -1], 0.0))  # see _choose
    child = jnp.sum(cumulative <= target[:, None], axis=1)
    before = jnp.where(child > 0, jnp.take_along_axis(cumulative, child[:, None] - 1, 1)[:, 0], 0.0)
    return child.astype(jnp.int32), target - before

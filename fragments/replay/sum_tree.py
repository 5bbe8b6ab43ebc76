"""A K-ary sum tree over priorities, as pure functions on a pytree.

Zhang, Kuppannagari & Prasanna (HiPC 2021), "Parallel Actors and Learners: A Framework for
Generating Scalable RL Implementations": a K-ary tree whose siblings are contiguous (one cache line
for K = 16 float32), so a descent reads one contiguous group per level.

Layout: one array per level, leaves first. Level 0 holds the ``capacity`` leaves padded to a
multiple of K; level l+1 holds one node per group of K nodes of level l, again padded to a
multiple of K; the last level has at most K nodes and the total is its sum. Padding per level is
below K, so memory stays near ``capacity · K / (K − 1)`` rather than growing to K × capacity.

Memory: the levels (about ``capacity · K / (K − 1)`` float32) plus one int32 per leaf of
workspace for the batched update (see :func:`latest_values`).

Numerics (float32):

* an update writes the leaves, then recomputes every touched parent as the sum of its K children,
  added left to right. No delta is ever added, so sums do not drift however many updates run, and
  recomputing a parent that did not change gives back the same bits;
* sampling draws a *fresh* uniform at every level and picks a child in proportion to the children's
  sums. The probability of a leaf is the product of the per-level conditionals, exactly
  ``p_i / Σp`` up to one rounding per level; a single global target carried down the tree instead
  loses the low bits of small priorities, over-sampling them;
* a child whose sum is zero is never chosen, even when rounding pushes the uniform to the top of
  its range.

Speed. An update has two implementations with the same result, bit for bit; the program picks one
per backend when it is lowered (``jax.lax.platform_dependent``):

* on CPU, loops over the batch that write one leaf at a time and recompute its ancestors from
  their K children. Writing in order makes the last write win with no workspace. XLA's CPU
  compiler runs a while loop whose body touches at most about 1 KiB of memory as one compiled
  kernel (its small-while-loop hoisting), a few ns per scalar op; a larger body dispatches every
  op separately at each iteration, about 7× slower. So one loop recomputes at most
  :data:`LOOP_CHILDREN` children per element, and a deep or wide tree takes several loops, each
  finishing its levels for the whole batch before the next loop reads them. Each batched gather,
  scatter or reduction costs microseconds on a CPU: at 2^20 slots and K = 8 (one A/B run), a
  prioritized replay's update call takes 37 µs with the loops against 129 µs with the batched
  path at batch 256, and 242 against 428 µs at batch 4096 (27 to 30 µs of each is the call
  itself);
* elsewhere (GPU, TPU) batched: one scatter of the leaves, then one ``[B, K]`` gather and one
  scatter per level, with the workspace resolving duplicate indices. A loop there would launch
  kernels for every element.

Random bits come from :func:`jaxrl_fdg.rng.random_bits`: the bits of ``jax.random.bits``,
computed without the rolled loop JAX lowers threefry to on CPU.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxrl_fdg.rng import random_bits, unit_floats

__all__ = [
    "SumTree",
    "init",
    "latest_values",
    "level_sizes",
    "prefix_sum",
    "random_bits",
    "sample",
    "sample_stratified",
    "update",
    "update_if_current",
]


class SumTree(NamedTuple):
    """Levels from leaves (``levels[0]``) to the top group (``levels[-1]``, at most K nodes), and
    ``latest``, an int32 workspace per leaf that the batched update (off CPU) uses to resolve
    duplicate indices without sorting.

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

# Children one CPU update loop recomputes per element (K per level): 48 float32 keep every loop
# body small enough for XLA to compile the loop into one kernel, for every arity at capacities up
# to 2^26 at least (``tests/fragments/replay/test_sum_tree.py`` checks the compiled programs).
LOOP_CHILDREN = 48


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


def update(tree: SumTree, indices: jax.Array, values: jax.Array, arity: int) -> SumTree:
    """Set leaves ``indices`` ``[B]`` to ``values`` ``[B]`` (last write wins), then recompute the
    touched parents of every level from their children."""
    return _update(tree, indices, values, None, arity)[0]


def update_if_current(
    tree: SumTree,
    indices: jax.Array,
    values: jax.Array,
    arity: int,
    versions: jax.Array,
    expected: jax.Array,
) -> tuple[SumTree, jax.Array]:
    """:func:`update` restricted to positions ``j`` with ``versions[indices[j]] == expected[j]``
    (a compare-and-set; ``versions`` has one entry per leaf). The other positions are dropped: they
    write nothing and do not count as a write, so among duplicates the last *kept* one wins.

    Also returns the largest value written (0 if none; values are non-negative priorities). On CPU
    the check and the maximum happen inside the update loop: separate batched ops cost more there
    than the whole update.
    """
    return _update(tree, indices, values, (versions, expected), arity)


def _update(tree, indices, values, guard, arity):
    indices, values = indices.astype(jnp.int32), values.astype(jnp.float32)
    return lax.platform_dependent(
        tree,
        indices,
        values,
        guard,
        cpu=functools.partial(_update_in_loops, arity=arity),
        default=functools.partial(_update_batched, arity=arity),
    )


def _sum_in_order(children: list[jax.Array]) -> jax.Array:
    """``c_0 + c_1 + … + c_{K−1}`` left to right: both update paths add in this order, so they
    agree bit for bit, and the sum equals the last prefix sum :func:`_choose` computes."""
    total = children[0]
    for child in children[1:]:
        total = total + child
    return total


def _update_in_loops(tree, indices, values, guard, *, arity):
    """The CPU update of one tree: :func:`_loops` over one copy."""
    levels, written = _loops(arity, guard is not None)(
        tuple(level[None] for level in tree.levels),
        indices[None],
        values[None],
        *(array[None] for array in guard or ()),
    )
    return tree._replace(levels=tuple(level[0] for level in levels)), written[0]


@functools.cache
def _loops(arity: int, guarded: bool):
    """The CPU update as loops over ``C`` independent trees at once, stacked on a leading axis.

    ``C`` is 1 unless the update is vmapped: then the vmap axis joins it (``custom_vmap``), so
    several seeds in one program still update in single-kernel loops. Vmapping the loops instead
    would turn each in-loop read and write into a gather or scatter: with 4 seeds, batch 256 and
    2^16 slots, an update call takes about 1,000 µs that way, 230 µs vmapping the batched path
    and 90 µs like this.

    Arguments: ``levels`` (``[C, n_l]`` each), ``indices`` and ``values`` ``[C, B]``, and when
    ``guarded`` ``versions`` ``[C, N]`` and ``expected`` ``[C, B]`` (see
    :func:`update_if_current`). Returns the levels and the largest value written per tree
    ``[C]``.
    """

    @jax.custom_batching.custom_vmap
    def run(levels, indices, values, *guard):
        copies, batch = indices.shape
        sizes = [level.shape[1] for level in levels]
        if copies * max(sizes[0], guard[0].shape[1] if guarded else 0) >= 2**31:
            raise ValueError(f"{copies} trees of {sizes[0]} leaves overflow int32 offsets")
        flat = [level.reshape(-1) for level in levels]
        indices, values = indices.reshape(-1), values.reshape(-1)
        guard = (guard[0], guard[1].reshape(-1)) if guarded else None
        written = jnp.zeros(copies, jnp.float32)
        for number, chunk in enumerate(_loop_chunks(len(levels), arity)):
            written = _chunk_loop(
                flat, written, chunk, number == 0, indices, values, guard, sizes, batch, arity
            )
        return tuple(f.reshape(copies, size) for f, size in zip(flat, sizes, strict=True)), written

    @run.def_vmap
    def _vmap(axis_size, in_batched, *args):
        # [S, C, …] → [S·C, …]: the new axis becomes more copies (recursively for nested vmaps).
        def merge(x, batched):
            x = x if batched else jnp.broadcast_to(x, (axis_size, *x.shape))
            return x.reshape(-1, *x.shape[2:])

        levels, written = run(*jax.tree.map(merge, list(args), list(in_batched)))
        levels = tuple(level.reshape(axis_size, -1, level.shape[-1]) for level in levels)
        out = (levels, written.reshape(axis_size, -1))
        return out, jax.tree.map(lambda _: True, out)

    return run


def _loop_chunks(depth: int, arity: int) -> list[list[int]]:
    """The parent levels ``1 … depth − 1`` in groups of at most :data:`LOOP_CHILDREN` children
    per element, one group per loop (``[[]]`` for a one-level tree: the loop writes leaves only)."""
    per_loop = max(1, LOOP_CHILDREN // arity)
    parents = list(range(1, depth))
    return [parents[s : s + per_loop] for s in range(0, len(parents), per_loop)] or [[]]


def _chunk_loop(flat, written, chunk, writes_leaves, indices, values, guard, sizes, batch, arity):
    """One CPU update loop of :func:`_loops` over all ``C · B`` elements: writes the leaves if
    ``writes_leaves`` (the first loop), then recomputes the parents on the levels in ``chunk``.

    ``flat`` holds each level flattened to ``[C · n_l]`` and is updated in place (a Python list);
    ``indices``, ``values`` and ``guard``'s ``expected`` are ``[C · B]``, ``written`` ``[C]``.
    Returns the new ``written``.
    """
    # Only the levels this loop reads or writes are carried through it.
    carried = sorted({lv - 1 for lv in chunk} | set(chunk) | ({0} if writes_leaves else set()))

    def body(t, carry):
        arrays, written = carry
        arrays = dict(zip(carried, arrays, strict=True))
        # Element t is position t % B of tree t // B.
        copy, node = lax.div(t, batch), indices[t]
        if writes_leaves:
            leaf, value = copy * sizes[0] + node, values[t]
            if guard is not None:
                versions, expected = guard
                current = versions[copy, node] == expected[t]
                most = jnp.maximum(written[copy], jnp.where(current, value, 0.0))
                written = lax.dynamic_update_index_in_dim(written, most, copy, 0)
                # Read the leaf only to rewrite it: a second reader of the level would make XLA
                # copy the whole level each iteration to write it in place.
                value = jnp.where(current, value, arrays[0][leaf])
            arrays[0] = lax.dynamic_update_index_in_dim(arrays[0], value, leaf, 0)
        for _ in range(chunk[0] - 1 if chunk else 0):
            node = lax.div(node, arity)
        for level in chunk:
            node = lax.div(node, arity)
            first_child = copy * sizes[level - 1] + node * arity
            children = lax.dynamic_slice_in_dim(arrays[level - 1], first_child, arity)
            total = _sum_in_order([children[k] for k in range(arity)])
            parent = copy * sizes[level] + node
            arrays[level] = lax.dynamic_update_index_in_dim(arrays[level], total, parent, 0)
        return tuple(arrays[level] for level in carried), written

    start = (tuple(flat[level] for level in carried), written)
    arrays, written = lax.fori_loop(0, indices.shape[0], body, start)
    for level, array in zip(carried, arrays, strict=True):
        flat[level] = array
    return written


def latest_values(
    tree: SumTree, indices: jax.Array, values: jax.Array
) -> tuple[SumTree, jax.Array]:
    """For each position ``j``, the value of the *last* position holding ``indices[j]``.

    Scatter writes to one index in XLA are unordered; giving every duplicate the same value makes
    the write deterministic ("last write wins"). Without sorting: reset the touched workspace
    slots, scatter-max the batch positions (max is order-independent), gather the winners.
    Indices out of range (dropped positions) take no part.
    """
    positions = jnp.arange(indices.shape[0], dtype=jnp.int32)
    latest = tree.latest.at[indices].set(-1, mode="drop").at[indices].max(positions, mode="drop")
    winner = latest.at[indices].get(mode="fill", fill_value=0)
    return tree._replace(latest=latest), values[winner]


def _update_batched(tree, indices, values, guard, *, arity):
    """The update for accelerators: one batched scatter or gather per level."""
    written = jnp.zeros((), jnp.float32)
    targets = indices
    if guard is not None:
        versions, expected = guard
        current = versions[indices] == expected
        written = jnp.max(jnp.where(current, values, 0.0))
        targets = jnp.where(current, indices, tree.levels[0].shape[0])  # out of range: dropped
    tree, values = latest_values(tree, targets, values)
    levels = [tree.levels[0].at[targets].set(values, mode="drop")]
    nodes = indices  # recomputing an untouched parent gives back its bits
    for above in tree.levels[1:]:
        parents = nodes // arity
        # [B, K] contiguous sibling groups; every writer of one parent computes the same sum from
        # the updated level below, so duplicate parents agree too.
        groups = levels[-1].reshape(-1, arity).at[parents].get(mode="promise_in_bounds")
        total = _sum_in_order([groups[:, k] for k in range(arity)])
        levels.append(above.at[parents].set(total))
        nodes = parents
    return tree._replace(levels=tuple(levels)), written


def sample(tree: SumTree, key: jax.Array, batch_size: int, arity: int) -> jax.Array:
    """``batch_size`` leaf indices drawn i.i.d. with probability ``p_i / Σp``; a fresh uniform per
    level per draw. The tree must hold some positive priority."""
    depth = len(tree.levels)
    # One draw per level per sample, the same as jax.random.uniform(key, (depth, batch_size)).
    uniforms = unit_floats(random_bits(key, (depth, batch_size)))
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
    u = unit_floats(random_bits(key, (batch_size,)))
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

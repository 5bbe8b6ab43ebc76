"""The K-ary sum tree against a numpy reference, and its sampling distribution."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxrl_fdg import testing
from jaxrl_fdg.fragments.replay import sum_tree


def _reference_levels(leaves: np.ndarray, arity: int, sizes: list[int]) -> list[np.ndarray]:
    levels = [np.zeros(sizes[0], np.float64)]
    levels[0][: len(leaves)] = leaves
    for size in sizes[1:]:
        sums = levels[-1].reshape(-1, arity).sum(axis=1)
        level = np.zeros(size)
        level[: len(sums)] = sums
        levels.append(level)
    return levels


@pytest.mark.parametrize("capacity, arity", [(1, 2), (5, 2), (100, 4), (1000, 16), (4097, 64)])
def test_sums_at_every_level_match_numpy_after_random_updates(capacity, arity):
    rng = np.random.default_rng(capacity)
    tree = sum_tree.init(capacity, arity)
    leaves = np.zeros(capacity)
    update = jax.jit(sum_tree.update, static_argnums=3)
    for _ in range(20):
        idx = rng.integers(0, capacity, size=min(64, 2 * capacity))
        val = rng.random(idx.shape).astype(np.float32)
        tree = update(tree, jnp.asarray(idx), jnp.asarray(val), arity)
        for i, v in zip(idx, val, strict=True):  # sequential: the last write wins
            leaves[i] = v
    reference = _reference_levels(leaves, arity, sum_tree.level_sizes(capacity, arity))
    assert len(tree.levels) == len(reference)
    for got, want in zip(tree.levels, reference, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_memory_stays_near_capacity():
    # Padding each level only to a multiple of K: total ≈ N·K/(K−1), never K·N (plus one int32
    # workspace entry per leaf).
    for arity in (2, 16, 64):
        total = sum(sum_tree.level_sizes(2**20, arity))
        assert total <= 2**20 * arity / (arity - 1) + 64 * 8


def test_duplicate_indices_last_write_wins():
    tree = sum_tree.init(8, 2)
    update = jax.jit(sum_tree.update, static_argnums=3)
    tree = update(tree, jnp.array([3, 5, 3, 3]), jnp.array([1.0, 2.0, 7.0, 4.0]), 2)
    assert float(tree.levels[0][3]) == 4.0 and float(tree.total) == 6.0
    # The workspace needs no reset between updates: an earlier batch cannot win a later one.
    tree = update(tree, jnp.array([5, 3, 5]), jnp.array([9.0, 0.5, 1.0]), 2)
    np.testing.assert_allclose(np.asarray(tree.levels[0])[[3, 5]], [0.5, 1.0])
    assert float(tree.total) == 1.5


def test_no_drift_after_many_updates():
    # Recomputing parents from children: after 2,000 rounds of random rewrites the root equals the
    # float64 sum of the leaves to float32 rounding (delta updates drift far more).
    rng = np.random.default_rng(0)
    capacity, arity = 4096, 16
    tree = sum_tree.init(capacity, arity)
    update = jax.jit(sum_tree.update, static_argnums=3)
    leaves = np.zeros(capacity)
    for _ in range(2000):
        idx = rng.integers(0, capacity, 32)
        val = (rng.random(32) * 10.0 ** rng.integers(-4, 3, 32)).astype(np.float32)
        tree = update(tree, jnp.asarray(idx), jnp.asarray(val), arity)
        for i, v in zip(idx, val, strict=True):  # sequential: the last write wins
            leaves[i] = v
    np.testing.assert_allclose(float(tree.total), leaves.sum(), rtol=1e-5)


@pytest.mark.parametrize("sampler", [sum_tree.sample, sum_tree.sample_stratified])
def test_zero_priority_slots_are_never_sampled(sampler):
    capacity, arity = 1000, 16
    priorities = np.zeros(capacity, np.float32)
    live = np.arange(0, capacity, 7)
    priorities[live] = np.random.default_rng(0).random(len(live)) + 1e-3
    tree = sum_tree.update(
        sum_tree.init(capacity, arity), jnp.arange(capacity), jnp.asarray(priorities), arity
    )
    draw = jax.jit(sampler, static_argnums=(2, 3))
    for seed in range(20):
        idx = np.asarray(draw(tree, jax.random.key(seed), 4096, arity))
        assert np.all(priorities[idx] > 0)


def _frequencies(arity, priorities, n_draws, seed=0):
    capacity = len(priorities)
    tree = sum_tree.update(
        sum_tree.init(capacity, arity), jnp.arange(capacity), jnp.asarray(priorities), arity
    )
    draw = jax.jit(sum_tree.sample, static_argnums=(2, 3))
    counts = np.zeros(capacity)
    for i in range(n_draws // 10_000):
        np.add.at(counts, np.asarray(draw(tree, jax.random.key(seed + i), 10_000, arity)), 1)
    return counts


@pytest.mark.parametrize("arity", [2, 16])
def test_sampling_frequencies_match_priorities_chi_square(arity):
    # i.i.d. mode, so a chi-square goodness-of-fit test is valid (stratified draws are
    # under-dispersed and would pass it vacuously). 200k draws over 50 slots.
    priorities = np.random.default_rng(1).random(50).astype(np.float32) + 0.05
    counts = _frequencies(arity, priorities, 200_000)
    expected = priorities / priorities.sum() * counts.sum()
    _, p_value = stats.chisquare(counts, expected)
    assert p_value > 1e-3, p_value


def test_arity_2_and_16_agree_in_distribution():
    priorities = np.random.default_rng(2).random(40).astype(np.float32) + 0.05
    a = _frequencies(2, priorities, 100_000, seed=100)
    b = _frequencies(16, priorities, 100_000, seed=200)
    _, p_value, _, _ = stats.chi2_contingency(np.stack([a, b]))
    assert p_value > 1e-3, p_value


def test_precision_with_tiny_priorities_at_2_pow_20_slots():
    # 2^20 slots at priority 1e-6 and one slot holding half the total mass. A single global target
    # carried down a float32 tree distorts small leaves; per-level uniforms keep P(i) exact to
    # rounding. Expected share of the big slot: 1/2; of the tiny ones together: 1/2.
    capacity, arity = 2**20, 16
    tiny = 1e-6
    priorities = jnp.full(capacity, tiny, jnp.float32).at[0].set(tiny * (capacity - 1))
    tree = sum_tree.update(sum_tree.init(capacity, arity), jnp.arange(capacity), priorities, arity)
    np.testing.assert_allclose(float(tree.total), 2 * tiny * (capacity - 1), rtol=1e-4)
    draw = jax.jit(sum_tree.sample, static_argnums=(2, 3))
    idx = np.concatenate(
        [np.asarray(draw(tree, jax.random.key(s), 50_000, arity)) for s in range(4)]
    )
    share = float(np.mean(idx == 0))
    assert abs(share - 0.5) < 4 * np.sqrt(0.25 / len(idx)), share  # within 4σ of 1/2
    assert len(np.unique(idx[idx > 0])) > 0.9 * (idx > 0).sum()  # the tiny ones spread out


def _random_batches(capacity, batch, rounds, seed):
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        # Drawn from half as many slots as the batch holds, so it holds duplicates.
        pool = rng.choice(capacity, size=min(capacity, batch // 2), replace=False)
        idx = rng.choice(pool, batch)
        yield jnp.asarray(idx), jnp.asarray(rng.random(batch).astype(np.float32))


@pytest.mark.parametrize("capacity, arity", [(1, 2), (100, 3), (4096, 8), (5000, 64), (2**16, 2)])
def test_loop_and_batched_updates_agree_bit_for_bit(capacity, arity):
    # The CPU loops and the accelerator path add children in the same order, so they agree
    # exactly, duplicates and dropped (stale) positions included.
    loops = jax.jit(functools.partial(sum_tree._update_in_loops, arity=arity))
    batched = jax.jit(functools.partial(sum_tree._update_batched, arity=arity))
    versions = jnp.asarray(np.random.default_rng(1).integers(0, 2, capacity), jnp.int32)
    a = b = sum_tree.init(capacity, arity)
    for round_, (idx, val) in enumerate(_random_batches(capacity, 64, 10, seed=capacity)):
        guard = None if round_ % 2 else (versions, jnp.ones(64, jnp.int32))
        a, written_a = loops(a, idx, val, guard)
        b, written_b = batched(b, idx, val, guard)
        testing.assert_same_bits(a.levels, b.levels, f"round {round_}")
        assert float(written_a) == float(written_b)


@pytest.mark.parametrize(
    "path", [sum_tree.update_if_current, sum_tree._update_in_loops, sum_tree._update_batched]
)
def test_update_if_current_drops_stale_positions(path):
    # Slot 3 is current (version 1) at positions 0 and 2, stale at position 3 (expected 0): the
    # last *kept* write (position 2) wins. Slot 5 is stale everywhere: unchanged.
    tree = sum_tree.update(sum_tree.init(8, 2), jnp.arange(8), jnp.ones(8), 2)
    versions = jnp.ones(8, jnp.int32)
    indices, values = jnp.array([3, 5, 3, 3]), jnp.array([2.0, 9.0, 7.0, 8.0])
    expected = jnp.array([1, 0, 1, 0])
    if path is sum_tree.update_if_current:
        tree, written = jax.jit(path, static_argnums=3)(
            tree, indices, values, 2, versions, expected
        )
    else:
        tree, written = jax.jit(functools.partial(path, arity=2))(
            tree, indices, values, (versions, expected)
        )
    np.testing.assert_array_equal(np.asarray(tree.levels[0])[[3, 5]], [7.0, 1.0])
    assert float(written) == 7.0  # the largest value written; the stale 9 and 8 do not count
    assert float(tree.total) == 7.0 + 7 * 1.0  # slot 3 at 7, the other seven at 1


def test_vmapped_updates_match_updates_of_each_tree():
    # On CPU the vmap axis joins the loops' copies axis (custom_vmap), nested vmaps included.
    capacity, arity, batch = 300, 4, 16
    rng = np.random.default_rng(3)
    idx = jnp.asarray(rng.integers(0, capacity, (2, 3, batch)), jnp.int32)
    val = jnp.asarray(rng.random((2, 3, batch)), jnp.float32)
    versions = jnp.asarray(rng.integers(0, 2, (2, 3, capacity)), jnp.int32)
    expected = jnp.ones((2, 3, batch), jnp.int32)
    trees = jax.tree.map(
        lambda x: jnp.broadcast_to(x, (2, 3, *x.shape)), sum_tree.init(capacity, arity)
    )

    def one(tree, i, v, ver, e):
        return sum_tree.update_if_current(tree, i, v, arity, ver, e)

    got, written = jax.jit(jax.vmap(jax.vmap(one)))(trees, idx, val, versions, expected)
    for s in range(2):
        for c in range(3):
            tree = jax.tree.map(lambda x, s=s, c=c: x[s, c], trees)
            want, w = jax.jit(one)(tree, idx[s, c], val[s, c], versions[s, c], expected[s, c])
            for x, y in zip(got.levels, want.levels, strict=True):
                np.testing.assert_array_equal(x[s, c], y)
            assert float(written[s, c]) == float(w)
    # Indices shared by every tree (not batched) are broadcast.
    shared = jax.jit(jax.vmap(lambda t, v: sum_tree.update(t, idx[0, 0], v, arity)))(
        jax.tree.map(lambda x: x[0], trees), val[0]
    )
    for c in range(3):
        want = sum_tree.update(sum_tree.init(capacity, arity), idx[0, 0], val[0, c], arity)
        np.testing.assert_array_equal(shared.levels[0][c], want.levels[0])


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA's CPU compiler")
@pytest.mark.parametrize("arity", [2, 5, 8, 16, 64])
@pytest.mark.parametrize("capacity", [2**20, 2**24])
@pytest.mark.parametrize("copies", [None, 4])
def test_cpu_update_loops_compile_to_single_kernels(arity, capacity, copies):
    # XLA runs a while loop as one compiled kernel only when its body touches little memory (its
    # SmallWhileLoopHoistingPass marks it `xla_cpu_small_call`); otherwise every iteration
    # dispatches each op separately, 10-20x slower. sum_tree.LOOP_CHILDREN keeps every loop small.
    batch = 256
    tree = jax.eval_shape(lambda: sum_tree.init(capacity, arity))
    args = [
        tree,
        jax.ShapeDtypeStruct((batch,), jnp.int32),
        jax.ShapeDtypeStruct((batch,), jnp.float32),
        jax.ShapeDtypeStruct((capacity,), jnp.int32),
        jax.ShapeDtypeStruct((batch,), jnp.int32),
    ]

    def fn(tree, indices, values, versions, expected):
        return sum_tree.update_if_current(tree, indices, values, arity, versions, expected)

    if copies:
        args = jax.tree.map(lambda x: jax.ShapeDtypeStruct((copies, *x.shape), x.dtype), args)
        fn = jax.vmap(fn)
    hlo = jax.jit(fn, donate_argnums=0).lower(*args).compile().as_text()
    loops = len(re.findall(r" while\(", hlo))
    compiled = len(re.findall(r"xla_cpu_small_call", hlo))
    assert loops >= 1 and compiled == loops, (loops, compiled)

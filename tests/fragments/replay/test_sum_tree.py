"""The K-ary sum tree against a numpy reference, and its sampling distribution."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

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

"""Uniform and prioritized replay: ring writes, weights, lazy writing, jit/vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg.fragments import replay

EXAMPLE = {"obs": jnp.zeros(3), "action": jnp.int32(0), "reward": jnp.float32(0)}


def _compiled(buffer):
    """``buffer`` with its functions jitted: called op by op, each test compiled dozens of one-op
    programs."""
    names = ("add", "sample", "update_priorities", "can_sample")
    return buffer._replace(**{name: jax.jit(getattr(buffer, name)) for name in names})


def _batch(start, n):
    return {
        "obs": jnp.tile(jnp.arange(start, start + n, dtype=jnp.float32)[:, None], (1, 3)),
        "action": jnp.arange(start, start + n, dtype=jnp.int32),
        "reward": jnp.ones(n),
    }


@pytest.mark.parametrize("make", [replay.make_uniform, replay.make_prioritized])
def test_ring_writes_are_contiguous_and_wrap(make):
    buffer = _compiled(make(capacity=8, batch_size=4))
    state = buffer.init(EXAMPLE)
    assert not bool(buffer.can_sample(state))
    state = buffer.add(state, _batch(0, 6))
    state = buffer.add(state, _batch(6, 5))  # 11 transitions into 8 slots: wraps by 3
    assert int(state.size) == 8 and int(state.position) == 3
    np.testing.assert_array_equal(state.storage["action"], [8, 9, 10, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(state.writes, [2, 2, 2, 1, 1, 1, 1, 1])
    assert bool(buffer.can_sample(state))
    sample = buffer.sample(state, jax.random.key(0))
    np.testing.assert_array_equal(
        sample.transitions["action"], state.storage["action"][sample.indices]
    )


def test_importance_weights_known_answer():
    # Priorities after updates with α = 1, ε = 0: p = |δ| = [1, 3] on slots 0, 1 (others 0).
    # P = [1/4, 3/4]; N = 2 stored; β = 1: w = (N·P)^−1 = [2, 2/3]; / max → [1, 1/3].
    buffer = _compiled(
        replay.make_prioritized(
            capacity=4, batch_size=64, alpha=1.0, epsilon=0.0, arity=2, min_size=1
        )
    )
    state = buffer.add(buffer.init(EXAMPLE), _batch(0, 2))
    state = buffer.update_priorities(
        state, jnp.array([0, 1]), state.writes[:2], jnp.array([1.0, -3.0])
    )
    sample = buffer.sample(state, jax.random.key(1), 1.0)
    weights = dict(zip(np.asarray(sample.indices), np.asarray(sample.weights), strict=True))
    assert set(weights) == {0, 1}
    np.testing.assert_allclose([weights[0], weights[1]], [1.0, 1.0 / 3.0], rtol=1e-6)
    np.testing.assert_allclose(
        sorted(set(np.asarray(sample.probabilities).round(6))), [0.25, 0.75], rtol=1e-5
    )
    # β = 0.5: w = (N·P)^−0.5 = [√2, √(2/3)]; / max → [1, 1/√3].
    sample = buffer.sample(state, jax.random.key(2), 0.5)
    weights = dict(zip(np.asarray(sample.indices), np.asarray(sample.weights), strict=True))
    np.testing.assert_allclose(weights[1], 1 / np.sqrt(3), rtol=1e-5)


def test_new_transitions_enter_at_the_largest_priority():
    buffer = _compiled(
        replay.make_prioritized(capacity=8, batch_size=2, alpha=1.0, epsilon=0.0, arity=2)
    )
    state = buffer.add(buffer.init(EXAMPLE), _batch(0, 2))
    state = buffer.update_priorities(state, jnp.array([0]), state.writes[:1], jnp.array([5.0]))
    state = buffer.add(state, _batch(2, 1))
    np.testing.assert_allclose(state.tree.levels[0][:3], [5.0, 1.0, 5.0])


def test_stale_priority_updates_are_dropped_after_overwrite():
    buffer = _compiled(
        replay.make_prioritized(capacity=4, batch_size=4, alpha=1.0, epsilon=0.0, arity=2)
    )
    state = buffer.add(buffer.init(EXAMPLE), _batch(0, 4))
    sample = buffer.sample(state, jax.random.key(0))
    state = buffer.add(state, _batch(4, 2))  # slots 0 and 1 overwritten after sampling
    state = buffer.update_priorities(state, sample.indices, sample.writes, jnp.full(4, 9.0))
    leaves = np.asarray(state.tree.levels[0][:4])
    for i in np.asarray(sample.indices):
        assert leaves[i] == (1.0 if i < 2 else 9.0), (i, leaves)


def test_stale_updates_do_not_raise_the_max_priority():
    buffer = _compiled(
        replay.make_prioritized(capacity=2, batch_size=2, alpha=1.0, epsilon=0.0, arity=2)
    )
    state = buffer.add(buffer.init(EXAMPLE), _batch(0, 2))
    sample = buffer.sample(state, jax.random.key(0))
    state = buffer.add(state, _batch(2, 2))  # both slots overwritten
    state = buffer.update_priorities(state, sample.indices, sample.writes, jnp.full(2, 50.0))
    assert float(state.max_priority) == 1.0
    np.testing.assert_array_equal(state.tree.levels[0], [1.0, 1.0])


def test_priority_exponent():
    buffer = _compiled(
        replay.make_prioritized(capacity=4, batch_size=2, alpha=0.5, epsilon=0.0, arity=2)
    )
    state = buffer.add(buffer.init(EXAMPLE), _batch(0, 2))
    state = buffer.update_priorities(
        state, jnp.array([0, 1]), state.writes[:2], jnp.array([4.0, 9.0])
    )
    np.testing.assert_allclose(state.tree.levels[0][:2], [2.0, 3.0])  # (|δ| + 0)^½


def test_works_under_jit_scan_and_vmap_over_seeds():
    buffer = replay.make_prioritized(capacity=64, batch_size=8, arity=4)

    def run(key):
        state = buffer.init(EXAMPLE)

        def step(state, key):
            k_add, k_sample = jax.random.split(key)
            state = buffer.add(state, _batch(0, 4))
            sample = buffer.sample(state, k_sample, 0.4)
            td = jax.random.normal(k_add, (8,))
            return buffer.update_priorities(
                state, sample.indices, sample.writes, td
            ), sample.weights

        return jax.lax.scan(step, state, jax.random.split(key, 20))

    states, weights = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(0), 3))
    assert weights.shape == (3, 20, 8) and bool(jnp.all((weights > 0) & (weights <= 1)))
    assert not np.allclose(states.tree.levels[0][0], states.tree.levels[0][1])


def test_bad_configuration():
    with pytest.raises(ValueError, match="arity must be in \\[2, 64\\], got 1"):
        replay.make_prioritized(capacity=8, batch_size=2, arity=1)
    with pytest.raises(ValueError, match="min_size = 9 exceeds capacity = 8"):
        replay.make_uniform(capacity=8, batch_size=2, min_size=9)
    with pytest.raises(ValueError, match="alpha must be in"):
        replay.make_prioritized(capacity=8, batch_size=2, alpha=2.0)


def test_linear_beta():
    beta = replay.linear_beta(0.4, 100)
    np.testing.assert_allclose([beta(0), beta(50), beta(100), beta(500)], [0.4, 0.7, 1.0, 1.0])

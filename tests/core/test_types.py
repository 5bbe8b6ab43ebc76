"""The core's shared types (``jaxrl_fdg.core.types``): a transition's fields in the order
learners unpack them, and a loop state whose optional parts are absent from its leaves until
set (a lagged loop's pending rollout, a population), so checkpoints of a plain loop hold none."""

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.types import LoopState, Pending, Transition


def test_a_transition_has_the_documented_fields_in_order():
    assert Transition._fields == (
        "observation",
        "action",
        "reward",
        "terminated",
        "truncated",
        "next_observation",
        "extras",
        "info",
    )
    assert Pending._fields == ("trajectory", "key", "version")


def test_a_loop_state_without_pending_or_population_has_no_leaves_for_them():
    state = LoopState({"learner": jnp.ones(2)}, jax.random.key(0), jnp.int32(3))
    assert state.pending is None and state.population is None
    assert len(jax.tree.leaves(state)) == 3  # the learner's array, the key, the iteration
    step = Transition(*(jnp.zeros(2),) * 6, extras={}, info={})
    pending = Pending(step, jax.random.key(1), jnp.int32(2))
    with_pending = state._replace(pending=pending, population=jnp.zeros(4))
    assert len(jax.tree.leaves(with_pending)) == 3 + (6 + 2) + 1


def test_a_loop_state_maps_and_rebuilds_as_a_pytree():
    state = LoopState({"a": jnp.ones(2), "b": jnp.zeros(3)}, jnp.int32(7), jnp.int32(1))
    doubled = jax.tree.map(lambda x: x * 2, state)
    assert isinstance(doubled, LoopState) and sorted(doubled.fragments) == ["a", "b"]
    assert int(doubled.key) == 14 and float(doubled.fragments["a"].sum()) == 4.0

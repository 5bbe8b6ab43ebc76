"""Replay buffers as pure functions: uniform and prioritized, one interface.

``make_uniform`` and ``make_prioritized`` return a :class:`ReplayBuffer`, a NamedTuple of pure
functions (``init``, ``add``, ``sample``, ``update_priorities``, ``can_sample``) over a
:class:`ReplayState` pytree. Everything works under ``jit``, ``scan`` and ``vmap``.

Prioritized experience replay, Schaul, Quan, Antonoglou & Silver (ICLR 2016):

    p_i = (|δ_i| + ε)^α          P(i) = p_i / Σ_k p_k
    w_i = (N · P(i))^(−β) / max_j w_j        (max over the sampled batch; β annealed to 1)

New transitions enter with the largest priority seen so far, so each is sampled at least once soon.

Lazy writing (Zhang et al., HiPC 2021): every slot counts its writes. ``sample`` returns the count
it saw; ``update_priorities`` drops an update whose slot has been overwritten since, so a learner
that computed TD errors on old data never stamps them onto new data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.fragments.replay import sum_tree
from jaxrl_fdg.fragments.replay.sum_tree import SumTree


class ReplayState(NamedTuple):
    """Storage ``[N, ...]`` per leaf of the transition pytree, the ring position, the number of
    valid slots, each slot's write count, the priority tree (empty for uniform replay) and the
    largest priority seen (new transitions enter with it)."""

    storage: Any
    position: jax.Array
    size: jax.Array
    writes: jax.Array
    tree: SumTree
    max_priority: jax.Array


class Sample(NamedTuple):
    """A sampled batch: ``indices`` ``[B]``, the ``transitions`` there, importance ``weights``
    ``[B]`` (ones for uniform replay), the slots' write counts at sampling (for lazy writing) and
    the sampling probabilities."""

    indices: jax.Array
    transitions: Any
    weights: jax.Array
    writes: jax.Array
    probabilities: jax.Array


class ReplayBuffer(NamedTuple):
    """Pure functions over :class:`ReplayState`.

    Attributes:
      init: ``example_transition -> state`` (the example fixes shapes and dtypes; no batch axis).
      add: ``(state, transitions [B, ...]) -> state``; contiguous ring writes.
      sample: ``(state, key, beta) -> Sample``; ``beta`` is the importance-sampling exponent.
      update_priorities: ``(state, indices [B], writes [B], td_errors [B]) -> state``.
      can_sample: ``state -> bool``: at least ``min_size`` transitions stored.
    """

    init: Callable[[Any], ReplayState]
    add: Callable[[ReplayState, Any], ReplayState]
    sample: Callable[..., Sample]
    update_priorities: Callable[..., ReplayState]
    can_sample: Callable[[ReplayState], jax.Array]


def _check(capacity: int, batch_size: int, min_size: int) -> None:
    for name, value in (("capacity", capacity), ("batch_size", batch_size), ("min_size", min_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"replay {name} must be a positive integer, got {value!r}")
    if min_size > capacity:
        raise ValueError(f"replay min_size = {min_size} exceeds capacity = {capacity}")


def _init(capacity: int, arity: int, prioritized: bool):
    def init(example: Any) -> ReplayState:
        storage = jax.tree.map(
            lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), example
        )
        # Uniform replay keeps no tree: a 1-leaf placeholder keeps the state's structure uniform.
        tree = sum_tree.init(capacity if prioritized else 1, arity)
        zero = jnp.zeros((), jnp.int32)
        return ReplayState(
            storage, zero, zero, jnp.zeros(capacity, jnp.int32), tree, jnp.ones((), jnp.float32)
        )

    return init


def _write(state: ReplayState, transitions: Any, capacity: int) -> tuple[ReplayState, jax.Array]:
    batch = jax.tree.leaves(transitions)[0].shape[0]
    if batch > capacity:
        raise ValueError(f"cannot add {batch} transitions at once to a buffer of {capacity}")
    slots = (state.position + jnp.arange(batch)) % capacity
    storage = jax.tree.map(lambda s, x: s.at[slots].set(x), state.storage, transitions)
    state = state._replace(
        storage=storage,
        position=(state.position + batch) % capacity,
        size=jnp.minimum(state.size + batch, capacity),
        writes=state.writes.at[slots].add(1),
    )
    return state, slots


def make_uniform(capacity: int, batch_size: int, min_size: int | None = None) -> ReplayBuffer:
    """Uniform replay over the last ``capacity`` transitions."""
    min_size = batch_size if min_size is None else min_size
    _check(capacity, batch_size, min_size)

    def add(state, transitions):
        return _write(state, transitions, capacity)[0]

    def sample(state, key, beta=1.0):
        del beta
        # One draw of random bits (randint makes two); the modulo bias is below size / 2^32
        # (2.4e-4 relative at 2^20 slots).
        bits = sum_tree.random_bits(key, (batch_size,))
        indices = (bits % jnp.maximum(state.size, 1).astype(jnp.uint32)).astype(jnp.int32)
        probabilities = jnp.full((batch_size,), 1.0) / jnp.maximum(state.size, 1)
        transitions = jax.tree.map(lambda s: s[indices], state.storage)
        return Sample(
            indices, transitions, jnp.ones(batch_size), state.writes[indices], probabilities
        )

    def update_priorities(state, indices, writes, td_errors):
        del indices, writes, td_errors
        return state

    return ReplayBuffer(
        _init(capacity, 2, False),
        add,
        sample,
        update_priorities,
        lambda state: state.size >= min_size,
    )


def make_prioritized(
    capacity: int,
    batch_size: int,
    *,
    min_size: int | None = None,
    alpha: float = 0.6,
    epsilon: float = 1e-6,
    arity: int = 8,
    stratified: bool = False,
) -> ReplayBuffer:
    """Prioritized replay on a K-ary sum tree (``arity`` K in [2, 64]).

    K = 8 by default: on the 2-core CPU it samples fastest at batches 256 and 4096, and updates
    within 10% of the fastest arity (K = 16, which samples 1.2× slower at 256 and 1.5× at 4096);
    see ``benchmarks/replay.py`` and the README table.

    ``stratified=False`` (default) draws i.i.d. with a fresh uniform per tree level;
    ``stratified=True`` draws one sample per equal slice of the total priority.
    """
    min_size = batch_size if min_size is None else min_size
    _check(capacity, batch_size, min_size)
    sum_tree.level_sizes(capacity, arity)  # validates the arity
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"priority exponent alpha must be in [0, 1], got {alpha}")
    draw = sum_tree.sample_stratified if stratified else sum_tree.sample

    def add(state, transitions):
        state, slots = _write(state, transitions, capacity)
        priority = jnp.full(slots.shape, state.max_priority)
        return state._replace(tree=sum_tree.update(state.tree, slots, priority, arity))

    return ReplayBuffer(
        _init(capacity, arity, True),
        add,
        _prioritized_sample(draw, batch_size, arity),
        _priority_updater(alpha, epsilon, arity),
        lambda state: state.size >= min_size,
    )


def _prioritized_sample(draw: Callable[..., jax.Array], batch_size: int, arity: int):
    """``sample`` of prioritized replay: ``batch_size`` slots drawn by ``draw`` with
    ``P(i) = p_i / Σp``, and their importance weights ``w_i = (N · P(i))^−β / max_j w_j``."""

    def sample(state, key, beta=1.0):
        indices = draw(state.tree, key, batch_size, arity)
        total = state.tree.total
        probabilities = state.tree.levels[0][indices] / total
        # w_i = (N · P(i))^−β, normalised by the batch maximum so weights only scale updates down.
        weights = (state.size * probabilities) ** (-beta)
        weights = weights / weights.max()
        transitions = jax.tree.map(lambda s: s[indices], state.storage)
        return Sample(indices, transitions, weights, state.writes[indices], probabilities)

    return sample


def _priority_updater(alpha: float, epsilon: float, arity: int):
    """``update_priorities`` of prioritized replay: ``p_i = (|δ_i| + ε)^α`` at the sampled slots
    still holding what was sampled, and the running maximum priority."""

    def update_priorities(state, indices, writes, td_errors):
        priority = (jnp.abs(td_errors) + epsilon) ** alpha
        # Lazy writing: an update whose slot was overwritten since it was sampled (its write count
        # moved on) is dropped; among duplicates the last update kept wins.
        tree, written = sum_tree.update_if_current(
            state.tree, indices, priority, arity, state.writes, writes
        )
        return state._replace(tree=tree, max_priority=jnp.maximum(state.max_priority, written))

    return update_priorities


def linear_beta(start: float, steps: int) -> Callable[[jax.Array], jax.Array]:
    """β annealed linearly from ``start`` to 1 over ``steps`` (then held at 1)."""
    return lambda step: jnp.minimum(1.0, start + (1.0 - start) * step / max(steps, 1))

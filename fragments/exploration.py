"""Exploration for value-based and off-policy actors: warm-up with random actions, ε-greedy and
its schedule, Gaussian noise, and the actor fragment whose state counts the env steps taken.

Every function of actions is pure and batched over the leading axis ``B`` (one row per
environment).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import rng
from jaxrl_fdg.core.fragment import Fragment, Role, fragment
from jaxrl_fdg.core.names import ACTION, ACTION_MASK, OBSERVATION, PARAMS
from jaxrl_fdg.envs.spaces import Box, Discrete, Space
from jaxrl_fdg.fragments import distributions


def epsilon_schedule(start: float, end: float, fraction: float, total_steps: int) -> optax.Schedule:
    """ε falling linearly from ``start`` to ``end`` over the first ``fraction`` of
    ``total_steps`` env steps, then staying at ``end``."""
    return optax.linear_schedule(start, end, max(1, int(fraction * total_steps)))


def counting_actor(
    act: Callable[[jax.Array, Any, jax.Array], Any], masked: bool = False
) -> Fragment:
    """The actor fragment whose state is the number of env steps taken (int32, from 0), which
    drives its schedules: ``act(steps, inputs, key) -> (steps + B, {"action": ...})`` reads the
    learner's published ``params`` and the ``observation``, and with ``masked`` the env's
    ``action_mask``."""
    return fragment(
        "actor",
        Role.ACTOR,
        act,
        init=lambda key: jnp.zeros((), jnp.int32),
        inputs=(OBSERVATION, PARAMS, *((ACTION_MASK,) if masked else ())),
        outputs=(ACTION,),
    )


def mask_q_values(q_values: jax.Array, mask: jax.Array | None) -> jax.Array:
    """``q_values`` ``[..., A]`` with the illegal actions (``mask`` False) at the lowest float,
    so that no ``max`` or ``argmax`` over actions picks them; as they are for ``mask`` None.
    The masking of a policy's logits (:func:`.distributions.mask_logits`), on action values."""
    return distributions.mask_logits(q_values, mask)


def greedy_policy(q_values: Callable[[Any, jax.Array], jax.Array]) -> Callable:
    """The deterministic policy of a Q-function ``q_values(params, observation) -> [B, A]``:
    ``(params, observation, action_mask=None) -> argmax_a Q`` over the legal actions (int32
    ``[B]``), for evaluation."""

    def greedy(params: Any, observation: jax.Array, action_mask=None) -> jax.Array:
        q = mask_q_values(q_values(params, observation), action_mask)
        return jnp.argmax(q, axis=-1).astype(jnp.int32)

    return greedy


def random_actions(key: jax.Array, space: Space, batch: int) -> jax.Array:
    """``batch`` actions drawn uniformly from ``space`` (a bounded Box or Discrete)."""
    if isinstance(space, Discrete):
        return rng.randint(key, (batch,), 0, int(space.n))
    low, high = box_bounds(space)
    return rng.uniform(key, (batch, *space.shape), space.dtype, low, high)


def epsilon_greedy(
    key: jax.Array, q_values: jax.Array, epsilon: jax.Array, mask: jax.Array | None = None
) -> jax.Array:
    """``argmax_a Q(s, a)`` with probability ``1 − ε``, a uniform action otherwise; with
    ``mask`` (bool ``[B, A]``) both over the legal actions only.

    ``q_values``: ``[B, A]``; returns int32 ``[B]``.
    """
    k_explore, k_action = rng.split(key)
    batch, num_actions = q_values.shape
    greedy = jnp.argmax(mask_q_values(q_values, mask), axis=-1).astype(jnp.int32)
    if mask is None:
        uniform = rng.randint(k_action, (batch,), 0, num_actions)
    else:  # uniform over each row's legal actions
        uniform = rng.categorical(k_action, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)
    return jnp.where(rng.uniform(k_explore, (batch,)) < epsilon, uniform, greedy)


def box_bounds(space: Box) -> tuple[jax.Array, jax.Array]:
    """``(low, high)`` broadcast to the space's shape."""
    low = jnp.broadcast_to(jnp.asarray(space.low, space.dtype), space.shape)
    high = jnp.broadcast_to(jnp.asarray(space.high, space.dtype), space.shape)
    return low, high


def to_box(unit_action: jax.Array, space: Box) -> jax.Array:
    """Map an action in ``[−1, 1]`` (a tanh output) affinely onto the box."""
    low, high = box_bounds(space)
    # Clipped: in float32 the affine map can land one ulp past ``high`` at a unit action of 1.
    return jnp.clip(low + (unit_action + 1.0) * 0.5 * (high - low), low, high)


def from_box(action: jax.Array, space: Box) -> jax.Array:
    """Inverse of :func:`to_box`: an action in the box as a point of ``[−1, 1]``."""
    low, high = box_bounds(space)
    return 2.0 * (action - low) / (high - low) - 1.0


def gaussian_noise(
    key: jax.Array, unit_action: jax.Array, scale: float, clip: float | None = None
) -> jax.Array:
    """``clip(a + ε, −1, 1)`` with ``ε ~ N(0, scale²)``, optionally clipped to ``[−clip, clip]``
    first (TD3's target smoothing); actions live in ``[−1, 1]``."""
    noise = scale * jax.random.normal(key, unit_action.shape, unit_action.dtype)
    if clip is not None:
        noise = jnp.clip(noise, -clip, clip)
    return jnp.clip(unit_action + noise, -1.0, 1.0)


def warming_up(actions_taken: jax.Array, learning_starts: int) -> jax.Array:
    """Whether the actor is still in the warm-up (acts at random, the learner waits)."""
    return actions_taken < learning_starts

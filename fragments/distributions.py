"""Action distributions as pure functions of their parameters."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def categorical_sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    """Sample ``a ~ softmax(logits)`` along the last axis; shape ``logits.shape[:-1]``, int32."""
    return jax.random.categorical(key, logits).astype(jnp.int32)


def categorical_log_prob(logits: jax.Array, actions: jax.Array) -> jax.Array:
    """``log π(a)`` for integer ``actions`` of shape ``logits.shape[:-1]``."""
    log_probs = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(log_probs, actions[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: jax.Array) -> jax.Array:
    """``H(π) = −Σ_a π(a) log π(a)`` along the last axis."""
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)


def categorical_mode(logits: jax.Array) -> jax.Array:
    """The most probable action (for deterministic evaluation)."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)

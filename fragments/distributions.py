"""Action distributions as pure functions of their parameters.

Categorical (discrete actions), diagonal Gaussian and tanh-squashed Gaussian (continuous actions).
Every function is batched over leading axes; for the Gaussians the last axis is the action's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import rng


def mask_logits(logits: jax.Array, mask: jax.Array | None) -> jax.Array:
    """``logits`` with the illegal actions (``mask`` False) set to the lowest float: a softmax
    gives them probability 0, sampling and ``argmax`` never pick them, their log-probability is
    finite, so the entropy sums ``0 · log 0`` terms as 0 rather than NaN, and no gradient
    reaches them. ``mask`` None leaves ``logits`` as they are (no mask)."""
    if mask is None:
        return logits
    return jnp.where(mask, logits, jnp.finfo(logits.dtype).min)


def categorical_sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    """Sample ``a ~ softmax(logits)`` along the last axis; shape ``logits.shape[:-1]``, int32."""
    return rng.categorical(key, logits).astype(jnp.int32)


def categorical_log_prob(logits: jax.Array, actions: jax.Array) -> jax.Array:
    """``log π(a)`` for integer ``actions`` of shape ``logits.shape[:-1]``.

    Picked out by a mask and a sum (every other term an exact zero) rather than a gather: the
    same numbers, and the gradient is a select that fuses with its neighbours instead of a
    scatter-add, which XLA compiles as kernels of their own."""
    log_probs = jax.nn.log_softmax(logits)
    chosen = jnp.arange(logits.shape[-1]) == actions[..., None].astype(jnp.int32)
    return jnp.sum(jnp.where(chosen, log_probs, 0.0), axis=-1)


def categorical_entropy(logits: jax.Array) -> jax.Array:
    """``H(π) = −Σ_a π(a) log π(a)`` along the last axis."""
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)


def categorical_mode(logits: jax.Array) -> jax.Array:
    """The most probable action (for deterministic evaluation)."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


# -- diagonal Gaussian ---------------------------------------------------------------------------

_LOG_2PI = float(np.log(2.0 * np.pi))


def gaussian_sample(key: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Sample ``x = μ + σ ε`` with ``ε ~ N(0, I)``; reparameterised, so gradients flow to ``μ``
    and ``log σ``. ``mean`` and ``log_std`` broadcast together; the action dims are the last axis.
    """
    mean, log_std = jnp.broadcast_arrays(mean, log_std)
    return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, x: jax.Array) -> jax.Array:
    """``log N(x; μ, diag σ²)``, summed over the last axis (the action dims):

        Σ_i −½ ((x_i − μ_i)/σ_i)² − log σ_i − ½ log 2π

    with ``σ = exp(log_std)``; ``mean``, ``log_std`` and ``x`` broadcast together.
    """
    z = (x - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * _LOG_2PI, axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """``H = Σ_i log σ_i + ½ log 2πe`` over the last axis (it does not depend on the mean)."""
    return jnp.sum(log_std + 0.5 * (_LOG_2PI + 1.0), axis=-1)


def gaussian_mode(mean: jax.Array) -> jax.Array:
    """The most probable action, ``μ`` (for deterministic evaluation)."""
    return mean


# -- tanh-squashed Gaussian ----------------------------------------------------------------------


def tanh_log_det_jacobian(u: jax.Array) -> jax.Array:
    """``Σ_i log(1 − tanh(u_i)²)`` over the last axis, the log-Jacobian of ``a = tanh(u)``.

    Written as ``2(log 2 − u − softplus(−2u))``, which is exact (``1 − tanh² u = 4 / (e^u +
    e^−u)²``) and stays finite where ``tanh(u)`` rounds to ±1: in float32 that happens from
    ``|u| ≈ 8`` on, and ``log(1 − tanh(u)²)`` would be ``−inf``.
    """
    return jnp.sum(2.0 * (np.log(2.0) - u - jax.nn.softplus(-2.0 * u)), axis=-1)


def tanh_gaussian_sample(
    key: jax.Array, mean: jax.Array, log_std: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Sample ``a = tanh(u)``, ``u ~ N(μ, diag σ²)``: an action in (−1, 1) and its log-density.

    Haarnoja, Zhou, Abbeel & Levine (2018), "Soft Actor-Critic", arXiv:1801.01290, appendix C:

        log π(a) = log N(u; μ, σ²) − Σ_i log(1 − tanh(u_i)²)

    The sample is reparameterised (gradients reach ``μ`` and ``log σ`` through both outputs), and
    the log-density is computed from ``u``, never by inverting ``a``, which would lose ``u`` once
    ``tanh`` saturates (in float32 the action rounds to exactly ±1 from ``|u| ≈ 8`` on; its
    log-density stays finite). Returns ``(action, log_prob)``; ``log_prob`` lacks the last axis.
    """
    u = gaussian_sample(key, mean, log_std)
    log_prob = gaussian_log_prob(mean, log_std, u) - tanh_log_det_jacobian(u)
    return jnp.tanh(u), log_prob


def tanh_gaussian_mode(mean: jax.Array) -> jax.Array:
    """``tanh(μ)``: the squashed mean, the usual deterministic action (the density's mode can
    differ from it when σ is large)."""
    return jnp.tanh(mean)

"""The basic layers the networks are made of: activations by name, orthogonal initialisation,
and the MLP of PPO implementations."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "relu": nn.relu,
    "gelu": nn.gelu,
    "silu": nn.silu,
}


def orthogonal(scale: float) -> nn.initializers.Initializer:
    """Orthogonal initialisation (Saxe et al. 2014) as flax draws it, with its QR factorisation
    kept unbatched under ``vmap``.

    Under a vmap (a critic ensemble, seeds, data-parallel shards) flax's initializer becomes one
    batched LAPACK QR, which XLA:CPU runs by splitting the batch over its intra-op thread pool
    and waiting for the pieces. When every thread of that pool is itself such a waiting kernel
    (one per forced device, on a machine with as many cores as devices) nothing is left to run
    the pieces and the program never finishes. ``sequential_vmap`` makes the batch a loop of
    single QRs instead: the same numbers, bit for bit, and no wait on the pool.
    """
    base = nn.initializers.orthogonal(scale)

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


class MLP(nn.Module):
    """Dense layers with orthogonal initialisation, the convention of PPO implementations.

    Hidden layers use gain √2; the output layer uses ``out_scale`` (0.01 for policy logits, so the
    initial policy is near uniform; 1.0 for values). Engstrom et al. (2020), "Implementation
    Matters in Deep Policy Gradients".
    """

    hidden_sizes: Sequence[int]
    out_dim: int
    activation: str = "tanh"
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = nn.Dense(size, kernel_init=orthogonal(np.sqrt(2.0)))(x)
            x = act(x)
        return nn.Dense(self.out_dim, kernel_init=orthogonal(self.out_scale))(x)

"""Flax networks shared by the algorithms."""

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
            x = nn.Dense(size, kernel_init=nn.initializers.orthogonal(np.sqrt(2.0)))(x)
            x = act(x)
        return nn.Dense(self.out_dim, kernel_init=nn.initializers.orthogonal(self.out_scale))(x)


class ActorCritic(nn.Module):
    """Separate policy and value MLPs on the same (flattened) observation.

    Input ``[..., *obs_shape]``; output ``(logits [..., num_actions], value [...])``.
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    obs_ndim: int = 1

    def setup(self) -> None:
        self.policy = MLP(self.hidden_sizes, self.num_actions, self.activation, out_scale=0.01)
        self.critic = MLP(self.hidden_sizes, 1, self.activation, out_scale=1.0)

    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = self._flatten(obs)
        return self.policy(x), self.critic(x)[..., 0]

    def value(self, obs: jax.Array) -> jax.Array:
        return self.critic(self._flatten(obs))[..., 0]

    def _flatten(self, obs: jax.Array) -> jax.Array:
        lead = obs.shape[: obs.ndim - self.obs_ndim]
        return obs.reshape(*lead, -1).astype(jnp.float32)

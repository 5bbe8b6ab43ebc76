"""StatelessCartPole-v1: CartPole-v1 observed through its positions only, ``[x, θ]``.

The cart's velocity ẋ and the pole's angular velocity θ̇ are left out of the observation, so no
function of the current observation alone balances the pole well: a policy has to infer the
velocities from the observations it has seen (differences of successive positions estimate them),
which needs memory. Everything else is CartPole-v1's: the same state, parameters
(:class:`CartPoleParams`), dynamics, reward of 1 per step, termination and 500-step truncation;
this class only drops two entries of the observation CartPole computes. The variant is one of the
partially observed tasks of POPGym (Morad et al., 2023, "POPGym: Benchmarking Partially Observable
Reinforcement Learning").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs.classic.cartpole import CartPole, CartPoleParams, CartPoleState
from jaxrl_fdg.envs.spaces import Box


class StatelessCartPole(CartPole):
    """CartPole-v1 whose observation is ``[x, θ]`` (float32, shape ``(2,)``)."""

    name = "StatelessCartPole-v1"

    def reset_env(self, key: jax.Array, params: CartPoleParams) -> tuple[CartPoleState, jax.Array]:
        state, obs = super().reset_env(key, params)
        return state, _positions(obs)

    def step_env(
        self, key: jax.Array, state: CartPoleState, action: jax.Array, params: CartPoleParams
    ) -> tuple[CartPoleState, jax.Array, jax.Array, jax.Array]:
        state, obs, reward, terminated = super().step_env(key, state, action, params)
        return state, _positions(obs), reward, terminated

    def observation_space(self, params: CartPoleParams) -> Box:
        full = super().observation_space(params)
        return Box(_positions(full.low), _positions(full.high), (2,), jnp.float32)


def _positions(obs: jax.Array) -> jax.Array:
    """``[x, θ]`` from CartPole's ``[x, ẋ, θ, θ̇]``."""
    return obs[..., ::2]

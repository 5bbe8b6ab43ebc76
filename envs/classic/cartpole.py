"""CartPole-v1 with gymnasium's dynamics, reward, termination and 500-step truncation.

Barto, Sutton & Anderson (1983), "Neuronlike adaptive elements that can solve difficult learning
control problems". The equations and constants follow gymnasium's ``CartPoleEnv`` (explicit Euler
integration by default, reward 1 on every step including the terminating one); computation is in
float32 where gymnasium uses float64.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl_fdg import rng
from jaxrl_fdg.envs import render
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box, Discrete


class CartPoleState(NamedTuple):
    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array


@struct.dataclass
class CartPoleParams:
    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5  # half the pole's length
    force_mag: float = 10.0
    tau: float = 0.02  # seconds between state updates
    theta_threshold_radians: float = 12 * 2 * math.pi / 360
    x_threshold: float = 2.4
    max_steps: int = struct.field(pytree_node=False, default=500)
    euler: bool = struct.field(pytree_node=False, default=True)  # False: semi-implicit Euler


class CartPole(Environment[CartPoleState, CartPoleParams]):
    """Push a cart left (0) or right (1) to keep a pole upright."""

    name = "CartPole-v1"

    @property
    def default_params(self) -> CartPoleParams:
        return CartPoleParams()

    def reset_env(self, key: jax.Array, params: CartPoleParams) -> tuple[CartPoleState, jax.Array]:
        values = rng.uniform(key, (4,), jnp.float32, -0.05, 0.05)
        state = CartPoleState(*values)
        return state, _observation(state)

    def step_env(
        self, key: jax.Array, state: CartPoleState, action: jax.Array, params: CartPoleParams
    ) -> tuple[CartPoleState, jax.Array, jax.Array, jax.Array]:
        del key  # deterministic dynamics
        p = params
        total_mass = p.masspole + p.masscart
        polemass_length = p.masspole * p.length
        force = jnp.where(action == 1, p.force_mag, -p.force_mag)
        cos, sin = jnp.cos(state.theta), jnp.sin(state.theta)

        temp = (force + polemass_length * state.theta_dot * state.theta_dot * sin) / total_mass
        theta_acc = (p.gravity * sin - cos * temp) / (
            p.length * (4.0 / 3.0 - p.masspole * cos * cos / total_mass)
        )
        x_acc = temp - polemass_length * theta_acc * cos / total_mass

        if p.euler:
            x = state.x + p.tau * state.x_dot
            x_dot = state.x_dot + p.tau * x_acc
            theta = state.theta + p.tau * state.theta_dot
            theta_dot = state.theta_dot + p.tau * theta_acc
        else:
            x_dot = state.x_dot + p.tau * x_acc
            x = state.x + p.tau * x_dot
            theta_dot = state.theta_dot + p.tau * theta_acc
            theta = state.theta + p.tau * theta_dot

        new = CartPoleState(x, x_dot, theta, theta_dot)
        terminated = (
            (x < -p.x_threshold)
            | (x > p.x_threshold)
            | (theta < -p.theta_threshold_radians)
            | (theta > p.theta_threshold_radians)
        )
        reward = jnp.ones((), jnp.float32)
        return new, _observation(new), reward, terminated

    def render(self, state: CartPoleState, params: CartPoleParams) -> jax.Array:
        """The cart on its track and the pole, 300 × 200 pixels (the track's ±2.4 across)."""
        scale = 300 / 4.8
        cx, cy = 150.0 + state.x * scale, 140.0
        pole = 2 * params.length * scale
        image = render.canvas(200, 300)
        image = render.segment(image, 0.0, cy + 15, 300.0, cy + 15, 2.0, render.BLACK)
        image = render.fill_rect(image, cx - 25, cy - 15, cx + 25, cy + 15, render.BLACK)
        tip = (cx + pole * jnp.sin(state.theta), cy - 15 - pole * jnp.cos(state.theta))
        image = render.segment(image, cx, cy - 15, *tip, 10.0, render.BROWN)
        return render.to_uint8(render.fill_circle(image, cx, cy - 15, 5.0, render.BLUE))

    def observation_space(self, params: CartPoleParams) -> Box:
        high = np.array(
            [
                params.x_threshold * 2,
                np.finfo(np.float32).max,
                params.theta_threshold_radians * 2,
                np.finfo(np.float32).max,
            ],
            np.float32,
        )
        return Box(-high, high, (4,), jnp.float32)

    def action_space(self, params: CartPoleParams) -> Discrete:
        return Discrete(2)


def _observation(state: CartPoleState) -> jax.Array:
    return jnp.stack([state.x, state.x_dot, state.theta, state.theta_dot]).astype(jnp.float32)

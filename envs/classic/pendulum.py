"""Pendulum-v1 with gymnasium's dynamics, reward, clipping, reset and 200-step truncation.

The inverted-pendulum swing-up task, as in gymnasium's ``PendulumEnv`` (``classic_control/
pendulum.py``). With θ the angle from upright (counter-clockwise), θ̇ its rate and u the torque:

    u      = clip(a, -max_torque, max_torque)
    cost   = angle_normalize(θ)² + 0.1·θ̇² + 0.001·u²,   reward = -cost   (of the state *before*)
    θ̇'     = clip(θ̇ + (3g/(2l)·sin θ + 3/(m l²)·u)·dt, -max_speed, max_speed)
    θ'     = θ + θ̇'·dt          (semi-implicit Euler: the angle moves with the *new* speed)

where ``angle_normalize(x) = ((x + π) mod 2π) - π``. The observation is ``[cos θ, sin θ, θ̇]``,
episodes start from θ ~ U(-π, π), θ̇ ~ U(-1, 1), never terminate and are truncated at 200 steps
(gymnasium's registered ``max_episode_steps``). θ itself is not wrapped, as in gymnasium.
Computation is in float32 where gymnasium uses float64.
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
from jaxrl_fdg.envs.spaces import Box


class PendulumState(NamedTuple):
    theta: jax.Array  # radians, 0 = upright; not wrapped
    theta_dot: jax.Array


@struct.dataclass
class PendulumParams:
    g: float = 10.0  # gymnasium's default (``gym.make("Pendulum-v1", g=...)`` changes it)
    m: float = 1.0
    l: float = 1.0  # noqa: E741 -- rod length, under gymnasium's name
    dt: float = 0.05
    max_speed: float = 8.0
    max_torque: float = 2.0
    max_steps: int = struct.field(pytree_node=False, default=200)


class Pendulum(Environment[PendulumState, PendulumParams]):
    """Swing a pendulum up and hold it upright with a bounded torque (continuous action)."""

    name = "Pendulum-v1"

    @property
    def default_params(self) -> PendulumParams:
        return PendulumParams()

    def reset_env(self, key: jax.Array, params: PendulumParams) -> tuple[PendulumState, jax.Array]:
        high = jnp.array([math.pi, 1.0], jnp.float32)
        theta, theta_dot = rng.uniform(key, (2,), jnp.float32, -high, high)
        state = PendulumState(theta, theta_dot)
        return state, _observation(state)

    def step_env(
        self, key: jax.Array, state: PendulumState, action: jax.Array, params: PendulumParams
    ) -> tuple[PendulumState, jax.Array, jax.Array, jax.Array]:
        del key  # deterministic dynamics
        p = params
        action = jnp.asarray(action, jnp.float32)
        if action.size != 1:
            raise ValueError(f"Pendulum takes one torque, shape (1,); got shape {action.shape}")
        u = jnp.clip(action.reshape(()), -p.max_torque, p.max_torque)
        th, thdot = state.theta, state.theta_dot

        # The cost is of the state the action is taken in, as in gymnasium.
        cost = _angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2

        new_thdot = (
            thdot + (3.0 * p.g / (2.0 * p.l) * jnp.sin(th) + 3.0 / (p.m * p.l**2) * u) * p.dt
        )
        new_thdot = jnp.clip(new_thdot, -p.max_speed, p.max_speed)
        new_th = th + new_thdot * p.dt

        new = PendulumState(jnp.asarray(new_th, jnp.float32), jnp.asarray(new_thdot, jnp.float32))
        reward = jnp.asarray(-cost, jnp.float32)
        return new, _observation(new), reward, jnp.zeros((), jnp.bool_)

    def render(self, state: PendulumState, params: PendulumParams) -> jax.Array:
        """The pendulum from its pivot, upright at θ = 0, 200 × 200 pixels."""
        image = render.canvas(200, 200)
        tip = (100.0 + 80.0 * jnp.sin(state.theta), 100.0 - 80.0 * jnp.cos(state.theta))
        image = render.segment(image, 100.0, 100.0, *tip, 16.0, render.RED)
        return render.to_uint8(render.fill_circle(image, 100.0, 100.0, 5.0, render.BLACK))

    def observation_space(self, params: PendulumParams) -> Box:
        high = np.array([1.0, 1.0, params.max_speed], np.float32)
        return Box(-high, high, (3,), jnp.float32)

    def action_space(self, params: PendulumParams) -> Box:
        return Box(-params.max_torque, params.max_torque, (1,), jnp.float32)


def _angle_normalize(x: jax.Array) -> jax.Array:
    """Wrap to [-π, π): ``((x + π) mod 2π) - π``, gymnasium's ``angle_normalize``."""
    return jnp.mod(x + jnp.pi, 2 * jnp.pi) - jnp.pi


def _observation(state: PendulumState) -> jax.Array:
    return jnp.stack([jnp.cos(state.theta), jnp.sin(state.theta), state.theta_dot]).astype(
        jnp.float32
    )

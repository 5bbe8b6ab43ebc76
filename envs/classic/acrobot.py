"""Acrobot-v1 with gymnasium's dynamics, reward, termination and 500-step truncation.

Sutton (1996), "Generalization in Reinforcement Learning: Successful Examples Using Sparse Coarse
Coding"; dynamics from Sutton & Barto, "Reinforcement Learning: An Introduction" (the "book"
equations, which the paper's experiments actually used). The equations, constants and
integration follow gymnasium's ``AcrobotEnv``: one fourth-order Runge-Kutta step of ``dt = 0.2``
per action, then θ1, θ2 wrapped into [-π, π] and the angular velocities clipped to ±4π and ±9π.
Reward is -1 per step and 0 on the terminating step; the episode terminates when the free end is
one link length above the pivot, ``-cos θ1 - cos(θ1 + θ2) > 1``. Computation is in float32 where
gymnasium uses float64.

Not reproduced: gymnasium's ``reset(options={"low", "high"})`` bounds (always ±0.1 here) and its
``LINK_LENGTH_2``, which only rendering reads.
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


class AcrobotState(NamedTuple):
    theta1: jax.Array  # angle of link 1 from hanging down
    theta2: jax.Array  # angle of link 2 relative to link 1
    dtheta1: jax.Array
    dtheta2: jax.Array


@struct.dataclass
class AcrobotParams:
    dt: float = 0.2  # one RK4 step of this length per action [s]
    link_length_1: float = 1.0  # [m]
    link_mass_1: float = 1.0  # [kg]
    link_mass_2: float = 1.0  # [kg]
    link_com_pos_1: float = 0.5  # [m] from the link's joint to its centre of mass
    link_com_pos_2: float = 0.5  # [m]
    link_moi: float = 1.0  # moment of inertia of both links
    gravity: float = 9.8
    max_vel_1: float = 4 * math.pi
    max_vel_2: float = 9 * math.pi
    torque_noise_max: float = 0.0  # torque += U(-noise, noise), drawn from the step key
    max_steps: int = struct.field(pytree_node=False, default=500)
    book_or_nips: str = struct.field(pytree_node=False, default="book")


class Acrobot(Environment[AcrobotState, AcrobotParams]):
    """Apply torque -1 (0), 0 (1) or +1 (2) at the elbow to swing the tip above the bar."""

    name = "Acrobot-v1"

    @property
    def default_params(self) -> AcrobotParams:
        return AcrobotParams()

    def reset_env(self, key: jax.Array, params: AcrobotParams) -> tuple[AcrobotState, jax.Array]:
        values = rng.uniform(key, (4,), jnp.float32, -0.1, 0.1)
        state = AcrobotState(*values)
        return state, _observation(state)

    def step_env(
        self, key: jax.Array, state: AcrobotState, action: jax.Array, params: AcrobotParams
    ) -> tuple[AcrobotState, jax.Array, jax.Array, jax.Array]:
        p = params
        if p.book_or_nips not in ("book", "nips"):
            raise ValueError(f"book_or_nips must be 'book' or 'nips', got {p.book_or_nips!r}")
        # gymnasium's AVAIL_TORQUE = [-1, 0, +1], indexed by the action.
        torque = jnp.asarray(action, jnp.float32) - 1.0
        # With the default noise of exactly 0 known at trace time, skip the draw: it would add 0,
        # and drawing is most of the cost of a step. A traced (swept) noise level is always drawn.
        noise = p.torque_noise_max
        if not (isinstance(noise, int | float) and noise == 0):
            torque = torque + rng.uniform(key, (), jnp.float32, -noise, noise)

        s = jnp.stack(state).astype(jnp.float32)
        # gymnasium's rk4 over the time grid [0, dt]: exactly one classical RK4 step.
        half = p.dt / 2.0
        k1 = _dsdt(s, torque, p)
        k2 = _dsdt(s + half * k1, torque, p)
        k3 = _dsdt(s + half * k2, torque, p)
        k4 = _dsdt(s + p.dt * k3, torque, p)
        ns = s + p.dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)

        new = AcrobotState(
            _wrap(ns[0], -math.pi, math.pi),
            _wrap(ns[1], -math.pi, math.pi),
            jnp.clip(ns[2], -p.max_vel_1, p.max_vel_1),
            jnp.clip(ns[3], -p.max_vel_2, p.max_vel_2),
        )
        terminated = -jnp.cos(new.theta1) - jnp.cos(new.theta2 + new.theta1) > 1.0
        reward = jnp.where(terminated, 0.0, -1.0).astype(jnp.float32)
        return new, _observation(new), reward, terminated

    def render(self, state: AcrobotState, params: AcrobotParams) -> jax.Array:
        """The two links hanging from the pivot, and the line the tip must rise above,
        200 × 200 pixels."""
        length = 45.0
        image = render.canvas(200, 200)
        image = render.segment(image, 0.0, 100.0 - length, 200.0, 100.0 - length, 1.0, render.GREY)
        x1 = 100.0 + length * jnp.sin(state.theta1)
        y1 = 100.0 + length * jnp.cos(state.theta1)
        angle = state.theta1 + state.theta2
        x2, y2 = x1 + length * jnp.sin(angle), y1 + length * jnp.cos(angle)
        image = render.segment(image, 100.0, 100.0, x1, y1, 8.0, render.BLUE)
        image = render.segment(image, x1, y1, x2, y2, 8.0, render.BLUE)
        image = render.fill_circle(image, x1, y1, 4.0, render.BLACK)
        return render.to_uint8(render.fill_circle(image, 100.0, 100.0, 4.0, render.BLACK))

    def observation_space(self, params: AcrobotParams) -> Box:
        high = np.array([1.0, 1.0, 1.0, 1.0, params.max_vel_1, params.max_vel_2], np.float32)
        return Box(-high, high, (6,), jnp.float32)

    def action_space(self, params: AcrobotParams) -> Discrete:
        return Discrete(3)


def _dsdt(s: jax.Array, torque: jax.Array, p: AcrobotParams) -> jax.Array:
    """Time derivative of ``(θ1, θ2, θ̇1, θ̇2)``: gymnasium's ``AcrobotEnv._dsdt``, term for term.

    With d1, d2 the inertia terms and φ1, φ2 the gravity and Coriolis terms,
    ``θ̈2 = (τ + d2/d1·φ1 - m2·l1·lc2·θ̇1²·sin θ2 - φ2) / (m2·lc2² + I2 - d2²/d1)`` (book; the NeurIPS
    paper omits the θ̇1² term) and ``θ̈1 = -(d2·θ̈2 + φ1) / d1``.
    """
    m1, m2 = p.link_mass_1, p.link_mass_2
    l1, lc1, lc2 = p.link_length_1, p.link_com_pos_1, p.link_com_pos_2
    i1 = i2 = p.link_moi
    g = p.gravity
    theta1, theta2, dtheta1, dtheta2 = s[0], s[1], s[2], s[3]
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * jnp.cos(theta2)) + i1 + i2
    d2 = m2 * (lc2**2 + l1 * lc2 * jnp.cos(theta2)) + i2
    phi2 = m2 * lc2 * g * jnp.cos(theta1 + theta2 - math.pi / 2.0)
    phi1 = (
        -m2 * l1 * lc2 * dtheta2**2 * jnp.sin(theta2)
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * jnp.sin(theta2)
        + (m1 * lc1 + m2 * l1) * g * jnp.cos(theta1 - math.pi / 2)
        + phi2
    )
    if p.book_or_nips == "nips":
        ddtheta2 = (torque + d2 / d1 * phi1 - phi2) / (m2 * lc2**2 + i2 - d2**2 / d1)
    else:
        ddtheta2 = (
            torque + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * jnp.sin(theta2) - phi2
        ) / (m2 * lc2**2 + i2 - d2**2 / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return jnp.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])


def _wrap(x: jax.Array, low: float, high: float) -> jax.Array:
    """gymnasium's ``wrap``: shift ``x`` by whole periods ``high - low`` until it is in range.

    gymnasium loops ``while x > high: x -= period`` (and likewise below ``low``); the closed form
    takes the same ``n = ceil(excess / period)`` shifts without a data-dependent loop, and for the
    usual single shift (``n = 1``) rounds exactly as the loop does.
    """
    period = high - low
    x = jnp.where(x > high, x - period * jnp.ceil((x - high) / period), x)
    return jnp.where(x < low, x + period * jnp.ceil((low - x) / period), x)


def _observation(state: AcrobotState) -> jax.Array:
    return jnp.stack(
        [
            jnp.cos(state.theta1),
            jnp.sin(state.theta1),
            jnp.cos(state.theta2),
            jnp.sin(state.theta2),
            state.dtheta1,
            state.dtheta2,
        ]
    ).astype(jnp.float32)

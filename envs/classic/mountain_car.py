"""MountainCar-v0 and MountainCarContinuous-v0 with gymnasium's dynamics, rewards and time limits.

Moore (1990), "Efficient Memory-based Learning for Robot Control" (PhD thesis, University of
Cambridge). The equations and constants follow gymnasium's ``MountainCarEnv`` and
``Continuous_MountainCarEnv``: with ``p`` the position and ``v`` the velocity,

    v ← clip(v + push - gravity·cos(3p), -max_speed, max_speed)
    p ← clip(p + v, min_position, max_position);  v ← 0 if p == min_position and v < 0

where ``push = (a - 1)·force`` for the discrete actions 0, 1, 2 and ``push = clip(a, -1, 1)·power``
for the continuous one. The episode terminates when ``p >= goal_position and v >= goal_velocity``.
Discrete: reward -1 on every step, the terminating one included; truncation at 200 steps.
Continuous: reward ``100·[terminated] - 0.1·a²`` with the *unclipped* action, as gymnasium
computes it; truncation at 999 steps. Computation is in float32 where gymnasium uses float64.

Not reproduced: gymnasium's ``reset(options={"low", "high"})`` bounds (always [-0.6, -0.4] here).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg import rng
from jaxrl_fdg.envs import render
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box, Discrete

# Reward shaping of MountainCarContinuous, hard-coded in gymnasium.
_GOAL_BONUS = 100.0
_ACTION_COST = 0.1


class MountainCarState(NamedTuple):
    position: jax.Array
    velocity: jax.Array


@struct.dataclass
class MountainCarParams:
    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.5
    goal_velocity: float = 0.0
    force: float = 0.001
    gravity: float = 0.0025
    max_steps: int = struct.field(pytree_node=False, default=200)


@struct.dataclass
class MountainCarContinuousParams:
    min_action: float = -1.0
    max_action: float = 1.0
    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.45  # 0.5 in the discrete version
    goal_velocity: float = 0.0
    power: float = 0.0015
    gravity: float = 0.0025  # a literal in gymnasium's step, not an attribute
    max_steps: int = struct.field(pytree_node=False, default=999)


def render_mountain_car(state: MountainCarState, params: MountainCarParams) -> jax.Array:
    """The hill ``0.45 sin(3x) + 0.55``, the goal's flag and the car, 300 × 200 pixels."""
    low, high = params.min_position, params.max_position
    width = high - low

    def to_pixels(position):
        height = 0.45 * jnp.sin(3.0 * position) + 0.55
        return (position - low) / width * 300.0, 190.0 - height * 150.0

    image = render.canvas(200, 300)
    column = low + (jnp.arange(300, dtype=jnp.float32) + 0.5) / 300.0 * width
    _, hill = to_pixels(column)
    rows = jnp.arange(200, dtype=jnp.float32)[:, None] + 0.5
    image = render.paint(image, jnp.abs(rows - hill[None, :]) <= 1.5, render.BLACK)
    flag_x, flag_y = to_pixels(jnp.float32(params.goal_position))
    image = render.segment(image, flag_x, flag_y, flag_x, flag_y - 30.0, 2.0, render.BLACK)
    image = render.fill_rect(
        image, flag_x, flag_y - 30.0, flag_x + 14.0, flag_y - 22.0, render.GREEN
    )
    car_x, car_y = to_pixels(state.position)
    return render.to_uint8(render.fill_circle(image, car_x, car_y - 8.0, 8.0, render.RED))


class MountainCar(Environment[MountainCarState, MountainCarParams]):
    """Accelerate left (0), not at all (1) or right (2) to rock an underpowered car up a hill."""

    name = "MountainCar-v0"

    @property
    def default_params(self) -> MountainCarParams:
        return MountainCarParams()

    def reset_env(
        self, key: jax.Array, params: MountainCarParams
    ) -> tuple[MountainCarState, jax.Array]:
        return _reset(key)

    def step_env(
        self, key: jax.Array, state: MountainCarState, action: jax.Array, params: MountainCarParams
    ) -> tuple[MountainCarState, jax.Array, jax.Array, jax.Array]:
        del key  # deterministic dynamics
        p = params
        push = (jnp.asarray(action, jnp.int32) - 1).astype(jnp.float32) * p.force
        velocity = state.velocity + push + jnp.cos(3 * state.position) * (-p.gravity)
        new, terminated = _move(state.position, velocity, p)
        reward = jnp.full((), -1.0, jnp.float32)
        return new, _observation(new), reward, terminated

    def render(self, state: MountainCarState, params: MountainCarParams) -> jax.Array:
        return render_mountain_car(state, params)

    def observation_space(self, params: MountainCarParams) -> Box:
        return _observation_space(params)

    def action_space(self, params: MountainCarParams) -> Discrete:
        return Discrete(3)


class MountainCarContinuous(Environment[MountainCarState, MountainCarContinuousParams]):
    """Apply a force in [-1, 1] (an array of shape (1,)) to drive the car up the hill."""

    name = "MountainCarContinuous-v0"

    @property
    def default_params(self) -> MountainCarContinuousParams:
        return MountainCarContinuousParams()

    def reset_env(
        self, key: jax.Array, params: MountainCarContinuousParams
    ) -> tuple[MountainCarState, jax.Array]:
        return _reset(key)

    def step_env(
        self,
        key: jax.Array,
        state: MountainCarState,
        action: jax.Array,
        params: MountainCarContinuousParams,
    ) -> tuple[MountainCarState, jax.Array, jax.Array, jax.Array]:
        del key  # deterministic dynamics
        p = params
        action = jnp.asarray(action, jnp.float32)
        if action.size != 1:
            raise ValueError(f"expected an action of shape (1,), got shape {action.shape}")
        action = action.reshape(())
        force = jnp.clip(action, p.min_action, p.max_action)
        velocity = state.velocity + force * p.power - p.gravity * jnp.cos(3 * state.position)
        new, terminated = _move(state.position, velocity, p)
        # gymnasium charges for the action as given, before clipping.
        reward = jnp.where(terminated, _GOAL_BONUS, 0.0) - action**2 * _ACTION_COST
        return new, _observation(new), reward.astype(jnp.float32), terminated

    def render(self, state: MountainCarState, params: MountainCarContinuousParams) -> jax.Array:
        return render_mountain_car(state, params)

    def observation_space(self, params: MountainCarContinuousParams) -> Box:
        return _observation_space(params)

    def action_space(self, params: MountainCarContinuousParams) -> Box:
        return Box(params.min_action, params.max_action, (1,), jnp.float32)


def _reset(key: jax.Array) -> tuple[MountainCarState, jax.Array]:
    """Position ~ U(-0.6, -0.4) near the valley floor (at -π/6), at rest."""
    position = rng.uniform(key, (), jnp.float32, -0.6, -0.4)
    state = MountainCarState(position, jnp.zeros((), jnp.float32))
    return state, _observation(state)


def _move(
    position: jax.Array, velocity: jax.Array, p: MountainCarParams | MountainCarContinuousParams
) -> tuple[MountainCarState, jax.Array]:
    """Clip the new velocity, integrate the position, stop at the left wall, test for the goal."""
    velocity = jnp.clip(velocity, -p.max_speed, p.max_speed)
    position = jnp.clip(position + velocity, p.min_position, p.max_position)
    # The left wall is inelastic. gymnasium stops the car there only: at the right edge the car is
    # past the default goal, so the episode has ended anyway.
    velocity = jnp.where((position == p.min_position) & (velocity < 0), 0.0, velocity)
    terminated = (position >= p.goal_position) & (velocity >= p.goal_velocity)
    new = MountainCarState(position.astype(jnp.float32), velocity.astype(jnp.float32))
    return new, terminated


def _observation(state: MountainCarState) -> jax.Array:
    return jnp.stack([state.position, state.velocity]).astype(jnp.float32)


def _observation_space(params: MountainCarParams | MountainCarContinuousParams) -> Box:
    low = jnp.array([params.min_position, -params.max_speed], jnp.float32)
    high = jnp.array([params.max_position, params.max_speed], jnp.float32)
    return Box(low, high, (2,), jnp.float32)

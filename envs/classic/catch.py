"""Catch from bsuite: move a paddle along the bottom row to catch a falling ball.

Osband et al. (2020), "Behaviour Suite for Reinforcement Learning" (bsuite), environment
``bsuite/environments/catch.py``. On a ``rows × columns`` board (10 × 5 by default):

- reset: the ball is in row 0 at a column drawn uniformly from ``0 .. columns-1``; the paddle is
  in the bottom row (``rows-1``) at column ``columns // 2``;
- step: actions 0, 1, 2 move the paddle by -1, 0, +1 columns, clipped to the board; *then* the
  ball falls one row (it never moves sideways);
- when the ball reaches the bottom row the episode terminates with reward +1 if the (moved)
  paddle is in the ball's column, -1 otherwise; every other step gives 0.

So every episode lasts exactly ``rows - 1`` steps. The observation is the board as a float32
image of shape ``(rows, columns, 1)`` with 1.0 at the ball's and the paddle's cells (bsuite's
board is ``(rows, columns)``; the trailing channel lets a CNN consume it). There is no time limit
in bsuite; ``max_steps`` is set far above ``rows - 1`` so truncation never fires.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs import render
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box, Discrete


class CatchState(NamedTuple):
    ball_row: jax.Array  # int32, 0 = top
    ball_col: jax.Array  # int32
    paddle_col: jax.Array  # int32; the paddle's row is always rows - 1


@struct.dataclass
class CatchParams:
    # The board's size fixes the observation's shape, so it is static, not a traced leaf.
    rows: int = struct.field(pytree_node=False, default=10)
    columns: int = struct.field(pytree_node=False, default=5)
    max_steps: int = struct.field(pytree_node=False, default=1000)


class Catch(Environment[CatchState, CatchParams]):
    """Catch a ball falling down a ``rows × columns`` board: left (0), stay (1), right (2)."""

    name = "Catch-bsuite"

    @property
    def default_params(self) -> CatchParams:
        return CatchParams()

    def reset_env(self, key: jax.Array, params: CatchParams) -> tuple[CatchState, jax.Array]:
        _check(params)
        state = CatchState(
            ball_row=jnp.zeros((), jnp.int32),
            ball_col=jax.random.randint(key, (), 0, params.columns, jnp.int32),
            paddle_col=jnp.full((), params.columns // 2, jnp.int32),
        )
        return state, _observation(state, params)

    def step_env(
        self, key: jax.Array, state: CatchState, action: jax.Array, params: CatchParams
    ) -> tuple[CatchState, jax.Array, jax.Array, jax.Array]:
        del key  # deterministic dynamics
        _check(params)
        # A traced action cannot raise on a bad value; clamping maps anything outside 0..2 to the
        # nearest move rather than reading out of bounds.
        dx = jnp.clip(jnp.asarray(action, jnp.int32), 0, 2) - 1
        paddle_col = jnp.clip(state.paddle_col + dx, 0, params.columns - 1)
        ball_row = state.ball_row + 1

        terminated = ball_row == params.rows - 1
        caught = paddle_col == state.ball_col
        reward = jnp.where(terminated, jnp.where(caught, 1.0, -1.0), 0.0).astype(jnp.float32)

        new = CatchState(ball_row, state.ball_col, paddle_col)
        return new, _observation(new, params), reward, terminated

    def render(self, state: CatchState, params: CatchParams) -> jax.Array:
        """The board, 20 pixels a cell: the ball red, the paddle blue."""
        cells = jnp.zeros((params.rows, params.columns), jnp.int32)
        cells = cells.at[state.ball_row, state.ball_col].set(1)
        cells = cells.at[params.rows - 1, state.paddle_col].set(2)
        colors = jnp.array([render.WHITE, render.RED, render.BLUE])
        return render.to_uint8(render.grid(cells, colors, 20))

    def observation_space(self, params: CatchParams) -> Box:
        return Box(0.0, 1.0, (params.rows, params.columns, 1), jnp.float32)

    def action_space(self, params: CatchParams) -> Discrete:
        return Discrete(3)


def _check(params: CatchParams) -> None:
    # The ball needs at least one row to fall through before it reaches the paddle's row.
    if params.rows < 2 or params.columns < 1:
        raise ValueError(
            f"Catch needs rows >= 2 and columns >= 1; got {params.rows} × {params.columns}"
        )


def _observation(state: CatchState, params: CatchParams) -> jax.Array:
    board = jnp.zeros((params.rows, params.columns, 1), jnp.float32)
    board = board.at[state.ball_row, state.ball_col, 0].set(1.0)
    return board.at[params.rows - 1, state.paddle_col, 0].set(1.0)

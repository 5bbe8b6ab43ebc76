"""Minefield-v0: cross a board of mines to its far side; a step onto a mine ends the episode.

A small task with a structured observation and an action mask, for checking that both reach
every policy. The board is ``size × size`` cells (default 5). An episode starts in a random row
of the leftmost column, with mines scattered over the inner columns (each inner cell a mine
with probability ``mine_rate``, drawn anew each episode); the rightmost column is the goal.

* actions: 0 stay, 1 up, 2 down, 3 left, 4 right;
* reward: +1 for reaching the goal column (terminated), −1 for stepping onto a mine
  (terminated: the illegal action is fatal), 0 otherwise; episodes are cut at ``max_steps``;
* observation: a dict ``{"board": float32 [size, size, 2], "position": float32 [2]}``: the mines
  (channel 0) and the agent (channel 1) as an image, and the agent's row and column scaled to
  [0, 1];
* action mask: every action that stays on the board and off the mines is legal; *stay* always
  is, so a state never leaves no legal action.

A policy that respects the mask never loses an episode: its returns lie in [0, 1], and a
trajectory under it holds no −1 reward. One that ignores the mask loses many (a uniformly random
policy about 40% of its episodes at the defaults). Mines can wall off the goal; the agent then
stays until the time limit (return 0).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl_fdg.envs import render
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box, Dict, Discrete

# Row and column change of each action: stay, up, down, left, right. A numpy constant: a JAX
# array made at import would start JAX's backend, before a multi-process run may configure it.
_MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]], np.int32)


class MinefieldState(NamedTuple):
    mines: jax.Array  # bool [size, size]
    position: jax.Array  # int32 [2]: row, column


@struct.dataclass
class MinefieldParams:
    size: int = struct.field(pytree_node=False, default=5)
    mine_rate: float = 0.3
    max_steps: int = struct.field(pytree_node=False, default=50)


class Minefield(Environment[MinefieldState, MinefieldParams]):
    """Cross the board to its rightmost column without stepping onto a mine."""

    name = "Minefield-v0"

    @property
    def default_params(self) -> MinefieldParams:
        return MinefieldParams()

    def reset_env(self, key: jax.Array, params: MinefieldParams):
        if params.size < 3:
            raise ValueError(f"Minefield needs size >= 3, got {params.size}")
        k_mines, k_row = jax.random.split(key)
        n = params.size
        mines = jax.random.bernoulli(k_mines, params.mine_rate, (n, n))
        inner = (jnp.arange(n) > 0) & (jnp.arange(n) < n - 1)
        mines = mines & inner[None, :]
        row = jax.random.randint(k_row, (), 0, n, jnp.int32)
        state = MinefieldState(mines, jnp.stack([row, jnp.zeros((), jnp.int32)]))
        return state, _observation(state, params)

    def step_env(self, key: jax.Array, state: MinefieldState, action, params: MinefieldParams):
        del key  # deterministic once the board is drawn
        n = params.size
        target = state.position + jnp.asarray(_MOVES)[jnp.asarray(action, jnp.int32)]
        on_board = jnp.all((target >= 0) & (target < n))
        position = jnp.where(on_board, target, state.position)
        mine = state.mines[position[0], position[1]]
        goal = position[1] == n - 1
        reward = jnp.where(mine, -1.0, jnp.where(goal, 1.0, 0.0)).astype(jnp.float32)
        new = MinefieldState(state.mines, position)
        return new, _observation(new, params), reward, mine | goal

    def action_mask(self, state: MinefieldState, params: MinefieldParams) -> jax.Array:
        n = params.size
        targets = state.position[None, :] + jnp.asarray(_MOVES)
        on_board = jnp.all((targets >= 0) & (targets < n), axis=-1)
        clipped = jnp.clip(targets, 0, n - 1)
        safe = ~state.mines[clipped[:, 0], clipped[:, 1]]
        return on_board & safe

    def render(self, state: MinefieldState, params: MinefieldParams) -> jax.Array:
        """The board, 30 pixels a cell: mines black, the goal column green, the agent blue."""
        n = params.size
        goal = jnp.zeros((n, n), jnp.int32).at[:, n - 1].set(3)
        cells = jnp.where(state.mines, 1, goal)
        cells = cells.at[state.position[0], state.position[1]].set(2)
        colors = jnp.array([render.WHITE, render.BLACK, render.BLUE, render.GREEN])
        return render.to_uint8(render.grid(cells, colors, 30))

    def observation_space(self, params: MinefieldParams) -> Dict:
        n = params.size
        return Dict(
            {
                "board": Box(0.0, 1.0, (n, n, 2), jnp.float32),
                "position": Box(0.0, 1.0, (2,), jnp.float32),
            }
        )

    def action_space(self, params: MinefieldParams) -> Discrete:
        return Discrete(5)


def _observation(state: MinefieldState, params: MinefieldParams) -> dict[str, jax.Array]:
    n = params.size
    agent = jnp.zeros((n, n), jnp.float32).at[state.position[0], state.position[1]].set(1.0)
    board = jnp.stack([state.mines.astype(jnp.float32), agent], axis=-1)
    return {"board": board, "position": state.position.astype(jnp.float32) / (n - 1)}

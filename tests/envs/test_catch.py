"""Catch (bsuite): falling ball, paddle moves and clipping, rewards, episode length, auto-reset.

There is no gymnasium Catch, so the rules of bsuite's ``catch.py`` are tested directly.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg.envs import EpisodeState
from jaxrl_fdg.envs.classic.catch import Catch, CatchParams, CatchState

LEFT, STAY, RIGHT = 0, 1, 2


@pytest.fixture(scope="module")
def catch():
    env = Catch()
    params = env.default_params
    return env, params, jax.jit(env.step)


def _positions(obs):
    """(ball row, ball column, paddle column) read back from a (rows, columns, 1) image."""
    board = np.asarray(obs)[..., 0]
    paddle_col = int(np.flatnonzero(board[-1])[0]) if board[-1].sum() == 1 else None
    above = np.argwhere(board[:-1] == 1.0)
    if len(above) == 1:
        return int(above[0][0]), int(above[0][1]), paddle_col
    return None, None, paddle_col  # ball in the bottom row too


def _follow(obs):
    """The catching policy, read off the observation: step the paddle toward the ball's column."""
    ball_row, ball_col, paddle_col = _positions(obs)
    return STAY if ball_col == paddle_col else (LEFT if ball_col < paddle_col else RIGHT)


def _state(ball_row, ball_col, paddle_col, time=0):
    return EpisodeState(
        CatchState(jnp.int32(ball_row), jnp.int32(ball_col), jnp.int32(paddle_col)),
        jnp.int32(time),
    )


def test_reset(catch):
    env, params, _ = catch
    state, ts = env.reset(jax.random.key(0), params)
    assert ts.observation.shape == (10, 5, 1) and ts.observation.dtype == jnp.float32
    assert int(state.env.ball_row) == 0 and int(state.env.paddle_col) == 2
    board = np.asarray(ts.observation)[..., 0]
    assert board.sum() == 2.0 and board[0, int(state.env.ball_col)] == 1.0 and board[9, 2] == 1.0


def test_ball_falls_one_row_per_step_and_episode_lasts_rows_minus_one(catch):
    env, params, step = catch
    key = jax.random.key(1)
    state, ts = env.reset(key, params)
    ball_col = int(state.env.ball_col)
    for t in range(1, params.rows):
        key, sub = jax.random.split(key)
        state, ts = step(sub, state, jnp.int32(STAY), params)
        board = np.asarray(ts.final_observation)[..., 0]
        # The ball never moves sideways; it is in row t after t steps.
        assert board[t, ball_col] == 1.0, t
        assert board.sum() == (1.0 if t == params.rows - 1 and ball_col == 2 else 2.0)
        assert bool(ts.terminated) == (t == params.rows - 1), t
        assert not bool(ts.truncated)
        if t < params.rows - 1:
            assert float(ts.reward) == 0.0
            np.testing.assert_array_equal(ts.observation, ts.final_observation)


@pytest.mark.parametrize("seed", range(8))
def test_following_the_ball_catches_it(catch, seed):
    env, params, step = catch
    key = jax.random.key(seed)
    state, ts = env.reset(key, params)
    rewards = []
    for _ in range(params.rows - 1):
        key, sub = jax.random.split(key)
        state, ts = step(sub, state, jnp.int32(_follow(ts.observation)), params)
        rewards.append(float(ts.reward))
    assert bool(ts.terminated) and rewards == [0.0] * (params.rows - 2) + [1.0]
    # Ball and paddle share the bottom cell: one 1.0 in the final image.
    assert float(np.asarray(ts.final_observation).sum()) == 1.0


@pytest.mark.parametrize("ball_col", range(5))
def test_moving_away_from_the_ball_misses_it(catch, ball_col):
    env, params, step = catch
    state = _state(0, ball_col, 2)
    # Away from the ball: toward the far wall (for the middle column any fixed side).
    action = RIGHT if ball_col <= 2 else LEFT
    for _ in range(params.rows - 1):
        state, ts = step(jax.random.key(0), state, jnp.int32(action), params)
    assert bool(ts.terminated) and float(ts.reward) == -1.0
    assert float(np.asarray(ts.final_observation).sum()) == 2.0


def test_paddle_is_clipped_at_the_walls(catch):
    env, params, step = catch
    for action, wall in ((LEFT, 0), (RIGHT, params.columns - 1)):
        state = _state(0, 0, 2)
        cols = []
        for _ in range(4):
            state, ts = step(jax.random.key(0), state, jnp.int32(action), params)
            cols.append(int(state.env.paddle_col))
            assert _positions(ts.observation)[2] == cols[-1]
        step_dir = 1 if action == RIGHT else -1
        assert cols == [2 + step_dir, wall, wall, wall]


def test_observation_has_two_ones_or_one_when_they_overlap(catch):
    env, params, _ = catch

    def rollout(key):
        state, ts = env.reset(key, params)

        def body(carry, key):
            state, _ = carry
            key_action, key_step = jax.random.split(key)
            action = jax.random.randint(key_action, (), 0, 3)
            state, ts = env.step(key_step, state, action, params)
            return (state, ts), ts

        _, seq = jax.lax.scan(body, (state, ts), jax.random.split(key, 90))
        return seq

    seq = jax.jit(rollout)(jax.random.key(3))
    for images in (seq.observation, seq.final_observation):
        images = np.asarray(images)
        assert set(np.unique(images)) <= {0.0, 1.0}
    ones = np.asarray(seq.final_observation).reshape(90, -1).sum(axis=1)
    caught = np.asarray(seq.reward) == 1.0
    # Only a catch puts the ball on the paddle's cell; every other image shows both.
    np.testing.assert_array_equal(ones, np.where(caught, 1.0, 2.0))
    # 90 steps of 9-step episodes: exactly 10 episodes, each ending with ±1.
    terminal = np.asarray(seq.terminated)
    assert terminal.sum() == 10 and np.all(np.abs(np.asarray(seq.reward))[terminal] == 1.0)
    assert np.all(np.asarray(seq.reward)[~terminal] == 0.0)
    assert not np.any(np.asarray(seq.truncated))


def test_auto_reset_after_termination_gives_a_fresh_top_row_ball(catch):
    env, params, step = catch
    last = _state(params.rows - 2, 4, 4, time=params.rows - 2)
    state, ts = step(jax.random.key(11), last, jnp.int32(STAY), params)
    assert bool(ts.terminated) and float(ts.reward) == 1.0 and int(state.time) == 0
    ball_row, ball_col, paddle_col = _positions(ts.observation)
    assert ball_row == 0 and paddle_col == 2 and np.asarray(ts.observation).sum() == 2.0
    assert (int(state.env.ball_row), int(state.env.ball_col)) == (0, ball_col)
    assert int(state.env.paddle_col) == 2


def test_reset_column_is_uniform(catch):
    env, params, _ = catch
    n = 5000
    states, _ = jax.jit(jax.vmap(lambda k: env.reset(k, params)))(
        jax.random.split(jax.random.key(42), n)
    )
    counts = np.bincount(np.asarray(states.env.ball_col), minlength=params.columns)
    assert counts.shape == (5,)
    # Each count is Binomial(n, 1/5): mean 1000, σ = √(n·0.2·0.8) ≈ 28.3; allow 4σ.
    sigma = np.sqrt(n * 0.2 * 0.8)
    assert np.all(np.abs(counts - n / 5) < 4 * sigma), counts


def test_never_truncates_a_normal_episode(catch):
    _, params, _ = catch
    assert params.max_steps >= 10 * (params.rows - 1)


def test_spaces_and_other_board_sizes():
    env = Catch()
    params = CatchParams(rows=6, columns=7)
    assert env.observation_space(params).shape == (6, 7, 1)
    assert env.action_space(params).n == 3
    state, ts = env.reset(jax.random.key(0), params)
    assert ts.observation.shape == (6, 7, 1) and int(state.env.paddle_col) == 3
    for _ in range(params.rows - 1):
        state, ts = env.step(jax.random.key(0), state, jnp.int32(STAY), params)
    assert bool(ts.terminated)
    with pytest.raises(ValueError, match="rows >= 2"):
        env.reset(jax.random.key(0), CatchParams(rows=1))

"""The adapters of JAX suites (``craftax/``, ``xminigrid/``, ``navix/``, ``jumanji/``) and the
generic ones (``gymnax-api/``, ``timestep-api/``): the same episodes as the suite's own reset and
step for the same keys and actions, episode ends split into terminated and truncated as each
adapter documents, ``final_observation`` the observation before the auto-reset, spaces that
match the observations, action masks that forbid what the suite treats as illegal, info keys.

Each suite's tests are skipped where its package is missing. Steps are jitted one at a time
(one small program per function) and compared eagerly; Craftax compiles for most of a minute on
CPU, so its episode test is in the slow tier and the default tier checks its spaces, info and
params by tracing only.
"""

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import envs
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.contracts import check_reset


def _equal(ours, theirs):
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(_data(a), _data(b))


def _data(x):
    if jax.dtypes.issubdtype(getattr(x, "dtype", None), jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x)


def _same_space(a, b):
    return spaces.describe(a) == spaces.describe(b)


def _reset_key(key):
    """The key the base class resets from when a step with ``key`` ends an episode."""
    return jax.random.split(key)[1]


# -- Craftax ---------------------------------------------------------------------------------------


def test_an_unknown_craftax_id_is_a_one_line_error_listing_the_ids():
    for call in (envs.check_name, envs.make):
        with pytest.raises(envs.UnknownEnvironmentError) as error:
            call("craftax/Nope")
        message = str(error.value)
        assert "\n" not in message and "unknown Craftax environment 'Nope'" in message
        assert "Craftax-Classic-Symbolic-v1" in message and "Craftax-Pixels-v1" in message


@pytest.mark.parametrize(
    "env_id, size, actions, achievements, limit",
    [
        ("Craftax-Classic-Symbolic-v1", 1345, 17, 22, 10_000),
        ("Craftax-Symbolic-v1", 8268, 43, 67, 100_000),
    ],
)
def test_craftax_spaces_info_and_time_limit(env_id, size, actions, achievements, limit):
    pytest.importorskip("craftax")
    env, params = envs.make(f"craftax/{env_id}")
    assert env.name == f"craftax-{env_id}" and env.on_host is False
    # The base class's limit is Craftax's max_timesteps, one field.
    assert params.max_steps == params.gymnax.max_timesteps == limit
    shapes = check_reset(env, params)
    assert shapes.observation.shape == (size,) and shapes.observation.dtype == jnp.float32
    assert env.action_space(params) == envs.Discrete(actions)
    names = [k for k in shapes.info if k.startswith("achievement_")]
    assert len(names) == len(shapes.info) == achievements
    assert "achievement_collect_wood" in names
    assert all(shapes.info[k].shape == () and shapes.info[k].dtype == jnp.float32 for k in names)
    # Craftax's step, traced: terminated and truncated are scalars of bool.
    state, _ = jax.eval_shape(env.reset, jax.random.key(0), params)
    _, ts = jax.eval_shape(env.step, jax.random.key(1), state, jnp.int32(0), params)
    assert ts.terminated.dtype == ts.truncated.dtype == jnp.bool_
    assert set(ts.info) == set(names)


def test_craftax_overrides():
    pytest.importorskip("craftax")
    env, params = envs.make(
        "craftax/Craftax-Classic-Symbolic-v1", achievements="vector", max_steps=50, day_length=20
    )
    assert (params.max_steps, params.gymnax.max_timesteps, params.gymnax.day_length) == (50, 50, 20)
    assert check_reset(env, params).info["achievements"].shape == (22,)
    env, params = envs.make("craftax/Craftax-Classic-Symbolic-v1", achievements="none")
    assert env.has_info is False and check_reset(env, params).info == {}
    with pytest.raises(ValueError, match=r"achievements='some'; choose one of each, vector, none"):
        envs.make("craftax/Craftax-Classic-Symbolic-v1", achievements="some")
    with pytest.raises(ValueError, match=r"unknown Craftax parameter\(s\) \['day_lenght'\]"):
        envs.make("craftax/Craftax-Classic-Symbolic-v1", day_lenght=20)


@pytest.mark.slow
def test_craftax_pixels_observations_match_their_space():
    # Classic's Pixels id. Craftax-Pixels-v1 takes the same path through the adapter (Craftax's
    # own reset and observation_space); building it in a fresh install processes full Craftax's
    # textures first, 90 s of the slow tier, where Classic's take 20 s.
    pytest.importorskip("craftax")
    env, params = envs.make("craftax/Craftax-Classic-Pixels-v1")
    shapes = check_reset(env, params)
    assert shapes.observation.ndim == 3 and shapes.observation.shape[-1] == 3


@pytest.mark.slow
def test_craftax_episodes_equal_craftax_own_steps():
    """Five random steps against Craftax's ``step_env``: equal observations and rewards, and at
    the time limit Craftax's ``done`` becomes ``truncated``; a death is ``terminated``."""
    pytest.importorskip("craftax")
    env, params = envs.make("craftax/Craftax-Classic-Symbolic-v1", max_steps=5)
    raw, raw_params = env.gymnax_env, params.gymnax  # max_timesteps 5: Craftax ends it too
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    raw_reset, raw_step = jax.jit(raw.reset_env), jax.jit(raw.step_env)
    key = jax.random.key(0)
    state, ts = reset(key, params)
    obs, raw_state = raw_reset(key, raw_params)
    _equal(ts.observation, obs)
    actions = jax.random.randint(jax.random.key(1), (5,), 0, 17)
    for i in range(5):
        k = jax.random.key(10 + i)
        state, ts = step(k, state, actions[i], params)
        obs, raw_state, reward, done, _ = raw_step(
            jax.random.split(k)[0], raw_state, actions[i], raw_params
        )
        _equal((ts.final_observation, ts.reward), (obs, reward))
        unlocked = np.asarray(raw_state.achievements, np.float32)
        assert float(ts.info["achievement_collect_wood"]) == unlocked[0]
        if i < 4:
            assert not (bool(done) or ts.terminated or ts.truncated)
            _equal(ts.observation, obs)
    assert bool(done) and bool(ts.truncated) and not bool(ts.terminated)
    _equal(ts.observation, raw_reset(_reset_key(k), raw_params)[0])
    assert int(state.time) == 0
    # A player without health dies on the next step: the MDP's end, before the time limit.
    health = state.env.player_health
    dying = state._replace(env=state.env.replace(player_health=jnp.full_like(health, -5)))
    _, ts = step(jax.random.key(99), dying, jnp.int32(0), params)
    assert bool(ts.terminated) and not bool(ts.truncated)


# -- XLand-MiniGrid --------------------------------------------------------------------------------

XLAND_TO_GOAL = (0, 0, 1, 0, 0)  # MiniGrid-Empty-5x5: forward, forward, right, forward, forward
XLAND_WANDER = (2, 0, 1, 1, 0, 3)  # turns and two forwards: cannot reach the goal in six steps


def test_xminigrid_episodes_equal_xland_own_steps():
    pytest.importorskip("xminigrid")
    env, params = envs.make("xminigrid/MiniGrid-Empty-5x5", max_steps=6)
    assert params.max_steps == params.xland.max_steps == 6  # one number for both
    raw, raw_params = env.xland_env, params.xland
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    raw_reset, raw_step = jax.jit(raw.reset), jax.jit(raw.step)
    shapes = check_reset(env, params)
    assert shapes.observation.shape == (7, 7, 2) and shapes.observation.dtype == jnp.uint8
    assert env.action_space(params) == envs.Discrete(6) and not env.has_action_mask

    # Wandering: equal steps, then XLand's time limit is the base class's (truncated).
    key = jax.random.key(0)
    state, ts = reset(key, params)
    raw_ts = raw_reset(raw_params, key)
    _equal(ts.observation, raw_ts.observation)
    for i, action in enumerate(XLAND_WANDER):
        k = jax.random.key(i)
        state, ts = step(k, state, jnp.int32(action), params)
        raw_ts = raw_step(raw_params, raw_ts, action)
        _equal((ts.final_observation, ts.reward), (raw_ts.observation, raw_ts.reward))
        if i < 5:
            assert int(raw_ts.step_type) == 1 and not (ts.terminated or ts.truncated)
            _equal(ts.observation, raw_ts.observation)
    assert int(raw_ts.step_type) == 2 and float(raw_ts.discount) == 1.0  # XLand's truncation
    assert bool(ts.truncated) and not bool(ts.terminated)
    _equal(ts.observation, raw_reset(raw_params, _reset_key(k)).observation)

    # To the goal: terminated, with XLand's reward of 1 - 0.9 * steps / max_steps.
    env, params = envs.make("xminigrid/MiniGrid-Empty-5x5")
    step = jax.jit(env.step)
    state, _ = jax.jit(env.reset)(key, params)
    raw_ts = raw_reset(params.xland, key)
    for action in XLAND_TO_GOAL:
        state, ts = step(key, state, jnp.int32(action), params)
        raw_ts = raw_step(params.xland, raw_ts, action)
    assert int(raw_ts.step_type) == 2 and float(raw_ts.discount) == 0.0
    assert bool(ts.terminated) and not bool(ts.truncated)
    np.testing.assert_allclose(float(ts.reward), 1 - 0.9 * 5 / 100, rtol=1e-6)
    _equal(ts.final_observation, raw_ts.observation)


def test_xminigrid_dict_observations_with_direction():
    pytest.importorskip("xminigrid")
    from xminigrid.wrappers import DirectionObservationWrapper

    env, params = envs.make("xminigrid/MiniGrid-Empty-5x5", direction=True)
    space = env.observation_space(params)
    assert isinstance(space, spaces.Dict) and set(space.spaces) == {"img", "direction"}
    assert space.spaces["direction"].shape == (4,)
    shapes = check_reset(env, params)
    assert shapes.observation["img"].dtype == jnp.uint8
    raw = DirectionObservationWrapper(env.xland_env._env)
    key = jax.random.key(3)
    state, ts = env.reset(key, params)
    raw_ts = raw.reset(params.xland, key)
    _equal(ts.observation, raw_ts.observation)
    state, ts = jax.jit(env.step)(key, state, jnp.int32(1), params)
    _equal(ts.observation, raw.step(params.xland, raw_ts, 1).observation)
    assert float(ts.observation["direction"].sum()) == 1.0


def test_xminigrid_benchmark_rulesets(tmp_path):
    pytest.importorskip("xminigrid")
    from xminigrid.benchmarks import save_bz2_pickle
    from xminigrid.core.constants import TILES_REGISTRY, Colors, Tiles

    env, params = envs.make("xminigrid/XLand-MiniGrid-R1-9x9", rules_and_goals=True)
    default = params.xland.ruleset
    # A benchmark of two rulesets, saved as XLand saves its own: the second places a red ball.
    ball = TILES_REGISTRY[Tiles.BALL, Colors.RED]
    tiles = jnp.stack([default.init_tiles[0], ball])
    data = {
        "goals": np.stack([default.goal, default.goal]),
        "rules": np.stack([default.rules, default.rules]),
        "init_tiles": np.stack([np.asarray(jnp.stack([tiles[0], tiles[0]])), np.asarray(tiles)]),
        "num_rules": np.array([1, 1]),
    }
    path = str(tmp_path / "two_rulesets")
    save_bz2_pickle(data, path)
    env, params = envs.make(
        "xminigrid/XLand-MiniGrid-R1-9x9", benchmark=path, ruleset_index=1, rules_and_goals=True
    )
    _equal(params.xland.ruleset.init_tiles, tiles)
    check_reset(env, params)
    state, _ = env.reset(jax.random.key(0), params)
    grid = np.asarray(state.env.env.state.grid)
    assert np.any(np.all(grid == np.asarray(ball), axis=-1))  # the ruleset placed its ball
    with pytest.raises(ValueError, match=r"ruleset_index=2 is outside the benchmark's 0..1"):
        envs.make("xminigrid/XLand-MiniGrid-R1-9x9", benchmark=path, ruleset_index=2)
    with pytest.raises(ValueError, match="unknown XLand-MiniGrid benchmark 'trivial-2k'"):
        envs.make("xminigrid/XLand-MiniGrid-R1-9x9", benchmark="trivial-2k")
    with pytest.raises(ValueError, match="takes no ruleset"):
        envs.make("xminigrid/MiniGrid-Empty-5x5", benchmark=path)


def test_xminigrid_bad_names_and_overrides():
    with pytest.raises(envs.UnknownEnvironmentError, match="ids start with 'XLand-MiniGrid'"):
        envs.check_name("xminigrid/Empty-5x5")
    pytest.importorskip("xminigrid")
    with pytest.raises(envs.UnknownEnvironmentError, match="did you mean 'MiniGrid-Empty-5x5'"):
        envs.make("xminigrid/MiniGrid-Empty-5x4")
    with pytest.raises(ValueError, match=r"unknown XLand-MiniGrid parameter\(s\) \['view'\]"):
        envs.make("xminigrid/MiniGrid-Empty-5x5", view=3)


# -- Navix -----------------------------------------------------------------------------------------

NAVIX_TO_GOAL = (2, 2, 1, 2, 2)  # Navix-Empty-5x5-v0: forward, forward, clockwise, forward twice


def test_navix_episodes_equal_navix_own_steps():
    pytest.importorskip("navix")
    env, params = envs.make("navix/Navix-Empty-5x5-v0", max_steps=4)
    assert params.max_steps == env.navix_env.max_steps == 4
    raw = env.navix_env
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    raw_reset, raw_step = jax.jit(raw.reset), jax.jit(raw.step)  # Navix's own, auto-resetting
    shapes = check_reset(env, params)
    assert shapes.observation.shape == (5, 5, 3) and shapes.observation.dtype == jnp.uint8
    assert env.action_space(params) == envs.Discrete(7)

    key = jax.random.key(0)
    state, ts = reset(key, params)
    raw_ts = raw_reset(key)
    _equal(ts.observation, raw_ts.observation)
    for i, action in enumerate((0, 1, 2, 3)):  # no goal within four steps: the time limit
        k = jax.random.key(i)
        state, ts = step(k, state, jnp.int32(action), params)
        raw_ts = raw_step(raw_ts, jnp.int32(action))
        _equal((ts.final_observation, ts.reward), (raw_ts.observation, raw_ts.reward))
        if i < 3:
            _equal(ts.observation, raw_ts.observation)
            assert not (ts.terminated or ts.truncated)
    assert int(raw_ts.step_type) == 1  # Navix's truncation
    assert bool(ts.truncated) and not bool(ts.terminated)
    _equal(ts.observation, raw_reset(_reset_key(k)).observation)

    env, params = envs.make("navix/Navix-Empty-5x5-v0")
    raw, step = env.navix_env, jax.jit(env.step)
    raw_step = jax.jit(raw.step)
    state, _ = env.reset(key, params)
    raw_ts = raw.reset(key)
    for action in NAVIX_TO_GOAL:
        state, ts = step(key, state, jnp.int32(action), params)
        raw_ts = raw_step(raw_ts, jnp.int32(action))
    assert int(raw_ts.step_type) == 2 and float(ts.reward) == float(raw_ts.reward) == 1.0
    assert bool(ts.terminated) and not bool(ts.truncated)
    _equal(ts.final_observation, raw_ts.observation)


def test_navix_bad_names_and_observations():
    with pytest.raises(envs.UnknownEnvironmentError, match="Navix ids start with 'Navix-'"):
        envs.check_name("navix/Empty-5x5-v0")
    pytest.importorskip("navix")
    with pytest.raises(envs.UnknownEnvironmentError, match="did you mean 'Navix-Empty-5x5-v0'"):
        envs.make("navix/Navix-Empty-5x4-v0")
    with pytest.raises(ValueError, match="observation='pixels'; choose one of symbolic"):
        envs.make("navix/Navix-Empty-5x5-v0", observation="pixels")
    env, params = envs.make("navix/Navix-Empty-5x5-v0", observation="categorical")
    assert check_reset(env, params).observation.shape == (5, 5)


# -- Jumanji ---------------------------------------------------------------------------------------


def test_jumanji_game2048_masks_and_info():
    pytest.importorskip("jumanji")
    env, params = envs.make("jumanji/Game2048-v1")
    raw = env.wrapped
    shapes = check_reset(env, params)
    # The board alone is observed; the mask is published; extras are info.
    assert shapes.observation.shape == (4, 4) and shapes.observation.dtype == jnp.int32
    assert env.action_space(params) == envs.Discrete(4) and env.has_action_mask
    assert set(shapes.info) == {"action_mask", "next_action_mask", "highest_tile"}
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    raw_step = jax.jit(raw.step)
    key = jax.random.key(0)
    state, ts = reset(key, params)
    raw_state, raw_ts = jax.jit(raw.reset)(key)
    _equal(
        (ts.observation, ts.info["action_mask"]),
        (raw_ts.observation.board, raw_ts.observation.action_mask),
    )
    for i in range(6):
        mask = np.asarray(ts.info["action_mask"])
        # Every masked-out action is illegal: Jumanji leaves the board as it is.
        for illegal in np.flatnonzero(~mask):
            after, _ = raw_step(raw_state, jnp.int32(illegal))
            _equal(after.board, raw_state.board)
        action = jnp.int32(np.flatnonzero(mask)[0])
        state, ts = step(jax.random.key(i), state, action, params)
        raw_state, raw_ts = raw_step(raw_state, action)
        _equal(
            (ts.observation, ts.reward, ts.info["action_mask"], ts.info["highest_tile"]),
            (
                raw_ts.observation.board,
                raw_ts.reward,
                raw_ts.observation.action_mask,
                jnp.float32(raw_ts.extras["highest_tile"]),
            ),
        )
        assert ts.info["action_mask"].dtype == jnp.bool_ and ts.info["action_mask"].shape == (4,)
        assert not (ts.terminated or ts.truncated)


def _safe_cell(raw_state):
    mines = set(np.asarray(raw_state.flat_mine_locations).tolist())
    return next(c for c in range(100) if c not in mines)


def test_jumanji_minesweeper_flattens_its_action_for_its_mask():
    pytest.importorskip("jumanji")
    env, params = envs.make("jumanji/Minesweeper-v0")
    raw = env.wrapped
    space = env.observation_space(params)
    assert isinstance(space, spaces.Dict) and set(space.spaces) == {
        "board",
        "num_mines",
        "step_count",
    }
    assert env.action_space(params) == envs.Discrete(100) and env.has_action_mask
    shapes = check_reset(env, params)
    assert shapes.info["action_mask"].shape == (100,)
    step = jax.jit(env.step)
    key = jax.random.key(0)
    state, ts = env.reset(key, params)
    raw_state, raw_ts = raw.reset(key)
    fields = raw_ts.observation._asdict()
    _equal(ts.observation, {k: v for k, v in fields.items() if k != "action_mask"})
    np.testing.assert_array_equal(ts.info["action_mask"], raw_ts.observation.action_mask.ravel())
    cell = _safe_cell(raw_state)
    row, col = divmod(cell, 10)
    state, ts = step(key, state, jnp.int32(cell), params)
    raw_state, raw_ts = raw.step(raw_state, jnp.array([row, col], jnp.int32))
    _equal(ts.observation["board"], raw_ts.observation.board)
    assert float(ts.reward) == float(raw_ts.reward) == 1.0
    # The cell is open now, so masked out, and opening it again is what Minesweeper punishes.
    assert not bool(ts.info["action_mask"][cell]) and bool(ts.info["action_mask"].sum() == 99)
    _, illegal = raw.step(raw_state, jnp.array([row, col], jnp.int32))
    assert bool(illegal.last()) and float(illegal.discount) == 0.0
    opened = ts.observation["board"]
    state, ts = step(jax.random.key(5), state, jnp.int32(cell), params)
    assert bool(ts.terminated) and not bool(ts.truncated) and float(ts.reward) == 0.0
    _equal(ts.final_observation["board"], opened)  # the episode's last board, before the reset
    assert np.all(np.asarray(ts.observation["board"]) == -1)  # a new board
    assert bool(ts.info["action_mask"].all()) and not bool(ts.info["next_action_mask"][cell])
    # flatten_action=False keeps Jumanji's pair, and the mask in the observation.
    env, params = envs.make("jumanji/Minesweeper-v0", flatten_action=False)
    assert env.action_space(params) == spaces.MultiDiscrete((10, 10))
    assert not env.has_action_mask and "action_mask" in env.observation_space(params).spaces


def test_jumanji_time_limits_are_truncations():
    """RubiksCube ends its episodes at ``time_limit`` with a discount of 0: truncated where
    max_steps is that limit (the default) or below, terminated where it is above."""
    pytest.importorskip("jumanji")
    action = jnp.zeros((3,), jnp.int32)

    def ends(**overrides):
        env, params = envs.make("jumanji/RubiksCube-v0", time_limit=4, **overrides)
        step = jax.jit(env.step)
        state, _ = env.reset(jax.random.key(0), params)
        out = []
        for i in range(5):
            state, ts = step(jax.random.key(i), state, action, params)
            out.append((bool(ts.terminated), bool(ts.truncated)))
        return params.max_steps, out

    no, limit = (False, False), (False, True)
    assert ends() == (4, [no, no, no, limit, no])
    assert ends(max_steps=2)[1] == [no, limit, no, limit, no]
    assert ends(max_steps=6)[1] == [no, no, no, (True, False), no]


def test_jumanji_bad_names():
    with pytest.raises(envs.UnknownEnvironmentError, match="<name>-v<version>"):
        envs.check_name("jumanji/Game2048")
    pytest.importorskip("jumanji")
    with pytest.raises(envs.UnknownEnvironmentError, match="did you mean 'Game2048-v1'"):
        envs.make("jumanji/Game2049-v1")
    with pytest.raises(ValueError, match="jumanji cannot make 'Game2048-v1'"):
        envs.make("jumanji/Game2048-v1", no_such_argument=1)


# -- the generic adapters --------------------------------------------------------------------------

FAKE_SUITES = '''
"""Two small suites, one with gymnax's API of before 1.0 and one with the dm_env-style API."""
from typing import NamedTuple

import jax.numpy as jnp
from flax import struct


class Discrete:
    def __init__(self, n):
        self.n = n


class Box:
    def __init__(self, low, high, shape, dtype):
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype


@struct.dataclass
class WalkParams:
    max_timesteps: int = 6
    goal: int = 3


class Walk:
    """Action 1 steps right, 0 stays; done at the goal or at the time limit (old gymnax)."""

    default_params = WalkParams()

    def reset_env(self, key, params):
        state = {"x": 0, "time": 0}
        return self.obs(state), state

    def step_env(self, key, state, action, params):
        new = {"x": state["x"] + action, "time": state["time"] + 1}
        done = (new["x"] >= params.goal) | (new["time"] >= params.max_timesteps)
        return self.obs(new), new, jnp.float32(action), done, {}

    def obs(self, state):
        return jnp.array([state["x"]], jnp.int32)

    def observation_space(self, params):
        return Box(0, 100, (1,), jnp.int32)

    def action_space(self, params):
        return Discrete(2)


def make_walk(goal=3):
    return Walk(), WalkParams(goal=goal)


class DiscreteArray:
    shape, dtype = (), jnp.int32

    def __init__(self, num_values):
        self.num_values = num_values


class Step(NamedTuple):
    step_type: jnp.ndarray
    reward: jnp.ndarray
    discount: jnp.ndarray
    observation: dict
    extras: dict


class Chain:
    """dm_env style: action 1 right, 0 left (illegal at 0); the goal at 3 ends the episode
    (discount 0), the fifth step truncates it (discount 1). No observation spec."""

    action_spec = DiscreteArray(2)

    def reset(self, key):
        state = (jnp.int32(0), jnp.int32(0))
        return state, self.timestep(state[0], 0, 1.0)

    def step(self, state, action):
        pos, time = state[0] + 2 * action - 1, state[1] + 1
        goal, timeout = pos >= 3, time >= 5
        step_type = jnp.where(goal | timeout, 2, 1)
        return (pos, time), self.timestep(pos, step_type, jnp.where(goal, 0.0, 1.0))

    def timestep(self, pos, step_type, discount):
        obs = {"pos": pos[None], "action_mask": jnp.stack([pos > 0, jnp.bool_(True)])}
        return Step(jnp.int8(step_type), jnp.float32(0), jnp.float32(discount), obs,
                    {"score": pos})
'''


@pytest.fixture
def fake_suites(tmp_path, monkeypatch):
    (tmp_path / "fake_suites.py").write_text(textwrap.dedent(FAKE_SUITES))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "fake_suites"


def _ends(env, params, actions):
    state, _ = env.reset(jax.random.key(0), params)
    step = jax.jit(env.step)
    out = []
    for i, action in enumerate(actions):
        state, ts = step(jax.random.key(i), state, jnp.int32(action), params)
        out.append((bool(ts.terminated), bool(ts.truncated)))
    return out


def test_gymnax_api_takes_any_gymnax_object_and_splits_a_limit_in_done(fake_suites):
    env, params = envs.make(f"gymnax-api/{fake_suites}:make_walk", limit_in_done=True, max_steps=4)
    assert env.name == f"gymnax-api/{fake_suites}:make_walk"
    assert params.limit == "max_timesteps" and params.max_steps == params.gymnax.max_timesteps == 4
    assert check_reset(env, params).observation.dtype == jnp.int32
    no, limit = (False, False), (False, True)
    assert _ends(env, params, [0] * 5) == [no, no, no, limit, no]
    assert _ends(env, params, [1, 1, 1, 0]) == [no, no, (True, False), no]
    # Without limit_in_done the suite's own done at the limit is taken for the MDP's end too.
    env, params = envs.make(f"gymnax-api/{fake_suites}:make_walk", max_steps=4)
    assert _ends(env, params, [0] * 4)[3] == (True, True)
    # Keywords go to the factory.
    env, params = envs.make(f"gymnax-api/{fake_suites}:make_walk", goal=1)
    assert _ends(env, params, [1]) == [(True, False)]


def test_gymnax_api_of_gymnax_make_equals_the_gymnax_adapter():
    pytest.importorskip("gymnax")
    ours, params = envs.make("gymnax-api/gymnax:make", env_id="CartPole-v1", max_steps=8)
    gymnax_env, gymnax_params = envs.make("gymnax/CartPole-v1", max_steps=8)
    assert _same_space(ours.observation_space(params), gymnax_env.observation_space(gymnax_params))

    def episode(env, params):
        state, _ = env.reset(jax.random.key(0), params)

        def body(state, key):
            state, ts = env.step(key, state, jax.random.randint(key, (), 0, 2), params)
            return state, ts

        return jax.lax.scan(body, state, jax.random.split(jax.random.key(1), 20))[1]

    a, b = (
        jax.jit(episode, static_argnums=0)(ours, params),
        jax.jit(episode, static_argnums=0)(gymnax_env, gymnax_params),
    )
    _equal(a, b)
    assert np.any(np.asarray(a.truncated))


def test_timestep_api_takes_any_dm_env_object(fake_suites):
    env, params = envs.make(f"timestep-api/{fake_suites}:Chain", max_steps=5)
    # One field besides the mask: observed alone, as an (unbounded) box of its traced shape.
    assert env.observation_space(params).shape == (1,) and env.has_action_mask
    shapes = check_reset(env, params)
    assert set(shapes.info) == {"action_mask", "next_action_mask", "score"}
    state, ts = env.reset(jax.random.key(0), params)
    assert ts.info["action_mask"].tolist() == [False, True]  # left is illegal at 0
    no, limit = (False, False), (False, True)
    # The suite's truncation (discount 1) at step 5 is the base class's time limit.
    assert _ends(env, params, [1, 0, 1, 0, 1]) == [no, no, no, no, limit]
    assert _ends(env, params, [1, 1, 1]) == [no, no, (True, False)]
    # Where max_steps is longer, the suite still ends the episode there: terminated.
    env, params = envs.make(f"timestep-api/{fake_suites}:Chain", max_steps=8)
    assert _ends(env, params, [1, 0, 1, 0, 1, 1]) == [no, no, no, no, (True, False), no]


def test_timestep_api_of_jumanji_make_equals_the_jumanji_adapter():
    pytest.importorskip("jumanji")
    env, params = envs.make("timestep-api/jumanji:make", id="Game2048-v1")
    jumanji_env, jumanji_params = envs.make("jumanji/Game2048-v1")
    assert _same_space(env.observation_space(params), jumanji_env.observation_space(jumanji_params))
    assert env.action_space(params) == jumanji_env.action_space(jumanji_params)
    _equal(
        env.reset(jax.random.key(0), params), jumanji_env.reset(jax.random.key(0), jumanji_params)
    )


def test_generic_references_are_checked_and_named():
    for prefix in ("gymnax-api/", "timestep-api/"):
        for bad in ("mylab.envs", "my-lab:make", "mylab.envs:", ":make"):
            with pytest.raises(envs.UnknownEnvironmentError, match="<module>:<factory>") as error:
                envs.check_name(prefix + bad)
            assert "\n" not in str(error.value)
        envs.check_name(prefix + "mylab.envs:make_env")  # well formed: not imported yet
    with pytest.raises(envs.UnknownEnvironmentError, match="module 'jax' has no 'no_env'"):
        envs.make("timestep-api/jax:no_env")
    with pytest.raises(ValueError, match="cannot import module 'no_such_module_here'"):
        envs.make("gymnax-api/no_such_module_here:make")
    with pytest.raises(ValueError, match="lacks gymnax's reset_env, step_env"):
        envs.make("gymnax-api/builtins:dict")


# -- Renderers -------------------------------------------------------------------------------------
# What `evaluate --video` draws: a video renders with one jitted vmap of `render` over the played
# states (XLand-MiniGrid's numpy renderer: state by state on the host).


def _stack(*states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def _drawn(env, params, states):
    """A batch of one environment's states drawn as a video draws them."""
    return np.asarray(jax.jit(jax.vmap(env.render, in_axes=(0, None)))(states, params))


def _reset_and_step(env, params, action):
    """A reset state and the state one ``action`` later (the ``env`` parts), as a batch of two,
    and their observations."""
    state, ts = jax.jit(env.reset)(jax.random.key(0), params)
    after, ts_after = jax.jit(env.step)(jax.random.key(1), state, jnp.int32(action), params)
    assert not (ts_after.terminated or ts_after.truncated)
    return _stack(state.env, after.env), (ts.observation, ts_after.observation)


def test_gymnax_image_observations_render_as_coloured_channels():
    pytest.importorskip("gymnax")
    from jaxrl_fdg.envs.render import PALETTE

    env, params = envs.make("gymnax/Breakout-MinAtar")
    assert env.can_render and not env.render_on_host
    states, observations = _reset_and_step(env, params, 0)  # the ball moves
    frames = _drawn(env, params, states)
    assert frames.dtype == np.uint8 and frames.shape == (2, 160, 160, 3)
    assert not np.array_equal(frames[0], frames[1])
    # Each cell 16 pixels square, in the colour of the last channel set there, else black.
    for frame, obs in zip(frames, observations, strict=True):
        obs = np.asarray(obs)
        expected = np.zeros((10, 10, 3))
        for c in range(obs.shape[-1]):
            expected[obs[..., c] > 0] = PALETTE[c]
        np.testing.assert_array_equal(frame[::16, ::16], np.round(expected * 255))
    # Pong-misc's [30, 40, 3]: 4 pixels a cell.
    pong, pong_params = envs.make("gymnax/Pong-misc")
    state, _ = jax.eval_shape(pong.reset, jax.random.key(0), pong_params)
    frame = jax.eval_shape(pong.render, state.env, pong_params)
    assert frame.shape == (120, 160, 3) and frame.dtype == jnp.uint8
    # A vector observation is no image: no renderer (the registered CartPole-v1 draws its own).
    cartpole, cartpole_params = envs.make("gymnax/CartPole-v1")
    assert not cartpole.can_render
    with pytest.raises(NotImplementedError, match="gymnax-CartPole-v1 does not render"):
        cartpole.render(None, cartpole_params)


def test_navix_renders_its_own_rgb_picture_enlarged():
    pytest.importorskip("navix")
    from navix.observations import rgb

    env, params = envs.make("navix/Navix-Empty-5x5-v0")
    assert env.can_render and not env.render_on_host
    states, _ = _reset_and_step(env, params, 2)  # forward
    frames = _drawn(env, params, states)
    assert frames.dtype == np.uint8 and frames.shape == (2, 240, 240, 3)  # 8 pixels a tile, × 6
    assert not np.array_equal(frames[0], frames[1])
    first = jax.tree.map(lambda x: x[0], states)
    np.testing.assert_array_equal(frames[0][::6, ::6], np.asarray(rgb(first.env.state)))


def test_xminigrid_renders_on_the_host_with_xland_own_renderer():
    pytest.importorskip("xminigrid")
    env, params = envs.make("xminigrid/MiniGrid-Empty-5x5")
    assert env.can_render and env.render_on_host
    states, _ = _reset_and_step(env, params, 0)  # forward
    host = jax.device_get(states)
    frames = [env.render(jax.tree.map(lambda x, i=i: x[i], host), params) for i in (0, 1)]
    for frame in frames:  # the whole 5 × 5 grid, 16 pixels a tile
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
        assert frame.shape == (80, 80, 3)
    assert not np.array_equal(frames[0], frames[1])


@pytest.mark.parametrize(
    "env_id, shape",
    [("Craftax-Classic-Symbolic-v1", (144, 144, 3)), ("Craftax-Symbolic-v1", (208, 176, 3))],
)
def test_craftax_renders_with_its_own_pixel_renderer(env_id, shape):
    """Traced only (Craftax compiles slowly); the slow tier draws frames."""
    pytest.importorskip("craftax")
    env, params = envs.make(f"craftax/{env_id}")
    assert env.can_render and not env.render_on_host
    assert env._pixels is None  # built at the first render: building an environment stays fast
    state, _ = jax.eval_shape(env.reset, jax.random.key(0), params)
    frame = jax.eval_shape(env.render, state.env, params)
    assert frame.shape == shape and frame.dtype == jnp.uint8
    # Built inside that trace, the renderer left no tracer in Craftax's cache of textures.
    if "Classic" in env_id:
        from craftax.craftax_classic.constants import load_all_textures
    else:
        from craftax.craftax.constants import load_all_textures
    textures = jax.tree.leaves(load_all_textures())
    assert textures and not any(isinstance(t, jax.core.Tracer) for t in textures)


@pytest.mark.slow
def test_craftax_frames_of_two_worlds_differ():
    pytest.importorskip("craftax")
    env, params = envs.make("craftax/Craftax-Classic-Symbolic-v1")
    # Traced first (the renderer is then built inside a trace), then drawn.
    state, _ = jax.eval_shape(env.reset, jax.random.key(0), params)
    jax.eval_shape(env.render, state.env, params)
    states, _ = jax.jit(env.reset_batch, static_argnums=1)(jax.random.key(0), 2, params)
    frames = _drawn(env, params, states.env)
    assert frames.dtype == np.uint8 and frames.shape == (2, 144, 144, 3)
    assert not np.array_equal(frames[0], frames[1])
    assert frames.min() < frames.max()


def test_evaluate_films_a_minatar_game(tmp_path):
    pytest.importorskip("gymnax")
    from PIL import Image

    import jaxrl_fdg as rl
    from jaxrl_fdg import testing
    from jaxrl_fdg.run.evaluation import Video

    config = testing.tiny(
        "ppo",
        env="gymnax/Breakout-MinAtar",
        env_options={"max_steps": 20},
        out=str(tmp_path),
        run_name="breakout",
    )
    rl.train(config)
    result = rl.evaluate(tmp_path / "breakout", episodes=2, video=Video())
    gif = Image.open(result["video"])
    assert gif.size == (160, 160) and 1 <= gif.n_frames <= 20

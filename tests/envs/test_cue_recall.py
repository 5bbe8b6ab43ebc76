"""CueRecall-v0: the cue is seen once, answered ``delay`` steps later; returns with and without
memory, episode length, auto-reset, and terminated vs truncated."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import envs
from jaxrl_fdg.envs import CueRecall, CueRecallParams, CueRecallState, EpisodeState


@pytest.fixture(scope="module")
def cue_recall():
    env, params = envs.make("CueRecall-v0")
    return env, params, jax.jit(env.step)


def _state(cue):
    """The first state of an episode with cue ``cue``."""
    return EpisodeState(CueRecallState(jnp.int32(cue), jnp.int32(0)), jnp.int32(0))


def _episode(step, params, cue, actions):
    """Step from the first state of an episode with cue ``cue``: the time steps, in order."""
    state, out = _state(cue), []
    for action in actions:
        state, ts = step(jax.random.key(0), state, jnp.int32(action), params)
        out.append(ts)
    return state, out


def test_reset_shows_the_cue(cue_recall):
    env, params, _ = cue_recall
    assert (params.num_cues, params.delay) == (2, 4)
    state, ts = env.reset(jax.random.key(0), params)
    assert ts.observation.shape == (3,) and ts.observation.dtype == jnp.float32
    assert int(state.env.time) == 0
    expected = np.zeros(3, np.float32)
    expected[int(state.env.cue)] = 1.0  # one-hot cue, decision flag off
    np.testing.assert_array_equal(ts.observation, expected)


@pytest.mark.parametrize("cue", [0, 1])
def test_known_episode_recalling_the_cue(cue_recall, cue):
    env, params, step = cue_recall
    # Actions before the decision are ignored: here the wrong answer four times, then the cue.
    state, seq = _episode(step, params, cue, [1 - cue] * 4 + [cue])
    observations = [np.asarray(ts.final_observation) for ts in seq]
    # After steps 1..3 blank; after step 4 the decision flag; after step 5 (terminal) blank.
    assert [o.tolist() for o in observations] == [[0.0, 0.0, 0.0]] * 3 + [
        [0.0, 0.0, 1.0],
        [0.0, 0.0, 0.0],
    ]
    assert [float(ts.reward) for ts in seq] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert [bool(ts.terminated) for ts in seq] == [False] * 4 + [True]
    assert not any(bool(ts.truncated) for ts in seq)
    # Auto-reset: the next episode starts at time 0 showing its own cue.
    assert int(state.time) == 0 and int(state.env.time) == 0
    expected = np.zeros(3, np.float32)
    expected[int(state.env.cue)] = 1.0
    np.testing.assert_array_equal(seq[-1].observation, expected)


@pytest.mark.parametrize("num_cues", [2, 3])
def test_recall_earns_one_and_a_memoryless_answer_two_over_k_minus_one(num_cues):
    # reward[c, a] = +1 if a == c else -1. A memoryless policy sees the same decision
    # observation whatever the cue, so answer a earns the mean over uniform cues of column a:
    # (1 - (k - 1)) / k = 2/k - 1, i.e. 0 for k = 2 and -1/3 for k = 3; recall earns +1.
    env = CueRecall()
    params = CueRecallParams(num_cues=num_cues, delay=2)

    def episode_return(cue, answer):
        state = _state(cue)
        total = jnp.zeros((), jnp.float32)
        for _ in range(params.delay + 1):
            state, ts = env.step(jax.random.key(0), state, answer, params)
            total += ts.reward
        return total, ts.terminated

    cues = jnp.arange(num_cues, dtype=jnp.int32)
    returns, terminated = jax.jit(
        jax.vmap(jax.vmap(episode_return, in_axes=(None, 0)), in_axes=(0, None))
    )(cues, cues)
    assert bool(jnp.all(terminated))
    np.testing.assert_array_equal(returns, 2 * np.eye(num_cues) - 1)
    np.testing.assert_allclose(returns.mean(axis=0), np.full(num_cues, 2 / num_cues - 1))
    assert float(jnp.diag(returns).mean()) == 1.0


def test_episodes_last_delay_plus_one_steps_under_step_batch(cue_recall):
    # 8 environments, 30 steps of random answers: every episode ends at steps 4, 9, ..., 29
    # (5 steps each), with ±1 there and 0 elsewhere; the cue shows on each first observation only.
    env, params, _ = cue_recall

    def rollout(key):
        state, first = env.reset_batch(key, 8, params)

        def body(state, key):
            key_action, key_step = jax.random.split(key)
            actions = jax.random.randint(key_action, (8,), 0, params.num_cues)
            state, ts = env.step_batch(key_step, state, actions, params)
            return state, ts

        _, seq = jax.lax.scan(body, state, jax.random.split(key, 30))
        return first, seq

    first, seq = jax.jit(rollout)(jax.random.key(7))
    terminal = np.arange(30) % 5 == 4
    np.testing.assert_array_equal(seq.terminated, np.broadcast_to(terminal[:, None], (30, 8)))
    assert not np.any(np.asarray(seq.truncated))
    reward = np.asarray(seq.reward)
    assert np.all(np.abs(reward[terminal]) == 1.0) and np.all(reward[~terminal] == 0.0)
    # Observations: the first of each episode (reset, or right after a terminal step) holds
    # exactly one cue bit and no flag; the fourth after it holds the flag only; others are blank.
    obs = np.concatenate([np.asarray(first.observation)[None], np.asarray(seq.observation)])
    phase = np.arange(31) % 5
    cue_bits, flag = obs[..., :2].sum(-1), obs[..., 2]
    np.testing.assert_array_equal(cue_bits, np.broadcast_to((phase == 0)[:, None], (31, 8)))
    np.testing.assert_array_equal(flag, np.broadcast_to((phase == 4)[:, None], (31, 8)))
    # The terminal observation is blank.
    assert np.all(np.asarray(seq.final_observation)[terminal] == 0.0)


def test_cue_is_uniform():
    env, params = envs.make("CueRecall-v0", num_cues=4)
    n = 4000
    states, _ = jax.jit(lambda key: env.reset_batch(key, n, params))(jax.random.key(42))
    counts = np.bincount(np.asarray(states.env.cue), minlength=4)
    assert counts.shape == (4,)
    # Each count is Binomial(n, 1/4): mean 1000, σ = √(n·¼·¾) ≈ 27.4; allow 4σ.
    assert np.all(np.abs(counts - n / 4) < 4 * np.sqrt(n * 0.25 * 0.75)), counts


def test_truncated_before_the_decision_is_not_terminated():
    env, params = envs.make("CueRecall-v0", max_steps=3)
    assert params.max_steps == 3 and envs.make("CueRecall-v0")[1].max_steps >= 10 * 5
    state, seq = _episode(jax.jit(env.step), params, 1, [1, 1, 1])
    assert [bool(ts.truncated) for ts in seq] == [False, False, True]
    assert not any(bool(ts.terminated) for ts in seq)
    assert [float(ts.reward) for ts in seq] == [0.0, 0.0, 0.0]
    assert int(state.time) == 0 and int(state.env.time) == 0  # a fresh episode after the cut


def test_spaces_and_other_sizes():
    env = CueRecall()
    params = CueRecallParams(num_cues=4, delay=7)
    assert env.observation_space(params).shape == (5,)
    assert env.action_space(params).n == 4
    assert not bool(env.action_space(params).contains(4))
    state, ts = env.reset(jax.random.key(3), params)
    assert bool(env.observation_space(params).contains(ts.observation))
    cue, step = int(state.env.cue), jax.jit(env.step)
    for t in range(1, params.delay + 2):
        state, ts = step(jax.random.key(0), state, jnp.int32(cue), params)
        assert bool(ts.terminated) == (t == params.delay + 1), t
    assert float(ts.reward) == 1.0
    for bad in (CueRecallParams(num_cues=1), CueRecallParams(delay=0)):
        with pytest.raises(ValueError, match="num_cues >= 2 and delay >= 1"):
            env.reset(jax.random.key(0), bad)

"""Frame replay against a transition replay of the same rollouts: known answers at every slot,
across episode ends (terminated and truncated, mid-rollout and at a rollout's last step),
n-step windows, frame stacks and the rings wrapping around."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.fragments.algorithms.offpolicy import Experience, n_step_experience
from jaxrl_fdg.fragments.replay import make_prioritized, make_uniform
from jaxrl_fdg.fragments.replay.frames import make_frame_replay


class StackedEpisodes:
    """``B`` environments whose step ``i`` shows the frame ``(i, −i)`` (unique over the run),
    stacked ``K`` deep on a trailing axis as FrameStack does: a reset fills the stack with the
    episode's first frame. Episodes end at random, terminated or truncated."""

    def __init__(self, num_envs, stack, seed, end_rate=0.2):
        self.rng = np.random.default_rng(seed)
        self.num_envs, self.stack, self.end_rate = num_envs, stack, end_rate
        self.count = 0
        self.frames = [self._reset() for _ in range(num_envs)]

    def _frame(self):
        self.count += 1
        return np.array([self.count, -self.count], np.int32)

    def _reset(self):
        return [self._frame()] * self.stack

    def observe(self, frames):
        return np.stack(frames, axis=-1)  # [2, K]

    def rollout(self, steps):
        fields = {k: [] for k in Transition._fields if k not in ("extras", "info")}
        for _ in range(steps):
            obs, nxt, term, trunc = [], [], [], []
            for b in range(self.num_envs):
                obs.append(self.observe(self.frames[b]))
                self.frames[b] = self.frames[b][1:] + [self._frame()]
                nxt.append(self.observe(self.frames[b]))
                ended = self.rng.random() < self.end_rate
                kind = self.rng.integers(3)  # terminated, truncated, or both
                term.append(ended and kind != 1)
                trunc.append(ended and kind != 0)
                if ended:
                    self.frames[b] = self._reset()
            fields["observation"].append(obs)
            fields["next_observation"].append(nxt)
            fields["terminated"].append(term)
            fields["truncated"].append(trunc)
            fields["action"].append(self.rng.integers(0, 5, self.num_envs))
            fields["reward"].append(self.rng.normal(size=self.num_envs))
        arrays = {k: jnp.asarray(np.array(v)) for k, v in fields.items()}
        arrays["reward"] = arrays["reward"].astype(jnp.float32)
        arrays["action"] = arrays["action"].astype(jnp.int32)
        return Transition(**arrays, extras={}, info={})


def _replays(capacity, num_envs, rollout_len, stack, n_step, prioritized=False, batch=16):
    def inner():
        if prioritized:
            return make_prioritized(capacity, batch, arity=4)
        return make_uniform(capacity, batch)

    frames = make_frame_replay(
        inner(),
        capacity=capacity,
        num_envs=num_envs,
        rollout_len=rollout_len,
        stack=stack,
        n_step=n_step,
        gamma=0.9,
        make_transitions=Experience,
    )
    return inner(), frames


def _squeeze(stack):
    return (lambda x: x) if stack > 1 else (lambda x: x[..., 0])


@pytest.mark.parametrize(
    ("stack", "n_step", "num_envs", "rollout_len", "capacity"),
    [
        (3, 3, 3, 4, 36),
        # Slow tier: the case above holds the stack, n-step and wrap-around contract.
        pytest.param(4, 1, 2, 5, 30, marks=pytest.mark.slow),
        pytest.param(1, 2, 2, 6, 24, marks=pytest.mark.slow),
    ],
)
def test_every_slot_matches_the_transition_replay(stack, n_step, num_envs, rollout_len, capacity):
    episodes = StackedEpisodes(num_envs, stack, seed=stack * 10 + n_step)
    squeeze = _squeeze(stack)
    transitions, frames = _replays(capacity, num_envs, rollout_len, stack, n_step)
    example = Experience(
        jnp.zeros(squeeze(jnp.zeros((2, stack))).shape, jnp.int32),
        jnp.zeros((), jnp.int32),
        jnp.zeros(()),
        jnp.zeros(()),
        jnp.zeros(squeeze(jnp.zeros((2, stack))).shape, jnp.int32),
    )
    t_state = transitions.init(example)
    f_state = frames.init(example.observation, example.action)
    store = jax.jit(frames.store)
    lookup = jax.jit(frames.lookup)
    saw_truncated_bootstrap = False
    for _ in range(4 * capacity // (num_envs * rollout_len)):  # wraps around several times
        rollout = episodes.rollout(rollout_len)
        rollout = rollout._replace(
            observation=squeeze(rollout.observation),
            next_observation=squeeze(rollout.next_observation),
        )
        t_state = transitions.add(t_state, n_step_experience(rollout, 0.9, n_step))
        f_state = store(f_state, rollout)
        assert int(f_state.size) == int(t_state.size)
        slots = jnp.arange(int(t_state.size))
        got, valid = lookup(f_state, slots)
        want = jax.tree.map(lambda s, i=slots: s[i], t_state.storage)
        assert bool(valid.all())
        for name in ("observation", "action", "reward", "discount"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
        # Every next observation a target reads (discount > 0) is the one the env showed.
        reads = np.asarray(want.discount) > 0
        np.testing.assert_array_equal(
            np.asarray(got.next_observation)[reads], np.asarray(want.next_observation)[reads]
        )
        cut = np.asarray(f_state.records.storage.final)[: int(t_state.size)] >= 0
        saw_truncated_bootstrap |= bool((cut & reads).any())
    assert saw_truncated_bootstrap  # the episodes above exercise truncation


@pytest.mark.parametrize("prioritized", [pytest.param(False, marks=pytest.mark.slow), True])
def test_sampling_draws_the_same_batch_as_the_transition_replay(prioritized):
    stack, n_step, num_envs, rollout_len, capacity = 4, 3, 2, 8, 64
    episodes = StackedEpisodes(num_envs, stack, seed=3)
    transitions, frames = _replays(capacity, num_envs, rollout_len, stack, n_step, prioritized)
    example = Experience(
        jnp.zeros((2, stack), jnp.int32),
        jnp.zeros((), jnp.int32),
        jnp.zeros(()),
        jnp.zeros(()),
        jnp.zeros((2, stack), jnp.int32),
    )
    t_state = transitions.init(example)
    f_state = frames.init(example.observation, example.action)
    for i in range(6):
        rollout = episodes.rollout(rollout_len)
        t_state = transitions.add(t_state, n_step_experience(rollout, 0.9, n_step))
        f_state = frames.store(f_state, rollout)
        key = jax.random.key(i)
        want = transitions.sample(t_state, key, 0.5)
        got = frames.sample(f_state, key, 0.5)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.weights, want.weights)
        np.testing.assert_array_equal(got.transitions.observation, want.transitions.observation)
        td = jnp.linspace(0.1, 2.0, got.indices.shape[0]) * (i + 1)
        t_state = transitions.update_priorities(t_state, want.indices, want.writes, td)
        f_state = frames.update_priorities(f_state, got.indices, got.writes, td)
    assert bool(frames.can_sample(f_state))


def test_an_overwritten_final_frame_drops_its_transition_from_the_loss():
    # Every step truncates: the side ring (B · T entries here) cannot keep every final frame of
    # a buffer of 4 rollouts, so the oldest transitions lose theirs and get weight 0.
    stack, num_envs, rollout_len, capacity = 2, 2, 4, 32
    episodes = StackedEpisodes(num_envs, stack, seed=0, end_rate=1.0)
    _, frames = _replays(capacity, num_envs, rollout_len, stack, 1, batch=32)
    state = frames.init(jnp.zeros((2, stack), jnp.int32), jnp.zeros((), jnp.int32))
    for _ in range(4):
        rollout = episodes.rollout(rollout_len)
        rollout = rollout._replace(truncated=jnp.ones_like(rollout.truncated))
        rollout = rollout._replace(terminated=jnp.zeros_like(rollout.terminated))
        state = frames.store(state, rollout)
    _, valid = frames.lookup(state, jnp.arange(capacity))
    kept = num_envs * rollout_len
    np.testing.assert_array_equal(valid, np.arange(capacity) >= capacity - kept)
    drawn = frames.sample(state, jax.random.key(0))
    np.testing.assert_array_equal(drawn.weights, np.asarray(valid)[drawn.indices].astype(float))


def test_one_frame_per_slot():
    # 84×84×4 uint8 at 1,000 slots of 4 envs: one frame per slot (and K rows of slack), not 8.
    _, frames = _replays(1000, 4, 8, 4, 1)
    state = jax.eval_shape(frames.init, jnp.zeros((84, 84, 4), jnp.uint8), jnp.zeros((), jnp.int32))
    assert state.frames.shape == (1000 // 4 + 4, 4, 84, 84)
    assert state.frames.dtype == jnp.uint8
    assert state.finals.shape == (32, 84, 84)  # max(1000 // 64, B · T)

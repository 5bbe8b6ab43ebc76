"""Frame replay: every observation frame stored once, stacks and next observations rebuilt.

A replay of transitions ``(s, a, r, γ, s')`` keeps each observation twice (as ``s`` and as the
previous transition's ``s'``), and with a stack of ``K`` frames each frame ``K`` times more:
2K copies of every frame, 8 for Atari's 84×84×4. This replay keeps one. It stores the newest
frame of each step's observation in a ring of *rows* (one row is one step of all ``B``
environments), beside each transition's action, n-step reward and discount, how many steps
``k`` ahead its next observation lies, and its *age*: the steps since its episode began, capped
at ``K − 1``. On sampling, channel ``c`` of the stack ``s_t`` (``j = K − 1 − c`` steps old) is the
frame of row::

    t − min(j, age_t)               (frames before the episode's first repeat the first)

which is how :class:`~jaxrl_fdg.envs.FrameStack` and EnvPool's Atari stack at a reset; and the
next observation ``s_{t+k}`` is the frame of row ``t + k − min(j, age_t + k)``.

Episode boundaries, exactly:

- *Terminated* within the ``k`` steps: the discount is 0, so no target reads the next
  observation; it is rebuilt as above (its newest frame is the next episode's first).
- *Truncated* at step ``e = t + k − 1``: the bootstrap reads the episode's final observation,
  whose newest frame no row holds (row ``e + 1`` holds the next episode's first). Those frames
  go to a side ring of ``max(capacity // 64, B · T)`` entries, room for every truncated episode
  in the buffer when episodes run at least 64 steps. A transition whose final frame has been
  overwritten since (episodes shorter than that, all truncated) is sampled with weight 0: it
  drops out of the loss rather than bootstrap from the wrong frame.
- The end of a rollout: the next observation of its last step is the next rollout's first
  (written as a tail row now, rewritten by the next rollout).

The frame ring holds ``capacity / B + K`` rows: the oldest transition's stack reaches ``K − 1``
rows behind it and the newest transition's next observation one row past the last written, so
no transition is ever unsampleable. The transition ring and its sampler are those of
:func:`~jaxrl_fdg.fragments.replay.make_uniform` or
:func:`~jaxrl_fdg.fragments.replay.make_prioritized`, unchanged, over slim records: for the same
key a frame replay samples the same slots as a transition replay and returns the same
transitions (``tests/fragments/replay/test_frames.py`` checks known answers against one).

``K = 1`` stores whole observations once (MinAtar's channels are not a stack of frames).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.replay.buffer import ReplayBuffer, ReplayState, Sample

# Truncated episodes' final frames: one side-ring entry per this many transitions of capacity.
FINAL_FRACTION = 64


class Record(NamedTuple):
    """What the transition ring keeps of a transition besides its frames."""

    action: jax.Array
    reward: jax.Array
    discount: jax.Array
    age: jax.Array  # uint8: steps since the episode began, capped at K − 1
    ahead: jax.Array  # k, the steps to the next observation (1 … n): uint8 for n < 256
    final: jax.Array  # int32: which truncated episode's final frame ends it, or −1


class FrameState(NamedTuple):
    """The transition ring (:class:`ReplayState` of :class:`Record`) and the frames.

    ``frames`` is ``[capacity / B + K, B, *frame]``, row ``r`` of the run at ``r mod`` its
    length; ``finals`` ``[F, *frame]`` holds truncated episodes' final frames, entry ``i`` at
    ``i mod F``, and ``final_ids`` which ``i`` each slot holds now. ``rows`` and
    ``finals_written`` count what was written; ``age`` is each environment's episode age at the
    next row.
    """

    records: ReplayState
    frames: jax.Array
    finals: jax.Array
    final_ids: jax.Array
    rows: jax.Array
    finals_written: jax.Array
    age: jax.Array

    @property
    def size(self) -> jax.Array:
        return self.records.size


class FrameReplay(NamedTuple):
    """Pure functions over :class:`FrameState`.

    Attributes:
      init: ``(example_observation, example_action) -> state`` (no batch axis).
      store: ``(state, trajectory [T, B]) -> state``: the rollout as n-step transitions.
      sample: ``(state, key, beta) -> Sample`` of
        :class:`~jaxrl_fdg.fragments.algorithms.offpolicy.Experience`-shaped ``transitions``
        (``observation, action, reward, discount, next_observation``).
      lookup: ``(state, indices) -> (transitions, valid)``: the transitions at slots
        ``indices`` and whether each could be rebuilt (False where its final frame was
        overwritten); ``sample`` weights those 0.
      update_priorities, can_sample: as :class:`ReplayBuffer`'s.
    """

    init: Callable[[jax.Array, jax.Array], FrameState]
    store: Callable[[FrameState, Any], FrameState]
    sample: Callable[..., Sample]
    lookup: Callable[[FrameState, jax.Array], tuple[Any, jax.Array]]
    update_priorities: Callable[..., FrameState]
    can_sample: Callable[[FrameState], jax.Array]


def final_capacity(capacity: int, batch: int) -> int:
    """Entries in the side ring of truncated episodes' final frames."""
    return max(capacity // FINAL_FRACTION, batch)


def make_frame_replay(
    records: ReplayBuffer,
    *,
    capacity: int,
    num_envs: int,
    rollout_len: int,
    stack: int,
    n_step: int,
    gamma: float,
    make_transitions: Callable[..., Any],
) -> FrameReplay:
    """A frame replay over the transition ring ``records`` (built for ``capacity`` slots).

    ``capacity`` must be a multiple of ``num_envs``; ``stack`` is ``K``, the frames stacked on
    the observation's trailing axis (1: whole observations). ``make_transitions(observation,
    action, reward, discount, next_observation)`` builds the sampled transitions
    (:class:`~jaxrl_fdg.fragments.algorithms.offpolicy.Experience`).
    """
    if capacity % num_envs:
        raise ValueError(f"capacity {capacity} is not a multiple of num_envs {num_envs}")
    if stack < 1 or stack > 255:
        raise ValueError(f"stack must be in [1, 255], got {stack}")
    if rollout_len > capacity // num_envs:
        raise ValueError(
            f"rollout_len {rollout_len} exceeds the {capacity // num_envs} rows of the buffer"
        )
    return _Frames(
        records,
        capacity=capacity,
        num_envs=num_envs,
        rollout_len=rollout_len,
        stack=stack,
        n_step=n_step,
        gamma=gamma,
        make_transitions=make_transitions,
    ).record()


class _Finals(NamedTuple):
    """A rollout's truncated episodes' final frames, written to the side ring."""

    finals: jax.Array  # the side ring, ``[F, *frame]``
    final_ids: jax.Array  # which final each entry holds, ``[F]``
    final: jax.Array  # each transition's final (``[T, B]``), or −1
    written: jax.Array  # how many finals the rollout wrote


class _Frames:
    """The pure functions of one frame replay, bound to its sizes (the record's entries)."""

    def __init__(
        self,
        records: ReplayBuffer,
        *,
        capacity: int,
        num_envs: int,
        rollout_len: int,
        stack: int,
        n_step: int,
        gamma: float,
        make_transitions: Callable[..., Any],
    ):
        self.records, self.make_transitions = records, make_transitions
        self.num_envs, self.stack, self.n_step, self.gamma = num_envs, stack, n_step, gamma
        self.rows_kept = capacity // num_envs
        self.frame_rows = self.rows_kept + stack
        self.ahead_dtype = jnp.uint8 if n_step < 256 else jnp.int32
        self.finals_kept = final_capacity(capacity, num_envs * rollout_len)

    def record(self) -> FrameReplay:
        return FrameReplay(
            self.init,
            self.store,
            self.sample,
            self.lookup,
            self.update_priorities,
            self.can_sample,
        )

    def newest(self, observation: jax.Array) -> jax.Array:
        """The newest frame of the stack (the whole observation for K = 1)."""
        return observation[..., -1] if self.stack > 1 else observation

    # -- writing ------------------------------------------------------------------------------

    def init(self, observation: jax.Array, action: jax.Array) -> FrameState:
        frame = self.newest(jnp.asarray(observation))
        scalar = jnp.zeros((), jnp.float32)
        zero = jnp.zeros((), jnp.int32)
        example = Record(
            jnp.asarray(action),
            scalar,
            scalar,
            jnp.zeros((), jnp.uint8),
            jnp.zeros((), self.ahead_dtype),
            zero,
        )
        return FrameState(
            self.records.init(example),
            jnp.zeros((self.frame_rows, self.num_envs, *frame.shape), frame.dtype),
            jnp.zeros((self.finals_kept, *frame.shape), frame.dtype),
            jnp.full((self.finals_kept,), -1, jnp.int32),
            zero,
            zero,
            jnp.zeros((self.num_envs,), jnp.int32),
        )

    def store(self, state: FrameState, trajectory: Any) -> FrameState:
        """The rollout ``trajectory`` ``[T, B]`` as n-step transitions: their records, the
        newest frame of each step (and of the tail row), truncated episodes' final frames."""
        steps = trajectory.reward.shape[0]
        reward, discount, last = losses.n_step_returns(
            trajectory.reward, trajectory.terminated, trajectory.truncated, self.gamma, self.n_step
        )
        next_age, age = self.ages(state.age, trajectory.terminated | trajectory.truncated)
        finals = self.store_finals(state, trajectory, last)
        # Rows rows … rows + T − 1 and the tail row rows + T (the next rollout rewrites it).
        written = jnp.concatenate(
            [self.newest(trajectory.observation), self.newest(trajectory.next_observation[-1:])]
        )
        rows = (state.rows + jnp.arange(steps + 1)) % self.frame_rows
        ahead = last - jnp.arange(steps, dtype=last.dtype)[:, None] + 1
        record = Record(
            trajectory.action,
            reward,
            discount,
            age.astype(jnp.uint8),
            ahead.astype(self.ahead_dtype),
            finals.final.astype(jnp.int32),
        )
        flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), record)
        return FrameState(
            self.records.add(state.records, flat),
            state.frames.at[rows].set(written.astype(state.frames.dtype)),
            finals.finals,
            finals.final_ids,
            state.rows + steps,
            state.finals_written + finals.written,
            next_age,
        )

    def ages(self, age: jax.Array, ended: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(each environment's age after the rollout, each step's age [T, B])`` from the ages
        ``age`` ``[B]`` before it: steps since the episode began, capped at ``K − 1``."""

        def age_step(age, end):
            return jnp.where(end, 0, jnp.minimum(age + 1, self.stack - 1)), age

        return jax.lax.scan(age_step, age, ended)

    def store_finals(self, state: FrameState, trajectory: Any, last: jax.Array) -> _Finals:
        """Truncated episodes' final frames into the side ring, numbered in the order (t, b)
        from ``finals_written``, and which of them ends each transition (its ``last`` step)."""
        cut = (trajectory.truncated & ~trajectory.terminated).reshape(-1)
        ids = state.finals_written + jnp.cumsum(cut, dtype=jnp.int32) - 1
        slots = jnp.where(cut, ids % self.finals_kept, self.finals_kept)  # out of range: dropped
        shape = state.finals.shape[1:]
        final_frames = self.newest(trajectory.next_observation).reshape(-1, *shape)
        finals = state.finals.at[slots].set(final_frames, mode="drop")
        final_ids = state.final_ids.at[slots].set(ids, mode="drop")
        ends_cut = jnp.take_along_axis(cut.reshape(last.shape), last, axis=0)
        final = jnp.where(ends_cut, jnp.take_along_axis(ids.reshape(last.shape), last, 0), -1)
        return _Finals(finals, final_ids, final, jnp.sum(cut, dtype=jnp.int32))

    def update_priorities(self, state, indices, writes, td_errors):
        return state._replace(
            records=self.records.update_priorities(state.records, indices, writes, td_errors)
        )

    # -- reading ------------------------------------------------------------------------------

    def can_sample(self, state: FrameState) -> jax.Array:
        return self.records.can_sample(state.records)

    def lookup(self, state: FrameState, indices: jax.Array) -> tuple[Any, jax.Array]:
        record = jax.tree.map(lambda x: x[indices], state.records.storage)
        return self.rebuild(state, indices, record)

    def sample(self, state: FrameState, key: jax.Array, beta: jax.Array | float = 1.0) -> Sample:
        drawn = self.records.sample(state.records, key, beta)
        transitions, valid = self.rebuild(state, drawn.indices, drawn.transitions)
        return drawn._replace(
            transitions=transitions, weights=drawn.weights * valid.astype(drawn.weights.dtype)
        )

    def rebuild(self, state: FrameState, indices: jax.Array, record: Record):
        """The transitions at the slots ``indices`` whose records are ``record``, and whether
        each next observation could be rebuilt (False: its final frame was overwritten)."""
        env = indices % self.num_envs
        # The run's row of each slot: the latest row ≡ slot row (mod rows_kept) written so far.
        latest = state.rows - 1
        row = latest - (latest - indices // self.num_envs) % self.rows_kept
        age = record.age.astype(jnp.int32)[:, None]
        ahead = record.ahead.astype(jnp.int32)[:, None]
        old = jnp.arange(self.stack - 1, -1, -1)  # j = K − 1 − c for channel c
        observation = self.stacks(state, row[:, None] - jnp.minimum(old, age), env)
        following = self.stacks(state, row[:, None] + ahead - jnp.minimum(old, age + ahead), env)
        following, kept = self.with_final(state, record.final, following)
        transitions = self.make_transitions(
            observation, record.action, record.reward, record.discount, following
        )
        return transitions, kept

    def stacks(self, state: FrameState, rows: jax.Array, env: jax.Array) -> jax.Array:
        """``[batch, *frame, K]`` (``[batch, *frame]`` for K = 1) from rows ``[batch, K]``."""
        frames = state.frames[rows % self.frame_rows, env[:, None]]
        return jnp.moveaxis(frames, 1, -1) if self.stack > 1 else frames[:, 0]

    def with_final(
        self, state: FrameState, final: jax.Array, following: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """The next observations ``following`` with the newest frame of those that end a
        truncated episode (``final >= 0``) read from the side ring, and whether each could be
        (False where the ring has overwritten that final frame since)."""
        has_final = final >= 0
        entry = final % self.finals_kept
        kept = state.final_ids[entry] == final
        frame = state.finals[entry]
        mask = has_final.reshape(-1, *(1,) * (frame.ndim - 1))
        if self.stack > 1:
            newest_frame = jnp.where(mask, frame, following[..., -1])
            following = following.at[..., -1].set(newest_frame)
        else:
            following = jnp.where(mask, frame, following)
        return following, ~has_final | kept

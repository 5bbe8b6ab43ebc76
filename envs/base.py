"""The environment API: pure ``reset``/``step`` over explicit state, auto-reset in one place.

An environment is a stateless object whose methods are pure functions of their arguments. Concrete
environments implement the single-episode dynamics (``reset_env``, ``step_env``); the base class
adds the time limit and the auto-reset, once, here, so no environment or wrapper repeats them.

Two entry points step: ``step`` for one environment and ``step_batch`` for a batch with a leading
axis, which takes one key for the whole batch; ``step`` is ``step_batch`` on a batch of one, so
both share one auto-reset. ``step_batch`` is the fast path (it draws random numbers only where
they are used); ``jax.vmap(step)`` over split keys gives the same dynamics at a higher cost.

Physics parameters are a pytree argument to every call, so a sweep over them is a ``jax.vmap``
over ``params`` rather than a recompile. Nothing here is jitted: the caller (a fusion policy)
decides where compilation boundaries go.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import jax.numpy as jnp

from jaxrl_fdg import branch, chunks, rng
from jaxrl_fdg.envs.spaces import Space

TEnvState = TypeVar("TEnvState")
TParams = TypeVar("TParams")


class TimeStep(NamedTuple):
    """What one ``reset`` or ``step`` returns besides the new state.

    Attributes:
      observation: the observation to act on next. After an episode ends this is already the
        first observation of the next episode (auto-reset).
      reward: reward of the transition just taken (0 after ``reset``).
      terminated: the transition reached a terminal state of the MDP; do not bootstrap.
      truncated: the episode was cut short (time limit); bootstrap from ``final_observation``.
      final_observation: the observation the transition actually reached. Equal to
        ``observation`` unless the episode ended; then it is the last observation of the old
        episode, which value bootstrapping on truncation needs.
      info: what the environment reports besides (empty unless it declares something):
        its :meth:`Environment.info_env` of the state reached (before any reset), and, for an
        environment with :meth:`Environment.action_mask`, ``action_mask`` (the legal actions
        at ``observation``) and ``next_action_mask`` (at ``final_observation``).
    """

    observation: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_observation: jax.Array
    info: dict[str, jax.Array] = {}  # noqa: RUF012 (never mutated; a NamedTuple default)


ACTION_MASK = "action_mask"
"""The :attr:`TimeStep.info` key (and the env fragment's published edge) of the legal actions at
the observation to act on: bool ``[n]`` over a Discrete space's actions."""
NEXT_ACTION_MASK = "next_action_mask"
"""The :attr:`TimeStep.info` key (and env fragment output) of the legal actions at the observation
a transition reached, before any reset: what a Q-target's max over next actions ranges over."""


class EpisodeState(NamedTuple, Generic[TEnvState]):
    """The environment's own state plus the step counter the time limit reads."""

    env: TEnvState
    time: jax.Array


class Environment(abc.ABC, Generic[TEnvState, TParams]):
    """Base class. Subclasses write ``reset_env``/``step_env``; users call ``reset``/``step``.

    ``params`` must carry ``max_steps`` (episode length at which ``truncated`` is raised).
    """

    name: str = "environment"
    on_host: bool = False
    """False: a JAX environment, stepped on the device (``HostSimulator.on_host`` is True)."""
    auto_reset_copies: bool = False
    """True where :meth:`auto_reset_env` only copies state the environment already holds (no
    physics, no random numbers), as Brax's ``auto_reset="first_state"`` does: the auto-reset then
    restarts every environment and keeps the restart where an episode ended, with no branch and
    no gathering of the finished ones."""

    # -- what subclasses provide -------------------------------------------------------------

    @property
    @abc.abstractmethod
    def default_params(self) -> TParams:
        """The environment's default parameters (a pytree with a ``max_steps`` field)."""

    @abc.abstractmethod
    def reset_env(self, key: jax.Array, params: TParams) -> tuple[TEnvState, jax.Array]:
        """Start an episode: ``(state, observation)``."""

    @abc.abstractmethod
    def step_env(
        self, key: jax.Array, state: TEnvState, action: jax.Array, params: TParams
    ) -> tuple[TEnvState, jax.Array, jax.Array, jax.Array]:
        """One transition, no time limit or reset: ``(state, observation, reward, terminated)``."""

    def auto_reset_env(
        self, key: jax.Array, state: TEnvState, params: TParams
    ) -> tuple[TEnvState, jax.Array]:
        """Start the episode that follows ``state``, which just ended; :meth:`step` calls this.

        Defaults to :meth:`reset_env`. A wrapper whose data must outlive an episode (running
        observation statistics, the return of the episode just finished) overrides it, since
        ``reset_env`` cannot see the state it replaces.
        """
        del state
        return self.reset_env(key, params)

    def action_mask(self, state: TEnvState, params: TParams) -> jax.Array | None:
        """The legal actions in ``state``, bool ``[n]`` for a Discrete action space of ``n``
        actions, or None (the default): every action is always legal.

        An environment that overrides this gets ``action_mask``/``next_action_mask`` in every
        :attr:`TimeStep.info`, which the env fragment publishes and every discrete policy
        respects (sampling, greedy and random actions, entropies, Q-targets). A state must
        leave at least one action legal."""
        del state, params
        return None

    def info_env(self, state: TEnvState, params: TParams) -> dict[str, jax.Array]:
        """What the environment reports of the state a transition reached, besides the
        observation: a dict of arrays of fixed shapes (Craftax's achievements, a success flag),
        which reaches :attr:`TimeStep.info`, the trajectory's ``info`` and the run's metrics
        (as the mean over the environments that ended an episode on the step). Empty by
        default. Computed from the state before any reset, so a flag that ends an episode is
        seen on the step that ends it."""
        del state, params
        return {}

    render_on_host: bool = False
    """True where :meth:`render` draws with numpy on the host (a suite's own renderer that does
    not trace, XLand-MiniGrid's): it then gets one environment's state as numpy arrays, and a
    video draws its frames one by one after the episodes are played."""

    def render(self, state: TEnvState, params: TParams) -> jax.Array:
        """An image of ``state``: ``uint8 [H, W, 3]``, a pure function of the state (it jits and
        vmaps: a video's frames are one ``vmap`` over an episode's states), unless
        :attr:`render_on_host`. Environments that can be seen override it; the default raises
        ``NotImplementedError``."""
        del state, params
        raise NotImplementedError(f"{self.name} does not render")

    @property
    def can_render(self) -> bool:
        """Whether :meth:`render` is overridden (a wrapper: whether the wrapped one's is)."""
        return type(self).render is not Environment.render

    @property
    def has_action_mask(self) -> bool:
        """Whether :meth:`action_mask` is overridden (a wrapper: whether the wrapped one's is)."""
        return type(self).action_mask is not Environment.action_mask

    @property
    def has_info(self) -> bool:
        """Whether :meth:`info_env` is overridden (a wrapper: whether the wrapped one's is)."""
        return type(self).info_env is not Environment.info_env

    @abc.abstractmethod
    def observation_space(self, params: TParams) -> Space: ...

    @abc.abstractmethod
    def action_space(self, params: TParams) -> Space: ...

    # -- the public, pure API ----------------------------------------------------------------

    def reset(
        self, key: jax.Array, params: TParams | None = None
    ) -> tuple[EpisodeState[TEnvState], TimeStep]:
        params = self.default_params if params is None else params
        env_state, obs = self.reset_env(key, params)
        state = EpisodeState(env_state, jnp.zeros((), jnp.int32))
        false = jnp.zeros((), jnp.bool_)
        info = {}
        if self.has_info:
            info = jax.tree.map(jnp.zeros_like, self.info_env(env_state, params))
        if self.has_action_mask:
            mask = self.action_mask(env_state, params)
            info.update({ACTION_MASK: mask, NEXT_ACTION_MASK: mask})
        return state, TimeStep(obs, jnp.zeros((), jnp.float32), false, false, obs, info)

    def step(
        self,
        key: jax.Array,
        state: EpisodeState[TEnvState],
        action: jax.Array,
        params: TParams | None = None,
    ) -> tuple[EpisodeState[TEnvState], TimeStep]:
        """Take one transition; when the episode ends, start the next one in the same call.

        The single-environment view of :meth:`step_batch`: a batch of one, so the time limit and
        the auto-reset exist in one implementation only.
        """
        params = self.default_params if params is None else params
        batch = jax.tree.map(lambda x: jnp.expand_dims(x, 0), (state, jnp.asarray(action)))
        next_state, timestep = self.step_batch(key, *batch, params)
        return jax.tree.map(lambda x: x[0], (next_state, timestep))

    def reset_batch(
        self, key: jax.Array, num_envs: int, params: TParams | None = None
    ) -> tuple[EpisodeState[TEnvState], TimeStep]:
        """``num_envs`` independent episodes: :meth:`reset` over ``num_envs`` keys split from
        ``key``. Every leaf of the state and the time step gains a leading axis of that size."""
        params = self.default_params if params is None else params
        return jax.vmap(self.reset, in_axes=(0, None))(rng.split(key, num_envs), params)

    def step_batch(
        self,
        key: jax.Array,
        state: EpisodeState[TEnvState],
        action: jax.Array,
        params: TParams | None = None,
    ) -> tuple[EpisodeState[TEnvState], TimeStep]:
        """One transition of each of a batch of environments (a leading axis on ``state`` and
        ``action``), drawing randomness from a single ``key`` for the whole batch.

        Each environment ends and restarts its own episode independently, exactly as with
        ``jax.vmap(step)`` over split keys; only which random numbers each one receives differs
        (see :meth:`_auto_reset` for the keys). This is the fast path, which the env fragment
        runs: on CPU, hashing a key per environment per step and drawing a fresh initial state
        for every environment on every step (only to discard it where no episode ended) cost
        several times the classic-control dynamics themselves. Here per-environment step keys
        are derived only for dynamics that use them, and initial states are drawn only for the
        episodes that ended.
        """
        params = self.default_params if params is None else params
        num_envs = jax.tree.leaves(state)[0].shape[0]
        # ``key`` splits into a step key and a reset key. Each half is derived where it is used,
        # so that dynamics which ignore their key, and steps on which no episode ends, draw no
        # random numbers at all (XLA drops the unused derivations as dead code).
        env_state, obs, reward, terminated = jax.vmap(self.step_env, in_axes=(0, 0, 0, None))(
            _split_keys(rng.split(key)[0], num_envs), state.env, action, params
        )
        time = state.time + 1
        truncated = time >= params.max_steps
        done = jnp.logical_or(terminated, truncated)
        next_env, next_obs = self._auto_reset(key, done, env_state, obs, params)
        next_state = EpisodeState(next_env, jnp.where(done, 0, time).astype(jnp.int32))
        timestep = TimeStep(
            next_obs,
            jnp.asarray(reward, jnp.float32),
            jnp.asarray(terminated, jnp.bool_),
            jnp.asarray(truncated, jnp.bool_),
            obs,
            self._step_info(env_state, next_env, params),
        )
        return next_state, timestep

    def _step_info(self, reached: TEnvState, next_env: TEnvState, params: TParams) -> dict:
        """:attr:`TimeStep.info` of a batch: the info of the states reached, and the masks of
        those states and of the ones to act on (after the auto-reset)."""
        info = {}
        if self.has_info:
            info = jax.vmap(self.info_env, in_axes=(0, None))(reached, params)
        if self.has_action_mask:
            mask = jax.vmap(self.action_mask, in_axes=(0, None))
            info[ACTION_MASK] = mask(next_env, params)
            info[NEXT_ACTION_MASK] = mask(reached, params)
        return info

    # -- the auto-reset, the one place that starts new episodes during a step ------------------

    def _auto_reset(
        self, key: jax.Array, done: jax.Array, env_state: TEnvState, obs: jax.Array, params: TParams
    ) -> tuple[TEnvState, jax.Array]:
        """Replace the state and observation of every environment whose episode ended (``done``,
        shape ``[B]``) by those of a fresh episode from :meth:`auto_reset_env`.

        Keys: the k-th environment (in batch order) whose episode ends in this step restarts from
        :func:`_reset_keys` ``(key, ·)[k]``, ``split(key, ·)[k + 1]``: a batch of one (and
        :meth:`step`) resets from ``split(key)[1]``, as gymnax does, and the step half is
        ``split(key)[0]``. Threefry's split gives the same first keys whatever the number split,
        so this holds on every path below and their results agree bit for bit.

        Only as many resets as are needed are computed. With few environments (below 64) a branch
        resets either none (no episode ended: no random numbers drawn at all) or every environment,
        keeping the results where ``done``. With more, the finished environments are gathered into
        :func:`_reset_slots` slots, reset there and read back, one chunk of slots after another
        until every finished one is done (none when no episode ended; one chunk in the common case;
        several when many end at once, as environments truncated in lock-step do). Either way the
        program holds one batched reset, not one per path: for MJX environments, whose reset is a
        forward pass of the physics, a second copy nearly doubled the step's compile time (a scan of
        Brax's inverted_pendulum at 256 environments here: 73 s with it, 43 s with the loop; see
        docs/decisions.md). In lanes (a vmap of this whole call) the branch is taken where an
        episode ended in any lane (:func:`jaxrl_fdg.branch.cond`), and the loop runs as many chunks
        as the lane that needs most, which is still correct. An
        environment whose restart is a copy (:attr:`auto_reset_copies`) restarts every
        environment and selects, which costs less than either branch. Executed
        eagerly (op by op, outside ``jit``), every environment is reset, so that the operations run
        are the same on every step.
        """
        slots = _reset_slots(done.shape[0])
        reset = jax.vmap(self.auto_reset_env, in_axes=(0, 0, None))
        current = (env_state, obs)

        def keep(key: jax.Array) -> tuple[TEnvState, jax.Array]:
            del key
            return current

        def every(key: jax.Array) -> tuple[TEnvState, jax.Array]:
            return _reset_every_env(reset, key, done, current, params)

        def finished(key: jax.Array) -> tuple[TEnvState, jax.Array]:
            return _reset_finished_envs(reset, key, done, slots, current, params)

        if self.auto_reset_copies or not isinstance(done, jax.core.Tracer):
            return every(key)
        count = jnp.sum(done, dtype=jnp.int32)
        return branch.cond(count > 0, finished if slots else every, keep, key)


# A batched ``auto_reset_env``: (keys [B], finished states [B], params) -> (states, observations).
_Reset = Callable[[jax.Array, Any, Any], tuple[Any, jax.Array]]


def _reset_every_env(
    reset: _Reset, key: jax.Array, done: jax.Array, current: tuple[Any, jax.Array], params: Any
) -> tuple[Any, jax.Array]:
    """Every environment reset, the k-th finished one from the k-th reset key; the resets are
    kept where ``done`` and ``current`` (state, observation) elsewhere."""
    env_state, _ = current
    num_envs = done.shape[0]
    keys = _reset_keys(key, num_envs)
    if num_envs > 1:
        keys = keys[jnp.maximum(chunks.rank_of_selected(done), 0)]
    reset_state, reset_obs = reset(keys, env_state, params)
    return chunks.select(done, (reset_state, reset_obs), current)


def _reset_finished_envs(
    reset: _Reset,
    key: jax.Array,
    done: jax.Array,
    slots: int,
    current: tuple[Any, jax.Array],
    params: Any,
) -> tuple[Any, jax.Array]:
    """The finished environments gathered into ``slots`` slots at a time, reset there and read
    back; the others keep ``current``.

    The k-th finished environment is reset in slot ``k mod slots`` of chunk ``k // slots``, from
    the k-th reset key, and reads its slot back. Chunks run in a loop until every finished
    environment is reset. Where the reset ignores the finished state (no stateful wrapper), XLA
    drops the gather into the slots as dead code.
    """
    env_state, _ = current
    num_envs = done.shape[0]
    # Threefry's split gives the same first keys whatever the number split: key k is the same
    # whether split into ``slots``, ``num_envs`` or ``(num_envs / slots) * slots`` keys.
    keys = _reset_keys(key, -(-num_envs // slots) * slots)

    def reset_chunk(c: jax.Array, index: jax.Array) -> tuple[Any, jax.Array]:
        finished = jax.tree.map(lambda x: x[index], env_state)
        chunk_keys = jax.lax.dynamic_slice_in_dim(keys, c * slots, slots)
        return reset(chunk_keys, finished, params)

    return chunks.on_selected(done, slots, reset_chunk, current)


def _reset_slots(num_envs: int) -> int:
    """How many finished episodes one chunk of the gathered reset holds (0: no gathering).

    One sixteenth of the batch, as many as end on an average step when episodes last 16 steps;
    a step that ends more runs another chunk (environments truncated in lock-step take several).
    The slots are reset on every step that ends an episode, and under a ``vmap`` over seeds (where
    the branch becomes a select) on every step: their number, not the episodes that ended, is
    what a reset costs, and for an environment whose reset is expensive (Craftax generates a
    world) it is most of the step. Sixteen is Craftax_Baselines' optimistic reset ratio, whose
    resets are as many (see docs/decisions.md). Below 64 environments the gather saves too little
    to pay for itself.
    """
    if num_envs < 64:
        return 0
    return -(-num_envs // 16)


def _reset_keys(key: jax.Array, num: int) -> jax.Array:
    """The step's ``num`` reset keys, ``split(key, num + 1)[1:]``: one hash of ``num + 1``
    counters, where splitting ``split(key)[1]`` again would take two hashes in a row (each a
    loop of kernels XLA:CPU compiles, in a branch that runs only on the steps that end an
    episode). The first is ``split(key)[1]``, the key :meth:`Environment.step` resets from."""
    return rng.split(key, num + 1)[1:]


def _split_keys(key: jax.Array, num: int) -> jax.Array:
    """``num`` keys from ``key``; a batch of one uses ``key`` itself rather than hashing again."""
    return key[None] if num == 1 else rng.split(key, num)

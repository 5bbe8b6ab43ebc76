"""The recurrent team Q-function of VDN and QMIX (:mod:`.qmix`): the agents' shared recurrent
Q-network and the team's mixer, the sequences a rollout gives the replay buffer, and the mixed TD
loss on a batch of them, with its double-Q, target-network and Q(λ) targets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.core.names import ACTION_MASK, EPISODE_START, MEMORY, NEXT_ACTION_MASK
from jaxrl_fdg.core.types import Transition
from jaxrl_fdg.fragments import exploration, losses
from jaxrl_fdg.fragments.algorithms.value_decomposition import TeamMixer
from jaxrl_fdg.fragments.recurrent import RecurrentQNetwork, reset_memory
from jaxrl_fdg.fragments.torsos import observation_ndim, observation_part, view

if TYPE_CHECKING:
    from jaxrl_fdg.fragments.algorithms.qmix import RecurrentTeamQConfig


class Sequence(NamedTuple):
    """One game's stretch of ``T`` steps, as the replay buffer stores it (a batch of them has a
    leading axis ``M``): the agents' ``T + 1`` observations ``[T + 1, N, ...]`` (the last the one
    the last step reached) and the mixer's states ``[T + 1, S]`` (empty for VDN), the legal
    actions there ``[T + 1, N, A]`` (None without masks), where episodes start ``[T + 1]``
    (never at the last), the actions ``[T, N]``, the team's rewards and end flags ``[T]``, and
    the agents' memory before the first step ``[N, W]``."""

    observation: Any
    state: Any
    action_mask: Any
    start: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    memory: jax.Array


class RecurrentTeamQ(TeamMixer):
    """The agents' shared recurrent Q-network beside the team's mixer (:class:`TeamMixer`); the
    sequences a rollout gives the replay buffer, and the loss on a batch of them."""

    def __init__(self, ctx: AlgorithmContext[RecurrentTeamQConfig]):
        super().__init__(ctx, ctx.hparams.mixer_init_scale)
        hp = self.hp
        seen = observation_part(ctx.observation_space, hp.agent_observation)
        self.net = RecurrentQNetwork(
            num_actions=ctx.action_space.n,
            hidden_sizes=tuple(hp.hidden_sizes),
            activation=hp.activation,
            obs_ndim=observation_ndim(seen),
            torso=hp.torso,
            memory=hp.memory,
            memory_size=hp.memory_size,
        )
        self.memory_width = hp.memory_size * (2 if hp.memory == "lstm" else 1)

    def init(self, key: jax.Array) -> Any:
        k_agents, k_mixer = jax.random.split(key)
        agent_obs = view(self.example, self.hp.agent_observation)
        agents = self.net.init(k_agents, self.initial_memory(1)[0], agent_obs)
        return self.variables(agents["params"], k_mixer)

    def initial_memory(self, n: int) -> jax.Array:
        """The memory of ``n`` agents at an episode's start: zeros ``[n, W]``."""
        return jnp.zeros((n, self.memory_width), jnp.float32)

    def step(self, variables: Any, memory: jax.Array, observation: Any):
        """One step of every row (agent): ``(memory after it, Q [R, A])``."""
        agents = {"params": variables["params"]["agents"]}
        return self.net.apply(agents, memory, view(observation, self.hp.agent_observation))

    def unroll(self, variables: Any, memory: jax.Array, observation: Any, start: jax.Array):
        """``Q`` ``[T, R, A]`` of time-major sequences of the agents' observations ``[T, R, ...]``
        (their part of the observation, as :class:`Sequence` stores it) from ``memory`` ``[R,
        W]``, the memory reset where ``start`` ``[T, R]`` holds (as the actor reset it); the torso
        and head on every step at once, the cell scanned."""
        agents = {"params": variables["params"]["agents"]}
        features = self.net.apply(agents, observation, method="encode")

        def recur(m, inputs):
            x, first = inputs
            return self.net.apply(agents, reset_memory(m, first), x, method="recur")

        _, y = jax.lax.scan(recur, memory, (features, start))
        return self.net.apply(agents, y, method="decode")

    def sequences(self, traj: Transition, masked: bool) -> Sequence:
        """The rollout's ``B`` sequences, one per game, game-major ``[B, ...]``."""
        hp, games_of = self.hp, self.games_of

        def with_last(steps: Any, last: Any) -> Any:  # [T, ...] and the [...] after them
            return jax.tree.map(lambda s, x: jnp.concatenate([s, x[None]]), steps, last)

        def per_game(x: jax.Array) -> jax.Array:  # [T, B·N, ...] -> [B, T, N, ...]
            return jnp.swapaxes(games_of(x), 0, 1)

        agents = view(traj.observation, hp.agent_observation)
        next_agents = view(traj.next_observation, hp.agent_observation)
        observation = jax.tree.map(
            per_game, with_last(agents, jax.tree.map(lambda x: x[-1], next_agents))
        )
        state: Any = ()
        if self.qmix:  # the world state of each game: its first agent's
            world = view(traj.observation, hp.mixer_state)
            last = view(traj.next_observation, hp.mixer_state)[-1]
            state = per_game(with_last(world, last))[:, :, 0]
        mask = None
        if masked:
            mask = per_game(with_last(traj.info[ACTION_MASK], traj.info[NEXT_ACTION_MASK][-1]))
        start = traj.extras[EPISODE_START]
        start = per_game(with_last(start, jnp.zeros_like(start[-1])))[:, :, 0]

        def team(x: jax.Array) -> jax.Array:  # the team's flags, the same on every agent
            return jnp.swapaxes(games_of(x)[:, :, 0], 0, 1)

        memory = traj.extras[MEMORY][0]
        return Sequence(
            observation=observation,
            state=state,
            action_mask=mask,
            start=start,
            action=per_game(traj.action),
            reward=jnp.swapaxes(games_of(traj.reward).sum(axis=-1), 0, 1),
            terminated=team(traj.terminated),
            truncated=team(traj.truncated),
            memory=memory.reshape(-1, self.agents, memory.shape[-1]),
        )

    def example_sequence(self, steps: int, masked: bool, num_actions: int) -> Sequence:
        """A :class:`Sequence` of zeros of ``steps`` steps: the replay buffer's layout."""
        n, t1 = self.agents, steps + 1

        def zeros(example: Any, *lead: int) -> Any:
            return jax.tree.map(lambda x: jnp.zeros((*lead, *jnp.shape(x)), x.dtype), example)

        state = zeros(view(self.example, self.hp.mixer_state), t1) if self.qmix else ()
        flags = jnp.zeros((steps,), bool)
        return Sequence(
            observation=zeros(view(self.example, self.hp.agent_observation), t1, n),
            state=state,
            action_mask=jnp.zeros((t1, n, num_actions), bool) if masked else None,
            start=jnp.zeros((t1,), bool),
            action=jnp.zeros((steps, n), jnp.int32),
            reward=jnp.zeros((steps,), jnp.float32),
            terminated=flags,
            truncated=flags,
            memory=self.initial_memory(n),
        )

    def loss(self, variables: Any, target_variables: Any, batch: Sequence):
        """The mixed TD loss on ``M`` sequences ``[M, ...]`` and its metrics."""
        hp = self.hp
        m, t1 = batch.start.shape
        n = self.agents

        def rows(x: jax.Array) -> jax.Array:  # [M, T+1, N, ...] -> [T+1, M·N, ...]
            return jnp.swapaxes(x, 0, 1).reshape(t1, m * n, *x.shape[3:])

        def games(x: jax.Array) -> jax.Array:  # [T+1, M·N, ...] -> [T+1, M, N, ...]
            return x.reshape(t1, m, n, *x.shape[2:])

        observation = jax.tree.map(rows, batch.observation)
        start = jnp.repeat(jnp.swapaxes(batch.start, 0, 1), n, axis=1)  # [T+1, M·N]
        memory = batch.memory.reshape(m * n, -1)
        mask = None if batch.action_mask is None else rows(batch.action_mask)
        state = () if not self.qmix else jnp.swapaxes(batch.state, 0, 1)  # [T+1, M, S]

        q = games(self.unroll(variables, memory, observation, start))  # [T+1, M, N, A]
        q_target = games(self.unroll(target_variables, memory, observation, start))
        q_target = jax.lax.stop_gradient(q_target)
        legal = None if mask is None else games(mask)[1:]
        chooser = jax.lax.stop_gradient(q[1:]) if hp.double_q else q_target[1:]
        best = jnp.argmax(exploration.mask_q_values(chooser, legal), axis=-1)
        q_next = jnp.take_along_axis(q_target[1:], best[..., None], axis=-1)[..., 0]
        next_state = () if not self.qmix else state[1:]
        team_next = self.mix(target_variables, q_next, next_state)  # [T, M]

        reward = hp.reward_scale * jnp.swapaxes(batch.reward, 0, 1)
        terminated = jnp.swapaxes(batch.terminated, 0, 1)
        truncated = jnp.swapaxes(batch.truncated, 0, 1)
        target = losses.q_lambda_returns(
            reward, team_next, terminated, truncated, hp.gamma, hp.q_lambda
        )
        next_start = jnp.swapaxes(batch.start, 0, 1)[1:]
        weight = sound_targets(truncated, terminated, next_start, hp.q_lambda)

        action = jnp.swapaxes(batch.action, 0, 1)  # [T, M, N]
        q_taken = jnp.take_along_axis(q[:-1], action[..., None], axis=-1)[..., 0]
        team = self.mix(variables, q_taken, () if not self.qmix else state[:-1])
        error = team - jax.lax.stop_gradient(target)
        count = jnp.maximum(weight.sum(), 1.0)
        value = 0.5 * jnp.sum(weight * error**2) / count
        metrics = {
            "loss": value,
            "q_mean": q_taken.mean(),
            "team_q_mean": team.mean(),
            "target_mean": jnp.sum(weight * target) / count,
        }
        return value, metrics


def sound_targets(
    truncated: jax.Array, terminated: jax.Array, next_start: jax.Array, q_lambda: float
) -> jax.Array:
    """The weights ``[T, M]`` of the steps whose targets are sound: 0 at a step truncated
    before the sequence's end (the observation after it is the next episode's first,
    ``next_start``), and with ``q_lambda`` > 0 at the steps of its episode before it too (their
    λ-returns lean on its target)."""
    broken = jnp.logical_and(truncated, next_start)
    if q_lambda == 0.0:
        return 1.0 - broken.astype(jnp.float32)
    done = jnp.logical_or(truncated, terminated)

    def backward(bad_next, xs):
        b, d = xs
        bad = jnp.logical_or(b, jnp.logical_and(jnp.logical_not(d), bad_next))
        return bad, bad

    _, bad = jax.lax.scan(backward, jnp.zeros_like(broken[0]), (broken, done), reverse=True)
    return 1.0 - bad.astype(jnp.float32)

"""QMIX and VDN as published: recurrent agents, replay of sequences, a target network.

Each agent acts ε-greedily (legal actions only) on the Q-values of one recurrent network that
every agent shares (a torso, a GRU or LSTM cell, a linear head), each agent with its own memory
(its rows of the folded batch, :mod:`~jaxrl_fdg.envs.multi_agent`). The team learns a joint
value of the actions its agents took: their sum for VDN (Sunehag et al. 2018,
arXiv:1706.05296), a monotonic mix by hypernetworks on the world state for QMIX (Rashid et al.
2018, arXiv:1803.11485; the mixer is :class:`~.value_decomposition.QMixer`).

Experience is replayed as sequences. Each rollout of ``T`` steps from ``B`` games adds ``B``
sequences to a uniform replay buffer of ``buffer_size`` sequences, each with the memory its
agents acted from at its first step (the stored state of R2D2, Kapturowski et al. 2019, in
place of PyMARL's whole episodes: a game here runs on across rollouts). After ``learning_starts``
game steps, every rollout is followed by ``num_updates`` gradient steps, each on ``batch_size``
sampled sequences re-run from their stored memory (reset where episodes start, as the actor
did). With the target network's parameters ``θ⁻``, copied from the online ``θ`` every
``target_update_period`` gradient steps (Polyak with ``tau`` < 1),

    a*_i   = argmax_a Q_i(o'_{i,t}, a; θ)                          (double Q; legal actions)
    q'_t   = f_{s'_t}(Q_i(o'_{i,t}, a*_i; θ⁻) for each agent i; θ⁻)
    G_t    = c·R_t + γ (1 − terminated_t) [(1 − λ) q'_t + λ G_{t+1}]
    L      = ½ E[(f_{s_t}(Q_i(o_{i,t}, a_{i,t}; θ); θ) − G_t)²]

with ``R_t`` the team's reward (the sum of its agents'), ``c`` = ``reward_scale`` and ``λ`` =
``q_lambda`` (0: the one-step targets of the papers; PyMARL2, Hu et al. 2021, takes λ > 0).
A sequence holds ``T + 1`` observations, its steps' and the one its last step reached, so
every target is the network's unrolled output one step on. Where an episode is *truncated*
inside a sequence the observation that follows is the next episode's first, not the one the
truncated step reached, so that step's target (and, with λ > 0, those of the steps of its
episode before it) is left out of the loss. JaxMARL's games end by termination only (their
time limits are terminations, as in JaxMARL's baselines), so this happens only under a time
limit of one's own.

The defaults are PyMARL's QMIX on SMAC (64-unit GRU agents, mixing layer 32, hypernetworks 64,
γ 0.99, batches of 32 sequences, gradient norm clipped at 10, ε from 1 to 0.05 over the first
50k game steps of a 1M-step run) with Adam, on ``jaxmarl/HeuristicEnemySMAX`` map ``3m``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.core.fragment import Role, fragment
from jaxrl_fdg.core.names import (
    ACTION,
    ACTION_MASK,
    EPISODE_START,
    EPISODE_STEP,
    MEMORY,
    METRICS,
    NEXT_ACTION_MASK,
    OBSERVATION,
    PARAMS,
    TRAJECTORY,
)
from jaxrl_fdg.core.types import Transition
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments import exploration, losses
from jaxrl_fdg.fragments.algorithms import actor_critic as ac
from jaxrl_fdg.fragments.algorithms import offpolicy
from jaxrl_fdg.fragments.algorithms.value_decomposition import MIXERS, QMixer, check_team
from jaxrl_fdg.fragments.networks import ACTIVATIONS, TORSO_HELP, TORSOS, orthogonal
from jaxrl_fdg.fragments.recurrent import RecurrentCore, reset_memory
from jaxrl_fdg.fragments.replay import buffer as replay
from jaxrl_fdg.fragments.torsos import observation_ndim, observation_part, view

MEMORY_CELLS = ("gru", "lstm")


@dataclasses.dataclass(frozen=True)
class RecurrentTeamQConfig:
    """Hyperparameters of VDN and QMIX with recurrent agents and sequence replay (each a
    ``--flag``); the defaults are PyMARL's QMIX on SMAC, with Adam."""

    lr: float = hparam(5e-4, "learning rate of Adam")
    gamma: float = hparam(0.99, "discount factor γ")
    q_lambda: float = hparam(0.0, "λ of the Q(λ) targets along a sequence: 0 one-step")
    reward_scale: float = hparam(1.0, "rewards are multiplied by this in the targets")
    double_q: bool = hparam(True, "double Q-learning: the online network picks the next actions")
    epsilon_start: float = hparam(1.0, "ε-greedy's ε at the start of the run")
    epsilon_end: float = hparam(0.05, "ε-greedy's ε at the end of its linear decay")
    epsilon_fraction: float = hparam(0.05, "fraction of the run over which ε decays")
    max_grad_norm: float = hparam(10.0, "clip gradients to this global norm")
    anneal_lr: bool = hparam(False, "decay the learning rate linearly to 0 over the run")
    hidden_sizes: tuple[int, ...] = hparam((64,), "layer sizes of the agents' torso MLP")
    activation: str = hparam("relu", f"hidden-layer activation: {', '.join(ACTIVATIONS)}")
    torso: str = hparam("mlp", TORSO_HELP)
    memory: str = hparam("gru", "the agents' recurrent cell: gru or lstm")
    memory_size: int = hparam(64, "units of the agents' recurrent cell")
    buffer_size: int = hparam(1_000, "replay capacity in sequences (rollout_len steps of a game)")
    batch_size: int = hparam(32, "sequences per gradient step")
    learning_starts: int = hparam(10_000, "game steps collected before the first gradient step")
    num_updates: int = hparam(4, "gradient steps after each rollout")
    target_update_period: int = hparam(200, "gradient steps between target network updates")
    tau: float = hparam(1.0, "each target update's Polyak rate τ; 1 copies the network")
    mixer: str = hparam("vdn", "how the agents' Q-values make the team's: vdn (their sum) or qmix")
    agent_observation: str = hparam("", "key of a dict observation the agents read (empty: all)")
    mixer_state: str = hparam("world_state", "key of the dict observation qmix's mixer reads")
    mixing_size: int = hparam(32, "units of qmix's mixing layer")
    hypernet_size: int = hparam(64, "hidden units of qmix's hypernetworks")
    mixer_init_scale: float = hparam(0.001, "orthogonal gain of qmix's layers at initialisation")

    def __post_init__(self) -> None:
        validate.in_range("lr", self.lr, 0.0, 1.0, low_open=True)
        validate.in_range("gamma", self.gamma, 0.0, 1.0)
        validate.in_range("q_lambda", self.q_lambda, 0.0, 1.0)
        validate.positive("reward_scale", self.reward_scale)
        for name in ("epsilon_start", "epsilon_end", "epsilon_fraction"):
            validate.in_range(name, getattr(self, name), 0.0, 1.0)
        validate.non_negative("max_grad_norm", self.max_grad_norm)
        validate.layer_sizes("hidden_sizes", self.hidden_sizes)
        validate.choice("activation", self.activation, ACTIVATIONS)
        validate.choice("torso", self.torso, TORSOS)
        validate.choice("memory", self.memory, MEMORY_CELLS)
        for name in ("memory_size", "buffer_size", "batch_size", "num_updates"):
            validate.positive_int(name, getattr(self, name))
        validate.positive_int("target_update_period", self.target_update_period)
        validate.non_negative("learning_starts", self.learning_starts)
        validate.in_range("tau", self.tau, 0.0, 1.0, low_open=True)
        validate.choice("mixer", self.mixer, MIXERS)
        validate.positive_int("mixing_size", self.mixing_size)
        validate.positive_int("hypernet_size", self.hypernet_size)
        validate.positive("mixer_init_scale", self.mixer_init_scale)
        if self.batch_size > self.buffer_size:
            raise ConfigError(
                f"batch_size = {self.batch_size} exceeds buffer_size = {self.buffer_size} "
                "(both count sequences)"
            )


class RecurrentQNetwork(nn.Module):
    """An agent's Q-network with memory: :class:`~jaxrl_fdg.fragments.recurrent.RecurrentCore`
    (torso, then the cell) and a linear head. One step is ``(memory [R, W], obs [R, ...]) ->
    (memory, Q [R, A])``; ``encode``, ``recur`` and ``decode`` are its three parts, so that a
    sequence has its torso and head applied to every step at once and only its cell scanned."""

    num_actions: int
    hidden_sizes: tuple[int, ...]
    activation: str
    obs_ndim: Any
    torso: str
    memory: str
    memory_size: int

    def setup(self) -> None:
        self.core = RecurrentCore(
            hidden_sizes=self.hidden_sizes,
            activation=self.activation,
            obs_ndim=self.obs_ndim,
            torso=self.torso,
            memory=self.memory,
            memory_size=self.memory_size,
        )
        self.head = nn.Dense(self.num_actions, kernel_init=orthogonal(1.0))

    def __call__(self, memory: jax.Array, obs: Any) -> tuple[jax.Array, jax.Array]:
        memory, y = self.recur(memory, self.encode(obs))
        return memory, self.decode(y)

    def encode(self, obs: Any) -> jax.Array:
        return self.core.features(obs)

    def recur(self, memory: jax.Array, features: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self.core.step(memory, features)

    def decode(self, y: jax.Array) -> jax.Array:
        return self.head(y)


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


class LearnerState(NamedTuple):
    params: Any
    target_params: Any
    opt_state: optax.OptState
    replay: replay.ReplayState
    updates: jax.Array  # gradient steps taken
    game_steps: jax.Array  # game steps learned from (added to the buffer)


class RecurrentTeamQ:
    """The agents' shared recurrent Q-network and the team's mixer, as one learner's variables
    ``{"params": {"agents": ..., "mixer": ...}}`` (no ``mixer`` for VDN); the sequences a rollout
    gives the replay buffer, and the loss on a batch of them."""

    def __init__(self, ctx: AlgorithmContext[RecurrentTeamQConfig]):
        hp = self.hp = ctx.hparams
        self.agents, self.qmix = ctx.num_agents, hp.mixer == "qmix"
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
        self.mixer = QMixer(self.agents, hp.mixing_size, hp.hypernet_size, hp.mixer_init_scale)
        self.example = spaces.example(ctx.observation_space)

    def init(self, key: jax.Array) -> Any:
        k_agents, k_mixer = jax.random.split(key)
        agent_obs = view(self.example, self.hp.agent_observation)
        agents = self.net.init(k_agents, self.initial_memory(1)[0], agent_obs)
        params = {"agents": agents["params"]}
        if self.qmix:
            world = view(self.example, self.hp.mixer_state)
            params["mixer"] = self.mixer.init(k_mixer, jnp.zeros((self.agents,)), world)["params"]
        return {"params": params}

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

    def mix(self, variables: Any, q: jax.Array, state: Any) -> jax.Array:
        """The team's value of its agents' ``q`` ``[..., N]``."""
        if not self.qmix:
            return q.sum(axis=-1)
        return self.mixer.apply({"params": variables["params"]["mixer"]}, q, state)

    def games_of(self, x: jax.Array) -> jax.Array:
        """``[T, B·N, ...]`` as ``[T, B, N, ...]``."""
        return x.reshape(x.shape[0], -1, self.agents, *x.shape[2:])

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
        weight = self.valid(truncated, terminated, jnp.swapaxes(batch.start, 0, 1)[1:])

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

    def valid(self, truncated: jax.Array, terminated: jax.Array, next_start: jax.Array):
        """The weights ``[T, M]`` of the steps whose targets are sound: 0 at a step truncated
        before the sequence's end (the observation after it is the next episode's first,
        ``next_start``), and with λ > 0 at the steps of its episode before it too (their λ-returns
        lean on its target)."""
        broken = jnp.logical_and(truncated, next_start)
        if self.hp.q_lambda == 0.0:
            return 1.0 - broken.astype(jnp.float32)
        done = jnp.logical_or(truncated, terminated)

        def backward(bad_next, xs):
            b, d = xs
            bad = jnp.logical_or(b, jnp.logical_and(jnp.logical_not(d), bad_next))
            return bad, bad

        _, bad = jax.lax.scan(backward, jnp.zeros_like(broken[0]), (broken, done), reverse=True)
        return 1.0 - bad.astype(jnp.float32)


def build(ctx: AlgorithmContext[RecurrentTeamQConfig]) -> Algorithm:
    hp = ctx.hparams
    team = RecurrentTeamQ(ctx)
    masked = ctx.has_action_mask
    num_envs = ctx.num_envs
    games = num_envs // ctx.num_agents
    game_steps = games * ctx.rollout_len
    total_updates = ctx.num_iterations * hp.num_updates
    tx = ac.optimizer(ctx, total_updates, optax.adam)
    buffer = replay.make_uniform(hp.buffer_size, hp.batch_size)
    epsilon = exploration.epsilon_schedule(
        hp.epsilon_start, hp.epsilon_end, hp.epsilon_fraction, ctx.num_iterations * game_steps
    )

    # The actor: ε-greedy per agent from its memory, reset where its episode starts.

    def actor_init(key):
        del key
        return (jnp.zeros((), jnp.int32), team.initial_memory(num_envs))

    def act(state, inputs, key):
        steps, memory = state
        observation = inputs[OBSERVATION]
        acting_for = jax.tree.leaves(observation)[0].shape[0]
        if acting_for != num_envs:
            raise ConfigError(
                f"{hp.mixer}'s actor keeps the memory of its {num_envs} agents and must act for "
                f"all of them at every step, but was called on {acting_for} (placement host_env "
                "acts for each half of the batch in turn; use placement single or data_parallel)"
            )
        start = inputs[EPISODE_STEP] == 0
        memory = reset_memory(memory, start)
        memory_next, q = team.step(inputs[PARAMS], memory, observation)
        action = exploration.epsilon_greedy(key, q, epsilon(steps), inputs.get(ACTION_MASK))
        outputs = {ACTION: action, MEMORY: memory, EPISODE_START: start}
        return (steps + games, memory_next), outputs

    actor = fragment(
        "actor",
        Role.ACTOR,
        act,
        init=actor_init,
        inputs=(OBSERVATION, EPISODE_STEP, PARAMS, *((ACTION_MASK,) if masked else ())),
        outputs=(ACTION, MEMORY, EPISODE_START),
    )

    # The learner: store the rollout's sequences, then (once warmed up) gradient steps on
    # sampled batches of them, the target network following.

    def learner_init(key):
        params = team.init(key)
        return LearnerState(
            params,
            params,
            tx.init(params),
            buffer.init(team.example_sequence(ctx.rollout_len, masked, ctx.action_space.n)),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), jnp.int32),
        )

    grad = jax.grad(team.loss, has_aux=True)

    def update(state: LearnerState, key):
        sample = buffer.sample(state.replay, key)
        grads, metrics = grad(state.params, state.target_params, sample.transitions)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        count = state.updates + 1
        target = offpolicy.update_target(
            state.target_params, params, count, hp.tau, hp.target_update_period
        )
        return state._replace(
            params=params, target_params=target, opt_state=opt_state, updates=count
        ), metrics

    def updates(state: LearnerState, key):
        return jax.lax.scan(update, state, jax.random.split(key, hp.num_updates))

    def learn(state: LearnerState, inputs, key):
        stored = buffer.add(state.replay, team.sequences(inputs[TRAJECTORY], masked))
        state = state._replace(replay=stored, game_steps=state.game_steps + game_steps)
        ready = jnp.logical_and(buffer.can_sample(stored), state.game_steps >= hp.learning_starts)
        shapes = jax.eval_shape(updates, state, key)[1]

        def wait(state, key):
            del key
            return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        state, metrics = jax.lax.cond(ready, updates, wait, state, key)
        metrics = jax.tree.map(jnp.mean, metrics)
        return state, {METRICS: {**metrics, "updates": state.updates}}

    learner = fragment(
        "learner",
        Role.LEARNER,
        learn,
        init=learner_init,
        inputs=(TRAJECTORY,),
        outputs=(METRICS,),
        publish=lambda state: {PARAMS: state.params},
        published=(PARAMS,),
    )

    def greedy(params, observation, memory, action_mask=None):
        memory, q = team.step(params, memory, observation)
        q = exploration.mask_q_values(q, action_mask)
        return jnp.argmax(q, axis=-1).astype(jnp.int32), memory

    return Algorithm(
        hp.mixer,
        actor,
        learner,
        policy=greedy,
        policy_memory=team.initial_memory,
        parts={"team": team},
    )


# PyMARL's QMIX on SMAC, on JaxMARL's SMAX 3m: 8 games x 64 steps a rollout, 4 gradient steps on
# 32 sequences after each.
SMAX_DEFAULTS = dict(
    env="jaxmarl/HeuristicEnemySMAX",
    total_steps=1_048_576,
    num_envs=8,
    rollout_len=64,
)

VDN = AlgorithmSpec(
    name="vdn",
    hparams=RecurrentTeamQConfig,
    build=build,
    check=check_team,
    summary="Value decomposition: the team's Q the sum of its recurrent agents' (Sunehag 2018)",
    defaults=dict(SMAX_DEFAULTS, env_options={"map": "3m"}),
)


@dataclasses.dataclass(frozen=True)
class QMIXConfig(RecurrentTeamQConfig):
    """QMIX: the mixer ``qmix``, the agents on ``observation``, the mixer on ``world_state``."""

    mixer: str = hparam("qmix", "how the agents' Q-values make the team's: vdn (their sum) or qmix")
    agent_observation: str = hparam("observation", "key of a dict observation the agents read")


QMIX = AlgorithmSpec(
    name="qmix",
    hparams=QMIXConfig,
    build=build,
    check=check_team,
    summary="Monotonic mixing of recurrent agents' Q by hypernetworks (Rashid et al. 2018)",
    defaults=dict(SMAX_DEFAULTS, env_options={"map": "3m", "world_state": True}),
)

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
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import branch, validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.core.fragment import Fragment, Role, fragment
from jaxrl_fdg.core.names import (
    ACTION,
    ACTION_MASK,
    EPISODE_START,
    EPISODE_STEP,
    MEMORY,
    METRICS,
    OBSERVATION,
    PARAMS,
    TRAJECTORY,
)
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments import exploration
from jaxrl_fdg.fragments.algorithms import actor_critic as ac
from jaxrl_fdg.fragments.algorithms import offpolicy
from jaxrl_fdg.fragments.algorithms.recurrent_team import RecurrentTeamQ
from jaxrl_fdg.fragments.algorithms.value_decomposition import MIXERS, check_team
from jaxrl_fdg.fragments.networks import ACTIVATIONS, TORSO_HELP, TORSOS
from jaxrl_fdg.fragments.recurrent import check_acts_for_all, reset_memory
from jaxrl_fdg.fragments.replay import buffer as replay

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


class LearnerState(NamedTuple):
    params: Any
    target_params: Any
    opt_state: optax.OptState
    replay: replay.ReplayState
    updates: jax.Array  # gradient steps taken
    game_steps: jax.Array  # game steps learned from (added to the buffer)


def build(ctx: AlgorithmContext[RecurrentTeamQConfig]) -> Algorithm:
    """The actor, the learner and the greedy policy around the team's recurrent Q-function."""
    team = RecurrentTeamQ(ctx)

    def greedy(params, observation, memory, action_mask=None):
        memory, q = team.step(params, memory, observation)
        q = exploration.mask_q_values(q, action_mask)
        return jnp.argmax(q, axis=-1).astype(jnp.int32), memory

    return Algorithm(
        ctx.hparams.mixer,
        actor(ctx, team),
        learner(ctx, team),
        policy=greedy,
        policy_memory=team.initial_memory,
        parts={"team": team},
    )


def actor(ctx: AlgorithmContext[RecurrentTeamQConfig], team: RecurrentTeamQ) -> Fragment:
    """ε-greedy per agent from its memory, reset where its episode starts; the actor's state is
    the game steps taken (ε's schedule) and every agent's memory."""
    hp, num_envs = ctx.hparams, ctx.num_envs
    games = num_envs // ctx.num_agents
    epsilon = exploration.epsilon_schedule(
        hp.epsilon_start,
        hp.epsilon_end,
        hp.epsilon_fraction,
        ctx.num_iterations * games * ctx.rollout_len,
    )

    def init(key):
        del key
        return (jnp.zeros((), jnp.int32), team.initial_memory(num_envs))

    def act(state, inputs, key):
        steps, memory = state
        observation = inputs[OBSERVATION]
        check_acts_for_all(observation, num_envs, f"{hp.mixer}'s actor")
        start = inputs[EPISODE_STEP] == 0
        memory = reset_memory(memory, start)
        memory_next, q = team.step(inputs[PARAMS], memory, observation)
        action = exploration.epsilon_greedy(key, q, epsilon(steps), inputs.get(ACTION_MASK))
        outputs = {ACTION: action, MEMORY: memory, EPISODE_START: start}
        return (steps + games, memory_next), outputs

    masked = (ACTION_MASK,) if ctx.has_action_mask else ()
    return fragment(
        "actor",
        Role.ACTOR,
        act,
        init=init,
        inputs=(OBSERVATION, EPISODE_STEP, PARAMS, *masked),
        outputs=(ACTION, MEMORY, EPISODE_START),
    )


def learner(ctx: AlgorithmContext[RecurrentTeamQConfig], team: RecurrentTeamQ) -> Fragment:
    """Store each rollout's sequences, then (once warmed up) ``num_updates`` gradient steps on
    sampled batches of them, the target network following; publishes ``params``."""
    hp, masked = ctx.hparams, ctx.has_action_mask
    game_steps = ctx.num_envs // ctx.num_agents * ctx.rollout_len
    tx = ac.optimizer(ctx, ctx.num_iterations * hp.num_updates, optax.adam)
    buffer = replay.make_uniform(hp.buffer_size, hp.batch_size)
    grad = jax.grad(team.loss, has_aux=True)

    def init(key):
        params = team.init(key)
        example = team.example_sequence(ctx.rollout_len, masked, ctx.action_space.n)
        zero = jnp.zeros((), jnp.int32)
        return LearnerState(params, params, tx.init(params), buffer.init(example), zero, zero)

    def update(stored: replay.ReplayState, state: LearnerState, key):
        sample = buffer.sample(stored, key)
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

    def learn(state: LearnerState, inputs, key):
        stored = buffer.add(state.replay, team.sequences(inputs[TRAJECTORY], masked))
        # The buffer is read, never written, by the updates: it stays out of the cond's and the
        # scan's carries (which XLA may copy: hundreds of MB at JaxMARL's buffer sizes).
        state = state._replace(replay=None, game_steps=state.game_steps + game_steps)
        ready = jnp.logical_and(buffer.can_sample(stored), state.game_steps >= hp.learning_starts)

        def updates(state: LearnerState, key):
            step = functools.partial(update, stored)
            return jax.lax.scan(step, state, jax.random.split(key, hp.num_updates))

        shapes = jax.eval_shape(updates, state, key)[1]

        def wait(state, key):
            del key
            return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        state, metrics = branch.cond(ready, updates, wait, state, key)
        metrics = jax.tree.map(jnp.mean, metrics)
        state = state._replace(replay=stored)
        return state, {METRICS: {**metrics, "updates": state.updates}}

    return fragment(
        "learner",
        Role.LEARNER,
        learn,
        init=init,
        inputs=(TRAJECTORY,),
        outputs=(METRICS,),
        publish=lambda state: {PARAMS: state.params},
        published=(PARAMS,),
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

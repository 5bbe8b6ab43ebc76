"""Value decomposition: VDN and QMIX, trained by PQN's learner on a game's agents.

Each agent acts ε-greedily on its own Q-values from one network shared by every agent (an
agent's rows of the folded batch, :mod:`~jaxrl_fdg.envs.multi_agent`); the team learns a joint
value built from the Q-values of the actions its agents took:

* **VDN** (Sunehag et al. 2018): ``Q_tot = Σ_i Q_i(o_i, a_i)``;
* **QMIX** (Rashid et al. 2018): ``Q_tot = f_s(Q_1, ..., Q_N)``, a two-layer mixing network whose
  weights come from hypernetworks on the game's world state ``s``, taken in absolute value so
  that ``Q_tot`` rises with every ``Q_i`` (the greedy joint action is then each agent's own
  greedy action).

Both are trained as PQN trains one Q-network (:mod:`~jaxrl_fdg.fragments.algorithms.pqn`; Gallici
et al. 2024, whose multi-agent variant JaxMARL runs as ``pqn_vdn``): the rollout's team Q(λ)
targets, computed once from the parameters that start the update, then epochs of shuffled
minibatches of whole games' steps, with no replay buffer and no target network, LayerNorm in the
agents' network. For a rollout of ``T`` steps from ``B`` games,

    q'_t = f_{s'_t}(max_a Q_i(o'_{i,t}, a) for each agent i)        (legal actions only)
    G_t  = c·R_t + γ (1 − terminated_t) [(1 − λ) q'_t + λ G_{t+1}]
    L    = ½ E[(f_{s_t}(Q_i(o_{i,t}, a_{i,t})) − G_t)²]

with ``R_t`` the team's reward, the sum of its agents' rewards (as JaxMARL's Q-learning
baselines take it). The defaults are those of JaxMARL's ``pqn_vdn_ff_mpe`` configuration
(256 games × 16 steps, γ = 0.9, λ = 0.3, ε from 1 to 0.1 over the first 10%).

The algorithm's ``parts`` name ``team``, its :class:`TeamQ` (the networks, the batch of games
and the loss), for extensions that reuse them.

QMIX's mixer reads the observation's ``world_state`` (a JaxMARL game gives one with
``world_state=true``, which ``--algo qmix`` asks for) and the agents read ``observation``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.core.names import (
    NEXT_ACTION_MASK,
)
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.spaces import Dict
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments import exploration, losses
from jaxrl_fdg.fragments.algorithms import pqn
from jaxrl_fdg.fragments.networks import QNetwork, check_torso, orthogonal
from jaxrl_fdg.fragments.torsos import observation_ndim, observation_part, view

MIXERS = ("vdn", "qmix")


@dataclasses.dataclass(frozen=True)
class ValueDecompositionConfig(pqn.PQNConfig):
    """PQN's hyperparameters at JaxMARL's ``pqn_vdn_ff_mpe`` settings, and the mixer's."""

    lr: float = hparam(5e-4, "learning rate; with anneal_lr, where its linear decay to 0 starts")
    gamma: float = hparam(0.9, "discount factor γ")
    q_lambda: float = hparam(0.3, "λ of the Q(λ) targets: 0 one-step, 1 returns to the window end")
    reward_scale: float = hparam(1.0, "rewards are multiplied by this in the targets")
    epsilon_end: float = hparam(0.1, "ε-greedy's ε at the end of its linear decay")
    epsilon_fraction: float = hparam(0.1, "fraction of the run over which ε decays")
    max_grad_norm: float = hparam(1.0, "clip gradients to this global norm")
    anneal_lr: bool = hparam(False, "decay the learning rate linearly to 0 over the run")
    mixer: str = hparam("vdn", "how the agents' Q-values make the team's: vdn (their sum) or qmix")
    agent_observation: str = hparam("", "key of a dict observation the agents read (empty: all)")
    mixer_state: str = hparam("world_state", "key of the dict observation qmix's mixer reads")
    mixing_size: int = hparam(32, "units of qmix's mixing layer")
    hypernet_size: int = hparam(64, "hidden units of qmix's hypernetworks")

    def __post_init__(self) -> None:
        super().__post_init__()
        validate.choice("mixer", self.mixer, MIXERS)
        validate.positive_int("mixing_size", self.mixing_size)
        validate.positive_int("hypernet_size", self.hypernet_size)


class QMixer(nn.Module):
    """QMIX's monotonic mixing network: ``(q [..., N], state [..., S]) -> Q_tot [...]``."""

    num_agents: int
    mixing_size: int
    hypernet_size: int
    # The orthogonal gain of every layer. A world state of large entries (SMAX's positions run
    # to 32) makes gain 1 start Q_tot in the hundreds; JaxMARL's QMIX takes 0.001.
    init_scale: float = 1.0

    @nn.compact
    def __call__(self, q: jax.Array, state: jax.Array) -> jax.Array:
        n, e = self.num_agents, self.mixing_size
        init = orthogonal(self.init_scale)

        def hyper(out: int, name: str) -> jax.Array:
            hidden = nn.relu(nn.Dense(self.hypernet_size, kernel_init=init)(state))
            return nn.Dense(out, kernel_init=init, name=name)(hidden)

        w1 = jnp.abs(hyper(n * e, "w1")).reshape(*q.shape[:-1], n, e)
        b1 = nn.Dense(e, kernel_init=init, name="b1")(state)
        hidden = nn.elu(jnp.einsum("...n,...ne->...e", q, w1) + b1)
        w2 = jnp.abs(hyper(e, "w2"))
        b2 = hyper(1, "b2")[..., 0]
        return jnp.einsum("...e,...e->...", hidden, w2) + b2


class Batch(NamedTuple):
    """A rollout's games ``[T·B, ...]``: the agents' observations ``[T·B, N, ...]`` and actions
    ``[T·B, N]``, the mixer's state ``[T·B, S]`` (empty for VDN) and the team's targets."""

    observation: Any
    action: jax.Array
    state: Any
    target: jax.Array


def check_team(ctx: AlgorithmContext[Any]) -> None:
    """What every team Q-learner needs (this module's and :mod:`.qmix`'s): a Discrete action
    space, QMIX's world state where its mixer reads one, and agents' observations its torso
    fits. ``ctx.hparams`` has ``mixer``, ``mixer_state``, ``agent_observation`` and ``torso``."""
    hp = ctx.hparams
    if not isinstance(ctx.action_space, spaces.Discrete):
        raise ConfigError(
            f"{hp.mixer} needs a Discrete action space (max_a Q over a finite set of actions), "
            f"got {spaces.describe(ctx.action_space)}"
        )
    space = ctx.observation_space
    if hp.mixer == "qmix" and not (isinstance(space, Dict) and hp.mixer_state in space.spaces):
        raise ConfigError(
            f"qmix's mixer reads the observation's {hp.mixer_state!r}: it needs a multi-agent game "
            "that publishes a world state (jaxmarl/<name> with --env-option world_state=true, "
            "the default for qmix)"
        )
    seen = observation_part(space, hp.agent_observation, "agent_observation")
    check_torso(hp.torso, seen)


def check(ctx: AlgorithmContext[ValueDecompositionConfig]) -> None:
    check_team(ctx)
    games = ctx.num_envs // ctx.num_agents
    validate.divides(
        "num_minibatches",
        ctx.hparams.num_minibatches,
        "num_envs (games) × rollout_len",
        games * ctx.rollout_len,
    )


class TeamMixer:
    """What a team Q-learner holds besides its agents' network (:class:`TeamQ` here, the
    recurrent one of :mod:`.recurrent_team`): the team's mixer (VDN's sum or QMIX's
    :class:`QMixer` of gain ``init_scale``), its variables beside the agents' in ``{"params":
    {"agents": ..., "mixer": ...}}`` (no ``mixer`` for VDN), and the unfolding of rows into
    games. ``ctx.hparams`` has ``mixer``, ``mixer_state``, ``mixing_size`` and
    ``hypernet_size``."""

    def __init__(self, ctx: AlgorithmContext[Any], init_scale: float = 1.0):
        hp = self.hp = ctx.hparams
        self.agents, self.qmix = ctx.num_agents, hp.mixer == "qmix"
        self.mixer = QMixer(self.agents, hp.mixing_size, hp.hypernet_size, init_scale)
        self.example = spaces.example(ctx.observation_space)

    def variables(self, agents: Any, key: jax.Array) -> Any:
        """The learner's variables: the agents' parameters ``agents`` and, for QMIX, the mixer's
        initialised from ``key``."""
        params = {"agents": agents}
        if self.qmix:
            world = view(self.example, self.hp.mixer_state)
            params["mixer"] = self.mixer.init(key, jnp.zeros((self.agents,)), world)["params"]
        return {"params": params}

    def mix(self, variables: Any, q: jax.Array, state: Any) -> jax.Array:
        """The team's value of its agents' ``q`` ``[..., N]``."""
        if not self.qmix:
            return q.sum(axis=-1)
        return self.mixer.apply({"params": variables["params"]["mixer"]}, q, state)

    def games_of(self, tree: Any) -> Any:
        """``[T, B·N, ...]`` leaves as ``[T, B, N, ...]`` (each step's rows unfolded)."""
        n = self.agents
        return jax.tree.map(lambda x: x.reshape(x.shape[0], -1, n, *x.shape[2:]), tree)


class TeamQ(TeamMixer):
    """The agents' shared Q-network beside the team's mixer (:class:`TeamMixer`), and the
    rollout's batch of games with its team targets."""

    def __init__(self, ctx: AlgorithmContext[ValueDecompositionConfig]):
        super().__init__(ctx)
        hp = self.hp
        seen = observation_part(ctx.observation_space, hp.agent_observation)
        self.net = QNetwork(
            num_actions=ctx.action_space.n,
            hidden_sizes=tuple(hp.hidden_sizes),
            activation=hp.activation,
            obs_ndim=observation_ndim(seen),
            layer_norm=hp.layer_norm,
            torso=hp.torso,
        )

    def init(self, key: jax.Array) -> Any:
        k_agents, k_mixer = jax.random.split(key)
        agents = self.net.init(k_agents, view(self.example, self.hp.agent_observation))
        return self.variables(agents["params"], k_mixer)

    def q_values(self, variables: Any, observation: Any) -> jax.Array:
        """Each row's (agent's) Q-values ``[..., A]``."""
        agents = {"params": variables["params"]["agents"]}
        return self.net.apply(agents, view(observation, self.hp.agent_observation))

    def mixer_state(self, observation: Any) -> Any:
        """The world state of each game ``[T, B, S]``: its first agent's (none for VDN)."""
        if not self.qmix:
            return ()
        return self.games_of(view(observation, self.hp.mixer_state))[:, :, 0]

    def batch(self, variables: Any, traj: Transition) -> Batch:
        """The rollout's games ``[T·B, ...]`` with their team Q(λ) targets from ``variables``."""
        hp, games_of = self.hp, self.games_of
        q_next = self.q_values(variables, traj.next_observation)
        q_next = exploration.mask_q_values(q_next, traj.info.get(NEXT_ACTION_MASK)).max(axis=-1)
        team_next = self.mix(variables, games_of(q_next), self.mixer_state(traj.next_observation))
        target = losses.q_lambda_returns(
            hp.reward_scale * games_of(traj.reward).sum(axis=-1),
            team_next,
            games_of(traj.terminated)[:, :, 0],  # the team's flags, the same on every agent
            games_of(traj.truncated)[:, :, 0],
            hp.gamma,
            hp.q_lambda,
        )
        state = self.mixer_state(traj.observation)
        batch = Batch(games_of(traj.observation), games_of(traj.action), state, target)
        return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), batch)

    def loss(self, variables: Any, mb: Batch):
        q = self.q_values(variables, mb.observation)  # [M, N, A]
        q_taken = jnp.take_along_axis(q, mb.action[..., None], axis=-1)[..., 0]
        team = self.mix(variables, q_taken, mb.state)
        value = 0.5 * jnp.mean((team - mb.target) ** 2)
        return value, {"loss": value, "q_mean": q_taken.mean(), "team_q_mean": team.mean()}


def build(ctx: AlgorithmContext[ValueDecompositionConfig]) -> Algorithm:
    """PQN's actor and learner (``pqn.q_lambda_algorithm``) around the team's Q-function."""
    team = TeamQ(ctx)
    return pqn.q_lambda_algorithm(
        f"pqn-{ctx.hparams.mixer}",
        ctx,
        team.init,
        team.q_values,
        team.batch,
        team.loss,
        {"team": team},
    )


MPE_DEFAULTS = dict(
    env="jaxmarl/MPE_simple_spread_v3", total_steps=2_097_152, num_envs=256, rollout_len=16
)

PQN_VDN = AlgorithmSpec(
    name="pqn-vdn",
    hparams=ValueDecompositionConfig,
    build=build,
    check=check,
    summary="Value decomposition: the team's Q the sum of its agents' (Sunehag et al. 2018)",
    defaults=MPE_DEFAULTS,
)


@dataclasses.dataclass(frozen=True)
class QMIXConfig(ValueDecompositionConfig):
    """QMIX: the mixer ``qmix``, the agents on ``observation``, the mixer on ``world_state``."""

    mixer: str = hparam("qmix", "how the agents' Q-values make the team's: vdn (their sum) or qmix")
    agent_observation: str = hparam("observation", "key of a dict observation the agents read")


PQN_QMIX = AlgorithmSpec(
    name="pqn-qmix",
    hparams=QMIXConfig,
    build=build,
    check=check,
    summary="Monotonic value mixing by hypernetworks on the world state (Rashid et al. 2018)",
    defaults=dict(MPE_DEFAULTS, env_options={"world_state": True}),
)

"""Multi-agent PPO: IPPO and MAPPO, both PPO's own fragments on a game's agents.

A multi-agent environment's env fragment folds each game's agents into the batch
(:mod:`~jaxrl_fdg.envs.multi_agent`), so PPO's actor acts for every agent of every game with one
network and its learner updates that network on all their experience: that *is* IPPO with
parameter sharing (de Witt et al. 2020), as JaxMARL's baselines run it. :data:`IPPO` is PPO
with the settings of JaxMARL's ``ippo_ff_mpe`` configuration on ``MPE_simple_spread_v3``.

MAPPO (Yu et al. 2022) differs in one thing: its critic sees the game's global state while each
actor sees its own observation. PPO's networks already read one key of a dict observation each
(``actor_observation``, ``critic_observation``), so :data:`MAPPO` is PPO with the environment
asked for its world state (``env_options = {"world_state": True}``: observations
``{"observation", "world_state"}``, the world state agent-specific, with the agent's one-hot
id) and the critic pointed at it. Nothing of PPO is copied.

Both share one network among the agents by default, as the fold gives it. With
``share_parameters = false`` each agent has its own: the network PPO would build is wrapped in
:class:`~jaxrl_fdg.fragments.networks.PerAgent`, which holds ``N`` copies of its parameters
(each initialised from its own key) and applies agent ``i``'s copy to agent ``i``'s rows. The
loss is PPO's, averaged over every agent's rows; copy ``i`` computes only agent ``i``'s outputs,
so its gradient is that of agent ``i``'s own terms (``1/N`` of its own loss's, a scale Adam's
normalisation undoes) and each agent learns as an independent PPO learner from its own
experience, all ``N`` in one step of one optimizer. What still couples them is the global-norm
gradient clipping, over all the copies at once, and the per-minibatch advantage normalisation.
Minibatches are drawn by game then, each holding whole games' rows in order
(``fragments.minibatch``); observation moments (``normalize_observations``) are pooled over the
agents, one standardisation for all as with sharing. Feed-forward and recurrent (``memory``
gru or lstm) networks alike; a single-agent environment is refused, with no agents to split.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.envs.spaces import Dict
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments.actor_critic_policy import Policy
from jaxrl_fdg.fragments.algorithms import ppo
from jaxrl_fdg.fragments.networks import PerAgent
from jaxrl_fdg.fragments.torsos import ACTOR_OBSERVATION_HELP, CRITIC_OBSERVATION_HELP

# JaxMARL's ippo_ff_mpe.yaml: 16 games x 128 steps, PPO's own defaults otherwise (lr 2.5e-4
# annealed, 4 epochs of 4 minibatches, tanh 64 x 64). 1,000 iterations (2M game steps) take about
# a minute here.
MPE_DEFAULTS = dict(
    env="jaxmarl/MPE_simple_spread_v3", total_steps=2_048_000, num_envs=16, rollout_len=128
)


@dataclasses.dataclass(frozen=True)
class IPPOConfig(ppo.PPOConfig):
    """IPPO's hyperparameters: PPO's, and whether the agents share one network."""

    share_parameters: bool = hparam(
        True, "one network shared by every agent; false gives each agent its own"
    )


@dataclasses.dataclass(frozen=True)
class MAPPOConfig(IPPOConfig):
    """MAPPO's hyperparameters: IPPO's, with the actor on each agent's observation and the
    critic on the world state."""

    actor_observation: str = hparam("observation", ACTOR_OBSERVATION_HELP)
    critic_observation: str = hparam("world_state", CRITIC_OBSERVATION_HELP)


def check(ctx: AlgorithmContext[IPPOConfig]) -> None:
    """Reject configurations IPPO cannot run, before anything is compiled: PPO's, and without
    parameter sharing a single-agent environment, or minibatches that split a game."""
    ppo.check(ctx)
    hp = ctx.hparams
    if hp.share_parameters:
        return
    if ctx.num_agents == 1:
        raise ConfigError(
            "share_parameters = false gives each agent of a multi-agent game a network of its "
            "own, and this environment has one agent: keep share_parameters = true (the "
            "default) here, or train a multi-agent game (jaxmarl/<name>)"
        )
    games = ctx.num_envs // ctx.num_agents
    if hp.memory != "none":  # minibatches of whole games' sequences
        validate.divides(
            "num_minibatches",
            hp.num_minibatches,
            "num_envs (games: share_parameters = false splits minibatches by game)",
            games,
        )
    validate.divides(
        "num_minibatches",
        hp.num_minibatches,
        "num_envs × rollout_len (games × steps: share_parameters = false splits minibatches "
        "by game)",
        games * ctx.rollout_len,
    )


def check_mappo(ctx: AlgorithmContext[MAPPOConfig]) -> None:
    space = ctx.observation_space
    if not isinstance(space, Dict) or ctx.hparams.critic_observation not in space.spaces:
        raise ConfigError(
            f"mappo's critic reads the observation's {ctx.hparams.critic_observation!r}: it "
            "needs a multi-agent game that publishes a world state (jaxmarl/<name> with "
            "--env-option world_state=true, the default for mappo)"
        )
    check(ctx)


def build(ctx: AlgorithmContext[IPPOConfig]) -> Algorithm:
    """PPO's fragments on the game's rows: IPPO with :class:`IPPOConfig`, MAPPO with
    :class:`MAPPOConfig` (its networks on the keys it names); with ``share_parameters`` false,
    PPO's own network with a copy of its parameters per agent (:func:`per_agent_policy`)."""
    if ctx.hparams.share_parameters:
        return ppo.build(ctx)
    return ppo.build(ctx, policy=per_agent_policy(ctx))


def per_agent_policy(ctx: AlgorithmContext[IPPOConfig]) -> Policy:
    """The policy PPO would build, its network (feed-forward or recurrent, on the keys the
    config names) held once per agent of the game (:class:`PerAgent`)."""
    shared = Policy(ctx)
    ranks = tuple(int(np.ndim(leaf)) for leaf in jax.tree.leaves(shared.obs_example))
    return Policy(ctx, network=PerAgent(shared.net, ctx.num_agents, ranks))


IPPO = AlgorithmSpec(
    name="ippo",
    hparams=IPPOConfig,
    build=build,
    check=check,
    summary="Independent PPO: one network shared by a game's agents, or one each",
    defaults=MPE_DEFAULTS,
)

MAPPO = AlgorithmSpec(
    name="mappo",
    hparams=MAPPOConfig,
    build=build,
    check=check_mappo,
    summary="Multi-agent PPO: actors on their own observations, a critic on the world state",
    defaults=dict(MPE_DEFAULTS, env_options={"world_state": True}),
)

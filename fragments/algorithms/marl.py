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
"""

from __future__ import annotations

import dataclasses

from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.envs.spaces import Dict
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments.algorithms import ppo
from jaxrl_fdg.fragments.torsos import ACTOR_OBSERVATION_HELP, CRITIC_OBSERVATION_HELP

# JaxMARL's ippo_ff_mpe.yaml: 16 games x 128 steps, PPO's own defaults otherwise (lr 2.5e-4
# annealed, 4 epochs of 4 minibatches, tanh 64 x 64). 1,000 iterations (2M game steps) take about
# a minute here.
MPE_DEFAULTS = dict(
    env="jaxmarl/MPE_simple_spread_v3", total_steps=2_048_000, num_envs=16, rollout_len=128
)


@dataclasses.dataclass(frozen=True)
class MAPPOConfig(ppo.PPOConfig):
    """MAPPO's hyperparameters: PPO's, with the actor on each agent's observation and the critic
    on the world state."""

    actor_observation: str = hparam("observation", ACTOR_OBSERVATION_HELP)
    critic_observation: str = hparam("world_state", CRITIC_OBSERVATION_HELP)


def check_mappo(ctx: AlgorithmContext[MAPPOConfig]) -> None:
    space = ctx.observation_space
    if not isinstance(space, Dict) or ctx.hparams.critic_observation not in space.spaces:
        raise ConfigError(
            f"mappo's critic reads the observation's {ctx.hparams.critic_observation!r}: it "
            "needs a multi-agent game that publishes a world state (jaxmarl/<name> with "
            "--env-option world_state=true, the default for mappo)"
        )
    ppo.check(ctx)


def build(ctx: AlgorithmContext[ppo.PPOConfig]) -> Algorithm:
    """PPO's fragments on the game's rows: IPPO with ``ppo.PPOConfig``, MAPPO with
    :class:`MAPPOConfig` (its networks on the keys it names)."""
    return ppo.build(ctx)


IPPO = AlgorithmSpec(
    name="ippo",
    hparams=ppo.PPOConfig,
    build=build,
    check=ppo.check,
    summary="Independent PPO, one network shared by every agent of a multi-agent game",
    defaults=MPE_DEFAULTS,
)

MAPPO = AlgorithmSpec(
    name="mappo",
    hparams=MAPPOConfig,
    build=build,
    check=check_mappo,
    summary="Multi-agent PPO: shared actors on their observations, a critic on the world state",
    defaults=dict(MPE_DEFAULTS, env_options={"world_state": True}),
)

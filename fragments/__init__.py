"""Algorithm building blocks and the built-in algorithms, as fragments.

Building blocks: ``networks`` (``recurrent`` for the GRU/LSTM ones), ``distributions``, ``losses``,
``minibatch``, ``exploration``, ``replay``; shared families: ``actor_critic`` (PPO, A2C; their
networks in ``actor_critic_policy``), ``offpolicy`` (DQN, C51, SAC, TD3, DDPG), ``continuous``;
``pqn`` is Q-learning on-policy, rollout by rollout. Each algorithm module holds its hyperparameter
dataclass and its ``SPEC`` (``jaxrl_fdg.core.algorithm`` registers them by name and imports them on
first use).
"""

from jaxrl_fdg.fragments import (
    a2c,
    actor_critic,
    actor_critic_policy,
    c51,
    continuous,
    distributions,
    dpg,
    dqn,
    exploration,
    losses,
    minibatch,
    networks,
    offpolicy,
    ppo,
    pqn,
    recurrent,
    replay,
    sac,
)

__all__ = [
    "a2c",
    "actor_critic",
    "actor_critic_policy",
    "c51",
    "continuous",
    "distributions",
    "dpg",
    "dqn",
    "exploration",
    "losses",
    "minibatch",
    "networks",
    "offpolicy",
    "ppo",
    "pqn",
    "recurrent",
    "replay",
    "sac",
]

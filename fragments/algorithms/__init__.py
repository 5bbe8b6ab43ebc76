"""The built-in algorithms, one module each, made of the building blocks in
:mod:`jaxrl_fdg.fragments`; each module holds its hyperparameter dataclass and its spec, found by
name through the ``jaxrl_fdg.algorithms`` entry points (``--algo NAME``).

* ``ppo``: Proximal Policy Optimization, Schulman et al. (2017), arXiv:1707.06347; ``SPEC``,
  ``ppo``.
* ``a2c``: Advantage Actor-Critic, the synchronous A3C of Mnih et al. (2016), arXiv:1602.01783;
  ``SPEC``, ``a2c``.
* ``impala``: IMPALA's V-trace learner, Espeholt et al. (2018), arXiv:1802.01561; ``SPEC``,
  ``impala``.
* ``dqn``: Deep Q-Networks, Mnih et al. (2015), Nature 518, with Rainbow's options (Hessel et al.
  2018, arXiv:1710.02298); ``SPEC``, ``dqn``.
* ``c51``: categorical distributional DQN, Bellemare, Dabney & Munos (2017), arXiv:1707.06887;
  ``SPEC``, ``c51``.
* ``pqn``: Parallelised Q-Network, Gallici et al. (2024), arXiv:2407.04811; ``SPEC``, ``pqn``.
* ``sac``: Soft Actor-Critic, Haarnoja et al. (2018), arXiv:1801.01290 and arXiv:1812.05905;
  ``SPEC``, ``sac``.
* ``dpg``: deterministic policy gradients, TD3 (Fujimoto, van Hoof & Meger 2018, arXiv:1802.09477;
  ``TD3_SPEC``, ``td3``) and DDPG (Lillicrap et al. 2016, arXiv:1509.02971; ``DDPG_SPEC``,
  ``ddpg``).
* ``marl``: IPPO (de Witt et al. 2020, arXiv:2011.09533; ``IPPO``, ``ippo``) and MAPPO (Yu et al.
  2022, arXiv:2103.01955; ``MAPPO``, ``mappo``), PPO's fragments on a multi-agent game.
* ``qmix``: VDN (Sunehag et al. 2018, arXiv:1706.05296; ``VDN``, ``vdn``) and QMIX (Rashid et
  al. 2018, arXiv:1803.11485; ``QMIX``, ``qmix``) with recurrent agents, sequence replay and a
  target network.
* ``recurrent_team``: their team Q-function (recurrent agents, the mixer, sequences and loss).
* ``value_decomposition``: the same two trained by PQN's learner (``PQN_VDN``, ``pqn-vdn``;
  ``PQN_QMIX``, ``pqn-qmix``), and QMIX's mixer.

The families they share: ``actor_critic`` (PPO, A2C and IMPALA; PQN borrows its optimizer and
rollout learner), ``offpolicy`` (the replay and update-to-data schedule of DQN, C51, SAC, TD3 and
DDPG) and ``continuous`` (what SAC, TD3 and DDPG share). C51 is a head on ``dqn``'s machinery.
"""

from jaxrl_fdg import lazy

# Each module is imported when first asked for (``algorithms.ppo``): a run imports its own
# algorithm's module only.
__all__ = [
    "a2c",
    "actor_critic",
    "c51",
    "continuous",
    "dpg",
    "dqn",
    "impala",
    "marl",
    "offpolicy",
    "ppo",
    "pqn",
    "qmix",
    "recurrent_team",
    "sac",
    "value_decomposition",
]

__getattr__, __dir__ = lazy.names(__name__, {}, globals())

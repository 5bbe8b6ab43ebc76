"""C51, the categorical distributional DQN, as a head on the DQN machinery of
:mod:`jaxrl_fdg.fragments.algorithms.dqn` (replay, n-step returns, ε-greedy, warm-up, target
network).

Bellemare, Dabney & Munos (2017), "A Distributional Perspective on Reinforcement Learning",
ICML, arXiv:1707.06887. The network outputs, per action, probabilities ``p_i(s, a)`` on the
``N`` fixed atoms ``z_i = v_min + i Δz``; its action values are their expectations, and it
learns by cross-entropy against the projected distributional Bellman target:

    Q(s, a) = Σ_i z_i p_i(s, a)
    a*      = argmax_a Q_target(s', a)          (double Q-learning: argmax_a Q(s', a))
    m       = Φ(r + discount · z, p(s', a*; θ_target))        (losses.categorical_projection)
    L       = E_w[−Σ_i m_i log p_i(s, a)]

With prioritized replay the cross-entropy of each transition is its priority, as in Rainbow
(Hessel et al. 2018, arXiv:1710.02298).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments import exploration, losses
from jaxrl_fdg.fragments.algorithms import dqn
from jaxrl_fdg.fragments.networks import CategoricalQNetwork
from jaxrl_fdg.fragments.torsos import observation_ndim


@dataclasses.dataclass(frozen=True)
class C51Config(dqn.DQNConfig):
    """C51 hyperparameters: DQN's, plus the fixed support of the return distribution.

    The defaults are those of DQN here, which follow CleanRL's ``dqn.py`` and ``c51.py`` CartPole
    settings (Huang et al. 2022, JMLR 23(274): Adam 2.5e-4, a 10k buffer, batches of 128, 10k
    warm-up steps, ε from 1 to 0.05 over half the run, a target copy every 400 env steps where
    CleanRL's ``c51.py`` copies every 500), with CleanRL's support ``[−100, 100]`` on the paper's
    51 atoms (CleanRL uses 101) and, as in the paper and CleanRL, no double Q-learning.
    ``td_loss`` is DQN's and unused here: the loss is the cross-entropy.
    """

    num_atoms: int = hparam(51, "atoms of the fixed support of the return distribution")
    v_min: float = hparam(-100.0, "lowest atom of the support, v_min")
    v_max: float = hparam(100.0, "highest atom of the support, v_max")
    double_q: bool = hparam(False, "double Q-learning: the online network picks the next action")
    td_loss: str = hparam("mse", "unused: c51 learns by cross-entropy, not from a TD error")

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.num_atoms, bool) or not isinstance(self.num_atoms, int):
            raise ConfigError(f"num_atoms must be an integer ≥ 2, got {self.num_atoms!r}")
        if self.num_atoms < 2:
            raise ConfigError(f"num_atoms must be an integer ≥ 2, got {self.num_atoms!r}")
        for name in ("v_min", "v_max"):
            validate.finite(name, getattr(self, name))
        validate.below(
            "v_min",
            self.v_min,
            "v_max",
            self.v_max,
            "the support [v_min, v_max] must be a non-empty interval",
        )


def support(hp: C51Config) -> jax.Array:
    """The ``num_atoms`` fixed atoms ``z_i = v_min + i Δz``, ``Δz = (v_max − v_min)/(N − 1)``."""
    return jnp.linspace(hp.v_min, hp.v_max, hp.num_atoms, dtype=jnp.float32)


def expected_q(logits: jax.Array, atoms: jax.Array) -> jax.Array:
    """``Q(s, a) = Σ_i z_i softmax(logits)_i``: ``[..., N]`` logits, ``[N]`` atoms -> ``[...]``."""
    return jnp.sum(jax.nn.softmax(logits, axis=-1) * atoms, axis=-1)


def check(ctx: AlgorithmContext[C51Config]) -> None:
    dqn.check_discrete(ctx, "c51")


def build(ctx: AlgorithmContext[C51Config]) -> Algorithm:
    hp = ctx.hparams
    net = CategoricalQNetwork(
        num_actions=ctx.action_space.n,
        num_atoms=hp.num_atoms,
        hidden_sizes=tuple(hp.hidden_sizes),
        activation=hp.activation,
        dueling=hp.dueling,
        obs_ndim=observation_ndim(ctx.observation_space),
        torso=hp.torso,
    )
    return dqn.build_q_learning(ctx, "c51", categorical_head(net, hp))


def categorical_head(net: CategoricalQNetwork, hp: C51Config) -> dqn.QHead:
    """C51's head: action values are expectations over the support; the loss is the
    cross-entropy against the projected target, which is also the priority signal."""
    atoms = support(hp)

    def q_values(params, observation):
        return expected_q(net.apply(params, observation), atoms)

    def target(params, target_params, exp):
        logits_next = net.apply(target_params, exp.next_observation)  # [B, A, N]
        if hp.double_q:
            chooser = q_values(params, exp.next_observation)
        else:
            chooser = expected_q(logits_next, atoms)
        best = jnp.argmax(exploration.mask_q_values(chooser, exp.next_action_mask), axis=-1)
        p_next = jax.nn.softmax(_at_action(logits_next, best), axis=-1)
        return losses.categorical_td_target(exp.reward, exp.discount, p_next, atoms)

    def loss(params, exp, target):
        logits = _at_action(net.apply(params, exp.observation), exp.action)
        cross_entropy = losses.categorical_cross_entropy(logits, target)
        metrics = {
            "cross_entropy": cross_entropy.mean(),
            "q_mean": expected_q(logits, atoms).mean(),
        }
        return cross_entropy, cross_entropy, metrics

    return dqn.QHead(net, q_values, target, loss)


def _at_action(logits: jax.Array, action: jax.Array) -> jax.Array:
    """``[B, A, N]`` logits and ``[B]`` actions -> the ``[B, N]`` logits of those actions."""
    return jnp.take_along_axis(logits, action[:, None, None], axis=1)[:, 0]


SPEC = AlgorithmSpec(
    name="c51",
    hparams=C51Config,
    build=build,
    check=check,
    summary="C51: categorical distributional DQN on the DQN machinery (Bellemare et al. 2017)",
    defaults=dict(env="CartPole-v1", total_steps=300_000, num_envs=4, rollout_len=4),
)

"""Advantage Actor-Critic (A2C) as an actor and a learner fragment, discrete or continuous actions.

The synchronous variant of A3C: Mnih, Badia, Mirza, Graves, Lillicrap, Harley, Silver &
Kavukcuoglu (2016), "Asynchronous Methods for Deep Reinforcement Learning", arXiv:1602.01783,
with the parallel environments stepped in lock-step and one gradient step per rollout, as in
OpenAI baselines' ``a2c`` and Stable-Baselines3's ``A2C``. Each rollout of ``T`` steps from ``B``
environments gives one step on

    L = −E[log π(a_t|s_t) A_t] + c_v · ½ E[(V(s_t) − G_t)²] − c_H E[H[π(·|s_t)]]

where ``A_t`` is GAE(γ, λ) and ``G_t = A_t + V(s_t)``. With the default λ = 1, ``A_t`` is the
n-step advantage of the paper, ``Σ_{k<T−t} γ^k r_{t+k} + γ^{T−t} V(s_T) − V(s_t)``, cut at episode
ends (``losses.generalized_advantage_estimation``). The ½ follows this library's PPO; baselines
and SB3 weigh the plain squared error by 0.5, so the default ``vf_coef`` here is 1.0, the same
loss. Policy and value networks share no parameters, so that weight acts only through the joint
gradient clipping and the optimizer's ε.

The optimizer is RMSprop as in SB3 (PyTorch's: decay 0.99, ε = 1e-5 added outside the square
root, mean square starting at 0), or Adam. Policy, actor, advantages and learner frame are shared
with PPO through ``fragments.algorithms.actor_critic``.
"""

from __future__ import annotations

import dataclasses

import jax
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.fragments.algorithms import actor_critic as ac

OPTIMIZERS = ("rmsprop", "adam")


@dataclasses.dataclass(frozen=True)
class A2CConfig(ac.ActorCriticConfig):
    """A2C hyperparameters (each is a ``--flag`` of ``jaxrl-fdg train``): those of
    :class:`~jaxrl_fdg.fragments.algorithms.actor_critic.ActorCriticConfig` with Stable-Baselines3's
    A2C defaults (learning rate 7e-4, constant; λ = 1; no entropy bonus; value loss weighted as
    SB3's; no advantage normalisation), plus the optimizer. SB3 also updates every 5 steps of
    its ``n_envs`` envs: pass ``rollout_len=5`` (and, as rl-baselines3-zoo does for
    CartPole-v1, ``num_envs=8``).
    """

    lr: float = hparam(7e-4, "learning rate; with anneal_lr, where its linear decay to 0 starts")
    gae_lambda: float = hparam(1.0, "λ of GAE; 1 gives n-step returns to the rollout's end")
    ent_coef: float = hparam(0.0, "weight of the entropy bonus")
    vf_coef: float = hparam(1.0, "weight of the value loss")
    anneal_lr: bool = hparam(False, "decay the learning rate linearly to 0 over the run")
    normalize_advantages: bool = hparam(False, "standardise advantages over each batch")
    optimizer: str = hparam("rmsprop", "the optimizer: rmsprop or adam")
    rmsprop_decay: float = hparam(0.99, "decay of RMSprop's running mean square")
    optimizer_eps: float = hparam(1e-5, "ε of RMSprop or Adam")

    def __post_init__(self) -> None:
        super().__post_init__()
        validate.choice("optimizer", self.optimizer, OPTIMIZERS)
        validate.in_range("rmsprop_decay", self.rmsprop_decay, 0.0, 1.0)
        validate.in_range("optimizer_eps", self.optimizer_eps, 0.0, 1.0, low_open=True)


def check(ctx: AlgorithmContext[A2CConfig]) -> None:
    """Reject configurations A2C cannot run, before anything is compiled."""
    ac.check("a2c", ctx)


def optimizer(ctx: AlgorithmContext[A2CConfig]) -> optax.GradientTransformation:
    hp = ctx.hparams

    def make(lr):
        if hp.optimizer == "adam":
            return optax.adam(lr, eps=hp.optimizer_eps)
        return optax.rmsprop(lr, decay=hp.rmsprop_decay, eps=hp.optimizer_eps, eps_in_sqrt=False)

    return ac.optimizer(ctx, ctx.num_iterations, make)


def build(ctx: AlgorithmContext[A2CConfig], policy: ac.Policy | None = None) -> Algorithm:
    """The algorithm's fragments; ``policy`` replaces its policy and value network by one of
    the caller's (``ac.Policy(ctx, network=...)``: a custom head, a shared torso)."""
    hp = ctx.hparams
    policy = ac.Policy(ctx) if policy is None else policy
    tx = optimizer(ctx)

    def loss(params, batch: ac.Batch | ac.Sequences):
        log_prob, entropy, value = policy.evaluate_batch(params, batch)
        policy_loss = -(log_prob * ac.advantages(hp, batch)).mean()
        value_loss = 0.5 * ((value - batch.target) ** 2).mean()
        return ac.total_loss(hp, policy_loss, value_loss, entropy.mean())

    step = ac.gradient_step(loss, tx)

    def update(state: ac.LearnerState, batch: ac.Batch, key: jax.Array):
        del key  # one full-batch step: nothing to shuffle
        return step(state, batch)

    return ac.algorithm("a2c", ctx, policy, tx, update)


SPEC = AlgorithmSpec(
    name="a2c",
    hparams=A2CConfig,
    build=build,
    check=check,
    summary="Advantage Actor-Critic, discrete or continuous actions (Mnih et al. 2016)",
    # rl-baselines3-zoo's a2c.yml CartPole-v1: 8 envs × 5 steps, 500,000 steps.
    defaults=dict(env="CartPole-v1", total_steps=500_000, num_envs=8, rollout_len=5),
)

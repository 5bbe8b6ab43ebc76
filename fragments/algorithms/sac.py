"""Soft Actor-Critic with automatic entropy tuning, as an actor and a learner fragment.

Haarnoja, Zhou, Abbeel & Levine (2018), "Soft Actor-Critic: Off-Policy Maximum Entropy Deep
Reinforcement Learning with a Stochastic Actor", arXiv:1801.01290, in the form of Haarnoja et al.
(2018), "Soft Actor-Critic Algorithms and Applications", arXiv:1812.05905: no separate value
network, two critics with clipped double Q-learning, and a learned temperature α.

With ``a' ~ π(·|s')`` a tanh-squashed Gaussian (``distributions.tanh_gaussian_sample``, sampled by
reparameterisation) and ``k``-step experience ``(s, a, r, discount, s')``:

    y     = r + discount · (min_i Q_target,i(s', a') − α log π(a'|s'))
    L_Q   = ½ Σ_i E_w[(Q_i(s, a) − y)²]                         (w: importance weights)
    L_π   = E[α log π(ã|s) − min_i Q_i(s, ã)],   ã ~ π(·|s)
    L_α   = −E[log α · (log π(ã|s) + H̄)],        H̄ = −dim(A)   (the target entropy)

``L_α`` raises α while the policy's entropy ``−E[log π]`` is below ``H̄`` and lowers it while it is
above, so the temperature keeps the entropy near the target instead of being tuned per task. It
is written in ``log α`` (as SB3 and arXiv:1812.05905's code do), which keeps α positive. Each
update steps the critic, then the actor against the new critic (CleanRL's order), then α on the
log-probabilities of the actor step's sample (SB3's), then the critics' targets by Polyak
averaging. Importance weights enter the critic loss only: they correct the regression target's
distribution, while the policy simply improves at the states sampled.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.core.names import BATCH, METRICS, TD_ERROR
from jaxrl_fdg.fragments import distributions as dist
from jaxrl_fdg.fragments.algorithms import continuous
from jaxrl_fdg.fragments.networks import ContinuousCritic, SquashedGaussianActor


@dataclasses.dataclass(frozen=True)
class SACConfig(continuous.ContinuousConfig):
    """SAC hyperparameters (each is a ``--flag`` of ``jaxrl-fdg train``), on top of those every
    continuous-control off-policy algorithm shares.

    The defaults are CleanRL's ``sac_continuous_action.py`` (Huang et al. 2022): Adam 3e-4 for the
    actor and 1e-3 for the critics and α, α learned from 1, a 5k-step warm-up, one update per env
    step, γ = 0.99, τ = 0.005, batches of 256, 256-256 ReLU networks; except that the actor is
    updated at every step as in the paper and SB3 (CleanRL: twice every second step).
    """

    critic_lr: float = hparam(1e-3, "the critics' Adam learning rate")
    autotune: bool = hparam(True, "learn α toward the target entropy −dim(A); else α stays fixed")
    alpha: float = hparam(1.0, "entropy temperature α; with autotune, its initial value")
    alpha_lr: float = hparam(1e-3, "learning rate of log α, by Adam")

    def __post_init__(self) -> None:
        super().__post_init__()
        validate.in_range("alpha", self.alpha, 0.0, math.inf, low_open=True)
        validate.in_range("alpha_lr", self.alpha_lr, 0.0, 1.0, low_open=True)


class SACState(NamedTuple):
    actor: continuous.Optimized
    critic: continuous.Critic
    log_alpha: continuous.Optimized
    updates: jax.Array


def check(ctx: AlgorithmContext[SACConfig]) -> None:
    continuous.check("sac", ctx)


def temperature_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> jax.Array:
    """``L_α = −mean(log α · (log π + H̄))``; ``log_prob`` is taken as a constant."""
    return -jnp.mean(log_alpha * (jax.lax.stop_gradient(log_prob) + target_entropy))


def sample_policy(
    actor_net: SquashedGaussianActor, params, observation: jax.Array, key: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``(a ~ π(·|s) in [−1, 1] [B, A], log π(a|s) [B])``, sampled by reparameterisation."""
    mean, log_std = actor_net.apply(params, observation)
    return dist.tanh_gaussian_sample(key, mean, log_std)


def build(ctx: AlgorithmContext[SACConfig]) -> Algorithm:
    hp = ctx.hparams
    actor_net = SquashedGaussianActor(
        action_dim=continuous.action_dim(ctx),
        hidden_sizes=tuple(hp.hidden_sizes),
        activation=hp.activation,
        **continuous.actor_input(ctx),
    )
    critic_net = continuous.critic_network(ctx)
    actor_tx, critic_tx, alpha_tx = (
        ctx.optimizer(optax.adam(lr)) for lr in (hp.actor_lr, hp.critic_lr, hp.alpha_lr)
    )

    def explore(params, observation, key):
        return sample_policy(actor_net, params, observation, key)[0]

    def mode(params, observation):
        """The squashed mean ``tanh(μ(s))``."""
        return dist.tanh_gaussian_mode(actor_net.apply(params, observation)[0])

    def init(key):
        k_actor, k_critic = jax.random.split(key)
        actor_params = actor_net.init(k_actor, continuous.observation_example(ctx))
        log_alpha = jnp.asarray(math.log(hp.alpha), jnp.float32)
        return SACState(
            continuous.Optimized(actor_params, actor_tx.init(actor_params)),
            continuous.init_critic(critic_net, critic_tx, ctx, k_critic),
            continuous.Optimized(log_alpha, alpha_tx.init(log_alpha)),
            jnp.zeros((), jnp.int32),
        )

    learn = _learner(ctx, actor_net, critic_net, actor_tx, critic_tx, alpha_tx)
    return continuous.build("sac", ctx, explore, mode, init, learn)


def _learner(
    ctx: AlgorithmContext[SACConfig],
    actor_net: SquashedGaussianActor,
    critic_net: ContinuousCritic,
    actor_tx: optax.GradientTransformation,
    critic_tx: optax.GradientTransformation,
    alpha_tx: optax.GradientTransformation,
):
    """The learner's ``apply``: ``(SACState, {"batch": Sample}, key) -> (SACState, outputs)``.

    One update steps the critic toward ``y``, the actor on ``L_π`` against the new critic, then
    ``log α`` on ``L_α`` with the actor step's log-probabilities (see the module docstring).
    """
    hp = ctx.hparams
    target_entropy = -float(continuous.action_dim(ctx))

    def learn(state: SACState, inputs, key):
        sample = inputs[BATCH]
        exp = sample.transitions
        k_next, k_actor = jax.random.split(key)
        alpha = jnp.exp(state.log_alpha.params)
        next_action, next_log_prob = sample_policy(
            actor_net, state.actor.params, exp.next_observation, k_next
        )
        count = state.updates + 1
        entropy = (alpha, next_log_prob)
        critic, metrics, td_error = continuous.td_critic_step(
            critic_net, critic_tx, ctx, state.critic, sample, next_action, count, entropy=entropy
        )
        actor, loss, log_prob = _actor_step(
            actor_net, critic_net, actor_tx, state.actor, critic, exp.observation, alpha, k_actor
        )
        log_alpha = state.log_alpha
        if hp.autotune:
            grad = jax.grad(temperature_loss)(log_alpha.params, log_prob, target_entropy)
            log_alpha = continuous.optimizer_step(alpha_tx, log_alpha, grad)
        metrics = {**metrics, "actor_loss": loss, "alpha": alpha, "entropy": -log_prob.mean()}
        return SACState(actor, critic, log_alpha, count), {
            METRICS: metrics,
            TD_ERROR: td_error,
        }

    return learn


def _actor_step(
    actor_net: SquashedGaussianActor,
    critic_net: ContinuousCritic,
    actor_tx: optax.GradientTransformation,
    actor: continuous.Optimized,
    critic: continuous.Critic,
    observation: jax.Array,
    alpha: jax.Array,
    key: jax.Array,
) -> tuple[continuous.Optimized, jax.Array, jax.Array]:
    """One gradient step of ``L_π = mean(α log π(ã|s) − min_i Q_i(s, ã))``, ``ã ~ π(·|s)``
    drawn with ``key``, through the updated ``critic`` (held fixed; α a constant).

    Returns ``(actor, L_π, log π(ã|s) [B])``; the log-probabilities feed ``L_α``.
    """

    def actor_loss(params):
        action, log_prob = sample_policy(actor_net, params, observation, key)
        q = critic_net.apply(critic.params, observation, action).min(axis=0)
        return jnp.mean(alpha * log_prob - q), log_prob

    (loss, log_prob), grads = jax.value_and_grad(actor_loss, has_aux=True)(actor.params)
    return continuous.optimizer_step(actor_tx, actor, grads), loss, log_prob


SPEC = AlgorithmSpec(
    name="sac",
    hparams=SACConfig,
    build=build,
    check=check,
    summary="Soft Actor-Critic with automatic entropy tuning (Haarnoja et al. 2018)",
    defaults=continuous.PENDULUM_RUN,
)

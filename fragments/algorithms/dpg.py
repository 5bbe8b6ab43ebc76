"""Deterministic policy gradients: TD3 and DDPG as two configurations of one actor and learner.

DDPG: Lillicrap, Hunt, Pritzel, Heess, Erez, Tassa, Silver & Wierstra (2016), "Continuous control
with deep reinforcement learning", arXiv:1509.02971. A deterministic actor ``μ(s) ∈ [−1, 1]`` and
a critic ``Q(s, a)``, each with a Polyak-averaged target copy (``'``):

    y   = r + discount · Q'(s', μ'(s'))
    L_Q = ½ E_w[(Q(s, a) − y)²]                     (w: importance weights)
    L_μ = −E[Q(s, μ(s))]                            (the deterministic policy gradient)

TD3: Fujimoto, van Hoof & Meger (2018), "Addressing Function Approximation Error in Actor-Critic
Methods", arXiv:1802.09477, adds three changes, each an option here:

* clipped double Q-learning (``num_critics = 2``): ``y`` bootstraps from ``min_i Q'_i``, which
  curbs the overestimation a maximising actor otherwise feeds on; the actor ascends ``Q_1``;
* delayed policy updates (``policy_delay = d``): the actor and all target networks are updated
  every ``d``-th critic update, so the actor follows a critic whose error has settled;
* target policy smoothing (``target_noise = σ̃``, ``target_noise_clip = c``):
  ``a' = clip(μ'(s') + clip(ε, −c, c), −1, 1)``, ``ε ~ N(0, σ̃²)``, which fits ``Q`` to a
  neighbourhood of the target action rather than to a sharp peak.

Both explore with Gaussian noise on the actor's output, ``clip(μ(s) + N(0, σ²), −1, 1)``, after
a warm-up of uniformly random actions. For DDPG that follows the re-implementation in the TD3
paper ("OurDDPG") and CleanRL rather than the Ornstein-Uhlenbeck noise of the DDPG paper, which
Fujimoto et al. found no better. Importance weights enter the critic loss only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import branch, validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.core.names import BATCH, METRICS, TD_ERROR
from jaxrl_fdg.fragments import exploration
from jaxrl_fdg.fragments.algorithms import continuous, offpolicy
from jaxrl_fdg.fragments.networks import ContinuousCritic, DeterministicActor


@dataclasses.dataclass(frozen=True)
class DPGConfig(continuous.ContinuousConfig):
    """Deterministic-policy-gradient hyperparameters (each is a ``--flag``), on top of those every
    continuous-control off-policy algorithm shares; the defaults are TD3's (:class:`TD3Config`),
    and :class:`DDPGConfig` turns TD3's three changes off."""

    learning_starts: int = hparam(10_000, "env steps of warm-up: random actions, no updates")
    exploration_noise: float = hparam(0.1, "σ of the exploration noise, in half-widths of the box")
    policy_delay: int = hparam(2, "critic updates per actor and target update")
    target_noise: float = hparam(0.2, "σ of the target policy smoothing noise; 0 turns it off")
    target_noise_clip: float = hparam(0.5, "bound c that clips the smoothing noise to [−c, c]")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("exploration_noise", "target_noise", "target_noise_clip"):
            validate.non_negative(name, getattr(self, name))
        validate.positive_int("policy_delay", self.policy_delay)


@dataclasses.dataclass(frozen=True)
class TD3Config(DPGConfig):
    """TD3's defaults: those of the authors' repository (github.com/sfujim/TD3, updated after the
    paper, which used 400-300 networks, Adam 1e-3 and batches of 100) and of CleanRL's
    ``td3_continuous_action.py``: Adam 3e-4 for both networks, twin critics, a policy update
    every 2 critic updates, smoothing noise 0.2 clipped at 0.5, exploration noise 0.1,
    γ = 0.99, τ = 0.005, batches of 256, 256-256 ReLU networks; with the paper's 10k-step
    warm-up (the repository and CleanRL: 25k, for 1M-step MuJoCo runs)."""


@dataclasses.dataclass(frozen=True)
class DDPGConfig(DPGConfig):
    """DDPG's defaults: the re-implementation in the TD3 authors' repository ("OurDDPG"): one
    critic, the actor and the targets updated with every critic update, no target smoothing, and
    otherwise TD3's settings. (CleanRL's ``ddpg_continuous_action.py`` also updates the actor only
    every second step.)"""

    num_critics: int = hparam(1, "critics in the ensemble; the TD target takes their minimum")
    policy_delay: int = hparam(1, "critic updates per actor and target update")
    target_noise: float = hparam(0.0, "σ of the target policy smoothing noise; 0 turns it off")


class DPGState(NamedTuple):
    actor: continuous.Optimized
    actor_target: Any
    critic: continuous.Critic
    updates: jax.Array


def target_action(hp: DPGConfig, action: jax.Array, key: jax.Array) -> jax.Array:
    """The action the TD target bootstraps from: ``μ'(s')``, with TD3's clipped smoothing noise
    when ``target_noise > 0``."""
    if hp.target_noise > 0:
        return exploration.gaussian_noise(key, action, hp.target_noise, hp.target_noise_clip)
    return action


def make_build(name: str):
    """``build`` for the algorithm registered as ``name``; only the hyperparameters differ."""

    def build(ctx: AlgorithmContext[DPGConfig]) -> Algorithm:
        hp = ctx.hparams
        actor_net = DeterministicActor(
            action_dim=continuous.action_dim(ctx),
            hidden_sizes=tuple(hp.hidden_sizes),
            activation=hp.activation,
            **continuous.actor_input(ctx),
        )
        critic_net = continuous.critic_network(ctx)
        actor_tx = ctx.optimizer(optax.adam(hp.actor_lr))
        critic_tx = ctx.optimizer(optax.adam(hp.critic_lr))

        def explore(params, observation, key):
            action = actor_net.apply(params, observation)
            return exploration.gaussian_noise(key, action, hp.exploration_noise)

        def init(key):
            k_actor, k_critic = jax.random.split(key)
            params = actor_net.init(k_actor, continuous.observation_example(ctx))
            return DPGState(
                continuous.Optimized(params, actor_tx.init(params)),
                params,
                continuous.init_critic(critic_net, critic_tx, ctx, k_critic),
                jnp.zeros((), jnp.int32),
            )

        learn = _learner(ctx, actor_net, critic_net, actor_tx, critic_tx)
        return continuous.build(name, ctx, explore, actor_net.apply, init, learn)

    return build


def _learner(
    ctx: AlgorithmContext[DPGConfig],
    actor_net: DeterministicActor,
    critic_net: ContinuousCritic,
    actor_tx: optax.GradientTransformation,
    critic_tx: optax.GradientTransformation,
):
    """The learner's ``apply``: ``(DPGState, {"batch": Sample}, key) -> (DPGState, outputs)``.

    One update steps the critic toward ``y`` (``key`` draws the target smoothing noise), then,
    every ``policy_delay``-th update, the actor against the new critic and all targets.
    """
    hp = ctx.hparams

    def learn(state: DPGState, inputs, key):
        sample = inputs[BATCH]
        exp = sample.transitions
        next_action = target_action(
            hp, actor_net.apply(state.actor_target, exp.next_observation), key
        )
        count = state.updates + 1
        critic, metrics, td_error = continuous.td_critic_step(
            critic_net, critic_tx, ctx, state.critic, sample, next_action, count, hp.policy_delay
        )
        actor, loss = _delayed_actor_step(
            actor_net, critic_net, actor_tx, state.actor, critic, exp.observation, count, hp
        )
        actor_target = offpolicy.update_target(
            state.actor_target, actor.params, count, hp.tau, hp.policy_delay
        )
        metrics = {**metrics, "actor_loss": loss}
        return DPGState(actor, actor_target, critic, count), {
            METRICS: metrics,
            TD_ERROR: td_error,
        }

    return learn


def _delayed_actor_step(
    actor_net: DeterministicActor,
    critic_net: ContinuousCritic,
    actor_tx: optax.GradientTransformation,
    actor: continuous.Optimized,
    critic: continuous.Critic,
    observation: jax.Array,
    updates: jax.Array,
    hp: DPGConfig,
) -> tuple[continuous.Optimized, jax.Array]:
    """The deterministic policy gradient step on ``L_μ = −mean(Q_1(s, μ(s)))`` through the updated
    ``critic`` (held fixed), taken when ``updates`` is a multiple of ``hp.policy_delay`` (TD3's
    delayed policy updates); otherwise the actor is kept. ``observation`` is ``[B, ...]``.

    Returns ``(actor, L_μ)``; ``L_μ`` is reported either way.
    """

    def actor_loss(params):
        action = actor_net.apply(params, observation)
        return -critic_net.apply(critic.params, observation, action)[0].mean()

    def update_actor(actor):
        loss, grads = jax.value_and_grad(actor_loss)(actor.params)
        return continuous.optimizer_step(actor_tx, actor, grads), loss

    def keep_actor(actor):
        return actor, actor_loss(actor.params)

    return branch.cond(updates % hp.policy_delay == 0, update_actor, keep_actor, actor)


def make_check(name: str):
    return lambda ctx: continuous.check(name, ctx)


TD3_SPEC = AlgorithmSpec(
    name="td3",
    hparams=TD3Config,
    build=make_build("td3"),
    check=make_check("td3"),
    summary="Twin Delayed DDPG: clipped double Q, delayed policy, target smoothing (Fujimoto 2018)",
    defaults=continuous.PENDULUM_RUN,
)
DDPG_SPEC = AlgorithmSpec(
    name="ddpg",
    hparams=DDPGConfig,
    build=make_build("ddpg"),
    check=make_check("ddpg"),
    summary="Deep Deterministic Policy Gradient, Gaussian exploration (Lillicrap et al. 2016)",
    defaults=continuous.PENDULUM_RUN,
)

"""Proximal Policy Optimization as an actor and a learner fragment, discrete or continuous actions.

Schulman, Wolski, Dhariwal, Radford & Klimov (2017), "Proximal Policy Optimization Algorithms",
arXiv:1707.06347; details as catalogued by Huang et al. (2022), "The 37 Implementation Details of
PPO": GAE, clipped surrogate, clipped value loss, entropy bonus, per-minibatch advantage
normalisation, shuffled minibatch epochs, global-norm gradient clipping, linear LR annealing,
orthogonal initialisation, bootstrapping on truncation but not on termination. Each minibatch
minimises

    ρ = π(a|s) / π_old(a|s)
    L = −E[min(ρ A, clip(ρ, 1 − ε, 1 + ε) A)] + c_v · ½ E[max((V − G)², (V_clip − G)²)] − c_H H[π]

with ``V_clip = V_old + clip(V − V_old, −ε_v, ε_v)`` (``vf_clip = inf`` turns value clipping off).

A ``Discrete`` action space gets a categorical policy; a one-dimensional ``Box`` gets a diagonal
Gaussian with a state-independent learnable log-std, whose sample is clipped to the box for the
env only (``fragments.algorithms.actor_critic``). Everything but the loss and the minibatch epochs
is shared with A2C through ``fragments.algorithms.actor_critic``.
"""

from __future__ import annotations

import dataclasses

import jax
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.algorithms import actor_critic as ac
from jaxrl_fdg.fragments.minibatch import minibatch_epochs, sequence_minibatch_epochs


@dataclasses.dataclass(frozen=True)
class PPOConfig(ac.ActorCriticConfig):
    """PPO hyperparameters (each is a ``--flag`` of ``jaxrl-fdg train``): those of
    :class:`~jaxrl_fdg.fragments.algorithms.actor_critic.ActorCriticConfig`, with PureJaxRL's
    CartPole defaults, plus the clipping ranges and the minibatch epochs."""

    clip_eps: float = hparam(0.2, "clipping range ε of the policy's probability ratio")
    vf_clip: float = hparam(0.2, "clipping range of the value loss around the rollout's values")
    update_epochs: int = hparam(4, "passes over each rollout's batch")
    num_minibatches: int = hparam(4, "minibatches each pass splits the batch into")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("clip_eps", "vf_clip"):
            validate.non_negative(name, getattr(self, name))
        validate.positive_int("update_epochs", self.update_epochs)
        validate.positive_int("num_minibatches", self.num_minibatches)


def check(ctx: AlgorithmContext[PPOConfig]) -> None:
    """Reject configurations PPO cannot run, before anything is compiled."""
    ac.check("ppo", ctx)
    validate.divides(
        "num_minibatches",
        ctx.hparams.num_minibatches,
        "num_envs × rollout_len",
        ctx.batch_size,
    )
    hp = ctx.hparams
    if hp.memory != "none":  # minibatches of whole env sequences
        validate.divides(
            "num_minibatches",
            hp.num_minibatches,
            f"num_envs (memory {hp.memory!r} splits minibatches by environment)",
            ctx.num_envs,
        )


def optimizer(ctx: AlgorithmContext[PPOConfig]) -> optax.GradientTransformation:
    hp = ctx.hparams
    updates = ctx.num_iterations * hp.update_epochs * hp.num_minibatches
    return ac.optimizer(ctx, updates, lambda lr: optax.adam(lr, eps=1e-5))


def build(ctx: AlgorithmContext[PPOConfig], policy: ac.Policy | None = None) -> Algorithm:
    """The algorithm's fragments; ``policy`` replaces its policy and value network by one of
    the caller's (``ac.Policy(ctx, network=...)``: a custom head, a shared torso)."""
    hp = ctx.hparams
    policy = ac.Policy(ctx) if policy is None else policy
    tx = optimizer(ctx)

    def loss(params, mb: ac.Batch | ac.Sequences):
        log_prob, entropy, value = policy.evaluate_batch(params, mb)
        policy_loss, clip_frac = losses.clipped_surrogate_loss(
            log_prob, mb.log_prob, ac.advantages(hp, mb), hp.clip_eps
        )
        value_loss = losses.clipped_value_loss(value, mb.value, mb.target, hp.vf_clip)
        return ac.total_loss(
            hp,
            policy_loss,
            value_loss,
            entropy.mean(),
            approx_kl=losses.approx_kl(log_prob, mb.log_prob),
            clip_fraction=clip_frac,
        )

    step = ac.gradient_step(loss, tx)
    # A recurrent policy's minibatches are whole env sequences (fragments.minibatch).
    epochs = sequence_minibatch_epochs if policy.recurrent else minibatch_epochs

    def update(state: ac.LearnerState, batch: ac.Batch | ac.Sequences, key: jax.Array):
        return epochs(
            state,
            batch,
            key,
            epochs=hp.update_epochs,
            num_minibatches=hp.num_minibatches,
            update=step,
            group=policy.game_size,  # a network per agent: minibatches of whole games
        )

    return ac.algorithm("ppo", ctx, policy, tx, update)


SPEC = AlgorithmSpec(
    name="ppo",
    hparams=PPOConfig,
    build=build,
    check=check,
    summary="Proximal Policy Optimization, discrete or continuous actions (Schulman et al. 2017)",
    # PureJaxRL's CartPole run: 500,000 steps of 4 envs × 128.
    defaults=dict(env="CartPole-v1", total_steps=500_000, num_envs=4, rollout_len=128),
)

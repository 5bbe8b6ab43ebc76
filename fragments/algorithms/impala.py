"""IMPALA's learner: an actor-critic corrected by V-trace for data its actors collected with
older parameters, discrete or continuous actions.

Espeholt, Soyer, Munos, Simonyan, Mnih, Ward, Doron, Firoiu, Harley, Dunning, Legg &
Kavukcuoglu (2018), "IMPALA: Scalable Distributed Deep-RL with Importance Weighted
Actor-Learner Architectures", arXiv:1802.01561. The actors record ``log μ(a_t|s_t)``, the
probability of what they did under the parameters they had; the learner computes, with its
current parameters, ``V``, ``log π`` and from them the V-trace targets ``v_t`` and advantages
``A^π_t`` (``losses.vtrace``), then takes one gradient step on

    L = −E[log π(a_t|s_t) A^π_t] + c_v · ½ E[(V(s_t) − v_t)²] − c_H E[H[π(·|s_t)]]

The lag the correction is for comes from the placement: ``--policy-lag 1`` learns from the
rollout collected one iteration earlier (asynchronous actors; with ``--placement actor_learner``
the rollout and the learner run on two devices at once). Without lag every ratio π/μ is 1 and
IMPALA is A2C with n-step returns to the rollout's end (GAE with λ = 1), which the tests check.

The defaults are A2C's (its RMSprop, one gradient step per rollout, and for CartPole-v1 its
8 environments × 5 steps) with the paper's gradient clipping at 40, entropy weight 0.01 and
baseline weight 0.5 (``vf_coef`` 1.0 on the ½-squared error); the paper unrolls 20 steps on
Atari. Recurrent policies are not supported here.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.core.names import LOG_PROB
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.algorithms import a2c
from jaxrl_fdg.fragments.algorithms import actor_critic as ac


@dataclasses.dataclass(frozen=True)
class IMPALAConfig(a2c.A2CConfig):
    """IMPALA's hyperparameters (each is a ``--flag``): A2C's, with the paper's clipping and
    weights, the truncation levels of the importance weights, and ``gae_lambda`` as the λ of
    V-trace's traces."""

    ent_coef: float = hparam(0.01, "weight of the entropy bonus")
    max_grad_norm: float = hparam(40.0, "clip gradients to this global norm")
    gae_lambda: float = hparam(1.0, "λ of V-trace's traces: c_t = λ min(c̄, π/μ)")
    rho_bar: float = hparam(1.0, "ρ̄: where the importance weights of the TD errors are truncated")
    c_bar: float = hparam(1.0, "c̄: where the importance weights of the traces are truncated")

    def __post_init__(self) -> None:
        super().__post_init__()
        validate.positive("rho_bar", self.rho_bar)
        validate.positive("c_bar", self.c_bar)


def check(ctx: AlgorithmContext[IMPALAConfig]) -> None:
    """Reject configurations IMPALA cannot run, before anything is compiled."""
    ac.check("impala", ctx)
    if ctx.hparams.memory != "none":
        raise ConfigError(
            f"impala supports feed-forward policies only (memory = {ctx.hparams.memory!r}); "
            "use a2c or ppo for a recurrent policy"
        )


def build(ctx: AlgorithmContext[IMPALAConfig], policy: ac.Policy | None = None) -> Algorithm:
    """The algorithm's fragments; ``policy`` replaces its policy and value network by one of
    the caller's (``ac.Policy(ctx, network=...)``: a custom head, a shared torso)."""
    hp = ctx.hparams
    policy = ac.Policy(ctx) if policy is None else policy
    tx = a2c.optimizer(ctx)

    def loss(params, trajectory: Transition):
        # One forward pass serves the gradient and, stopped, the V-trace targets.
        action = policy.learned_action(trajectory)
        mask = policy.action_mask(trajectory)  # None without an action mask
        log_prob, entropy, value = policy.evaluate(params, trajectory.observation, action, mask)
        value_next = policy.value(params, trajectory.next_observation)
        targets, advantages = losses.vtrace(
            value,
            value_next,
            trajectory.reward * hp.reward_scaling,
            trajectory.terminated,
            trajectory.truncated,
            log_prob - trajectory.extras[LOG_PROB],
            hp.gamma,
            hp.rho_bar,
            hp.c_bar,
            hp.gae_lambda,
        )
        if hp.normalize_advantages:
            advantages = losses.normalize(advantages)
        policy_loss = -(log_prob * advantages).mean()
        value_loss = 0.5 * ((value - targets) ** 2).mean()
        ratio = jnp.exp(jax.lax.stop_gradient(log_prob - trajectory.extras[LOG_PROB]))
        return ac.total_loss(hp, policy_loss, value_loss, entropy.mean(), ratio_mean=ratio.mean())

    step = ac.gradient_step(loss, tx)

    def update(state: ac.LearnerState, trajectory: Transition, key: jax.Array):
        del key  # one full-batch step: nothing to shuffle
        return step(state, trajectory)

    def time_major(policy, params, trajectory, hp):
        del policy, params, hp  # the loss takes the rollout as it is, [T, B]
        return trajectory

    return ac.algorithm("impala", ctx, policy, tx, update, prepare=time_major)


SPEC = AlgorithmSpec(
    name="impala",
    hparams=IMPALAConfig,
    build=build,
    check=check,
    summary="IMPALA: actor-critic with V-trace off-policy correction (Espeholt et al. 2018)",
    defaults=dict(env="CartPole-v1", total_steps=500_000, num_envs=8, rollout_len=5),
)

"""Proximal Policy Optimization (discrete actions) as an actor and a learner fragment.

Schulman, Wolski, Dhariwal, Radford & Klimov (2017), "Proximal Policy Optimization Algorithms",
arXiv:1707.06347; details as catalogued by Huang et al. (2022), "The 37 Implementation Details of
PPO": GAE, clipped surrogate, clipped value loss, entropy bonus, per-minibatch advantage
normalisation, shuffled minibatch epochs, global-norm gradient clipping, linear LR annealing,
orthogonal initialisation, bootstrapping on truncation but not on termination.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec
from jaxrl_fdg.envs.spaces import Discrete
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragment import Role, fragment
from jaxrl_fdg.fragments import distributions as dist
from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.minibatch import minibatch_epochs
from jaxrl_fdg.fragments.networks import ACTIVATIONS, ActorCritic


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters (each is a ``--flag`` of ``jaxrl-fdg train``)."""

    lr: float = 2.5e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    vf_clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    update_epochs: int = 4
    num_minibatches: int = 4
    anneal_lr: bool = True
    normalize_advantages: bool = True
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"

    def __post_init__(self) -> None:
        validate.in_range("lr", self.lr, 0.0, 1.0, low_open=True)
        validate.in_range("gamma", self.gamma, 0.0, 1.0)
        validate.in_range("gae_lambda", self.gae_lambda, 0.0, 1.0)
        for name in ("clip_eps", "vf_clip", "ent_coef", "vf_coef", "max_grad_norm"):
            validate.non_negative(name, getattr(self, name))
        validate.positive_int("update_epochs", self.update_epochs)
        validate.positive_int("num_minibatches", self.num_minibatches)
        if not self.hidden_sizes:
            raise ConfigError("hidden_sizes must name at least one layer size")
        for size in self.hidden_sizes:
            validate.positive_int("hidden_sizes entry", size)
        validate.choice("activation", self.activation, ACTIVATIONS)


class PPOState(NamedTuple):
    params: Any
    opt_state: optax.OptState


class Batch(NamedTuple):
    observation: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


def check(ctx: AlgorithmContext) -> None:
    """Reject configurations PPO cannot run, before anything is compiled."""
    if not isinstance(ctx.action_space, Discrete):
        raise ConfigError(
            f"ppo (discrete) needs a Discrete action space, got {type(ctx.action_space).__name__}"
        )
    validate.divides(
        "num_minibatches",
        ctx.hparams.num_minibatches,
        "num_envs × rollout_len",
        ctx.batch_size,
    )


def network(ctx: AlgorithmContext) -> ActorCritic:
    hp = ctx.hparams
    return ActorCritic(
        num_actions=ctx.action_space.n,
        hidden_sizes=tuple(hp.hidden_sizes),
        activation=hp.activation,
        obs_ndim=len(ctx.observation_space.shape),
    )


def optimizer(ctx: AlgorithmContext) -> optax.GradientTransformation:
    hp = ctx.hparams
    lr: float | optax.Schedule = hp.lr
    if hp.anneal_lr:
        updates = ctx.num_iterations * hp.update_epochs * hp.num_minibatches
        lr = optax.linear_schedule(hp.lr, 0.0, updates)
    return optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(lr, eps=1e-5))


def build(ctx: AlgorithmContext) -> Algorithm:
    hp: PPOConfig = ctx.hparams
    net = network(ctx)
    tx = optimizer(ctx)
    obs_example = jnp.zeros(ctx.observation_space.shape, ctx.observation_space.dtype)

    def act(state, inputs, key):
        logits, value = net.apply(inputs["params"], inputs["observation"])
        action = dist.categorical_sample(key, logits)
        log_prob = dist.categorical_log_prob(logits, action)
        return state, {"action": action, "log_prob": log_prob, "value": value}

    def init(key):
        params = net.init(key, obs_example)
        return PPOState(params, tx.init(params))

    def loss(params, mb: Batch):
        logits, value = net.apply(params, mb.observation)
        log_prob = dist.categorical_log_prob(logits, mb.action)
        advantage = losses.normalize(mb.advantage) if hp.normalize_advantages else mb.advantage
        policy_loss, clip_frac = losses.clipped_surrogate_loss(
            log_prob, mb.log_prob, advantage, hp.clip_eps
        )
        value_loss = losses.clipped_value_loss(value, mb.value, mb.target, hp.vf_clip)
        entropy = dist.categorical_entropy(logits).mean()
        total = policy_loss + hp.vf_coef * value_loss - hp.ent_coef * entropy
        metrics = {
            "loss": total,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": losses.approx_kl(log_prob, mb.log_prob),
            "clip_fraction": clip_frac,
        }
        return total, metrics

    def update_minibatch(state: PPOState, mb: Batch):
        grads, metrics = jax.grad(loss, has_aux=True)(state.params, mb)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        return PPOState(optax.apply_updates(state.params, updates), opt_state), metrics

    def learn(state: PPOState, inputs, key):
        traj = inputs["trajectory"]
        value_next = net.apply(state.params, traj.next_observation, method=ActorCritic.value)
        advantage, target = losses.generalized_advantage_estimation(
            traj.reward,
            traj.extras["value"],
            value_next,
            traj.terminated,
            traj.truncated,
            hp.gamma,
            hp.gae_lambda,
        )
        batch = Batch(
            traj.observation,
            traj.action,
            traj.extras["log_prob"],
            traj.extras["value"],
            advantage,
            target,
        )
        flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), batch)
        state, metrics = minibatch_epochs(
            state,
            flat,
            key,
            epochs=hp.update_epochs,
            num_minibatches=hp.num_minibatches,
            update=update_minibatch,
        )
        return state, {"metrics": metrics}

    actor = fragment(
        "actor",
        Role.ACTOR,
        act,
        inputs=("observation", "params"),
        outputs=("action", "log_prob", "value"),
    )
    learner = fragment(
        "learner",
        Role.LEARNER,
        learn,
        init=init,
        inputs=("trajectory",),
        outputs=("metrics",),
        publish=lambda state: {"params": state.params},
        published=("params",),
    )
    return Algorithm("ppo", actor, learner)


SPEC = AlgorithmSpec(
    name="ppo",
    hparams=PPOConfig,
    build=build,
    check=check,
    summary="Proximal Policy Optimization, discrete actions (Schulman et al. 2017)",
)

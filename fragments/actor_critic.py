"""What the actor-critic algorithms (PPO, A2C) share, written once.

They differ only in their loss and in how they spend a rollout (PPO: epochs of shuffled
minibatches; A2C: one gradient step). Everything else lives here: the hyperparameters they have in
common, the policy for either kind of action space, the actor fragment, advantages and value
targets, the optimizer's frame, and the learner fragment.

Actions. A ``Discrete`` space gets a categorical policy. A one-dimensional ``Box`` gets a diagonal
Gaussian with a state-independent log-std (:class:`~jaxrl_fdg.fragments.networks.
GaussianActorCritic`): the actor samples an unbounded ``raw_action`` and sends the env that sample
clipped to the box, as OpenAI baselines and Stable-Baselines3 do. The learner's log-probabilities
are of the raw sample, the one the Gaussian actually drew; the clipped one has no density under
it. The raw sample reaches the learner as ``trajectory.extras["raw_action"]``, while
``trajectory.action`` holds what the env received.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, hparam
from jaxrl_fdg.core.fragment import Fragment, Role, fragment
from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.envs.spaces import Box, Discrete
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments import distributions as dist
from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.networks import (
    ACTIVATIONS,
    TORSOS,
    ActorCritic,
    ConvTorso,
    GaussianActorCritic,
)

Metrics = dict[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class ActorCriticConfig:
    """Hyperparameters every actor-critic algorithm has (each is a ``--flag``).

    An algorithm's own config subclasses this, adds its fields and may change defaults.
    """

    lr: float = hparam(2.5e-4, "learning rate; with anneal_lr, where its linear decay to 0 starts")
    gamma: float = hparam(0.99, "discount factor γ")
    gae_lambda: float = hparam(0.95, "λ of GAE; 1 gives n-step returns to the rollout's end")
    ent_coef: float = hparam(0.01, "weight of the entropy bonus")
    vf_coef: float = hparam(0.5, "weight of the value loss")
    max_grad_norm: float = hparam(0.5, "clip gradients to this global norm")
    anneal_lr: bool = hparam(True, "decay the learning rate linearly to 0 over the run")
    normalize_advantages: bool = hparam(True, "standardise advantages over each (mini)batch")
    hidden_sizes: tuple[int, ...] = hparam((64, 64), "layer sizes of the policy and value MLPs")
    activation: str = hparam("tanh", f"hidden-layer activation: {', '.join(ACTIVATIONS)}")
    torso: str = hparam("mlp", "mlp, or cnn: 3×3 convolutions first, for image observations")
    log_std_init: float = hparam(0.0, "initial log std of the Gaussian policy, for Box actions")

    def __post_init__(self) -> None:
        validate.in_range("lr", self.lr, 0.0, 1.0, low_open=True)
        validate.in_range("gamma", self.gamma, 0.0, 1.0)
        validate.in_range("gae_lambda", self.gae_lambda, 0.0, 1.0)
        for name in ("ent_coef", "vf_coef", "max_grad_norm"):
            validate.non_negative(name, getattr(self, name))
        if not self.hidden_sizes:
            raise ConfigError("hidden_sizes must name at least one layer size")
        for size in self.hidden_sizes:
            validate.positive_int("hidden_sizes entry", size)
        validate.choice("activation", self.activation, ACTIVATIONS)
        validate.choice("torso", self.torso, TORSOS)
        if not isinstance(self.log_std_init, int | float) or not math.isfinite(self.log_std_init):
            raise ConfigError(f"log_std_init must be a finite number, got {self.log_std_init!r}")


def check(name: str, ctx: AlgorithmContext) -> None:
    """Reject spaces the policy cannot handle, before anything is compiled."""
    space, obs_shape = ctx.action_space, tuple(ctx.observation_space.shape)
    if isinstance(space, Box):
        if len(space.shape) != 1:
            raise ConfigError(
                f"{name} needs a Discrete or a one-dimensional Box action space, "
                f"got a Box of shape {tuple(space.shape)}"
            )
    elif not isinstance(space, Discrete):
        raise ConfigError(
            f"{name} needs a Discrete or Box action space, got {type(space).__name__}"
        )
    size = ConvTorso().min_size
    if ctx.hparams.torso == "cnn" and (len(obs_shape) != 3 or min(obs_shape[:2]) < size):
        raise ConfigError(
            f"torso 'cnn' needs image observations [height, width, channels] of at least "
            f"{size} × {size}, got shape {obs_shape}; use torso 'mlp' for this environment"
        )


class Policy:
    """The policy and value network of an actor-critic, for a Discrete or a Box action space."""

    def __init__(self, ctx: AlgorithmContext):
        hp: ActorCriticConfig = ctx.hparams
        space = ctx.action_space
        common = dict(
            hidden_sizes=tuple(hp.hidden_sizes),
            activation=hp.activation,
            obs_ndim=len(ctx.observation_space.shape),
            torso=hp.torso,
        )
        self.continuous = isinstance(space, Box)
        if self.continuous:
            (dim,) = space.shape
            self.net: ActorCritic = GaussianActorCritic(dim, log_std_init=hp.log_std_init, **common)
            self.low = np.broadcast_to(np.asarray(space.low, np.float32), space.shape)
            self.high = np.broadcast_to(np.asarray(space.high, np.float32), space.shape)
            self.outputs: tuple[str, ...] = ("action", "raw_action", "log_prob", "value")
        else:
            self.net = ActorCritic(space.n, **common)
            self.outputs = ("action", "log_prob", "value")
        self.obs_example = jnp.zeros(ctx.observation_space.shape, ctx.observation_space.dtype)

    def init(self, key: jax.Array) -> Any:
        return self.net.init(key, self.obs_example)

    def act(self, params: Any, observation: jax.Array, key: jax.Array) -> dict[str, jax.Array]:
        """Sample an action for each observation: the actor fragment's outputs."""
        if self.continuous:
            mean, log_std, value = self.net.apply(params, observation)
            raw = dist.gaussian_sample(key, mean, log_std)
            return {
                "action": jnp.clip(raw, self.low, self.high),
                "raw_action": raw,
                "log_prob": dist.gaussian_log_prob(mean, log_std, raw),
                "value": value,
            }
        logits, value = self.net.apply(params, observation)
        action = dist.categorical_sample(key, logits)
        return {
            "action": action,
            "log_prob": dist.categorical_log_prob(logits, action),
            "value": value,
        }

    def evaluate(
        self, params: Any, observation: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(log π(a|s), H(π(·|s)), V(s))`` under ``params``; ``action`` as the learner stores it
        (:meth:`learned_action`)."""
        if self.continuous:
            mean, log_std, value = self.net.apply(params, observation)
            log_prob = dist.gaussian_log_prob(mean, log_std, action)
            return log_prob, dist.gaussian_entropy(log_std), value
        logits, value = self.net.apply(params, observation)
        log_prob = dist.categorical_log_prob(logits, action)
        return log_prob, dist.categorical_entropy(logits), value

    def value(self, params: Any, observation: jax.Array) -> jax.Array:
        return self.net.apply(params, observation, method=ActorCritic.value)

    def mode(self, params: Any, observation: jax.Array) -> jax.Array:
        """The deterministic policy (for evaluation): the most probable action, or the Gaussian's
        mean clipped to the box."""
        if self.continuous:
            mean, _, _ = self.net.apply(params, observation)
            return jnp.clip(mean, self.low, self.high)
        logits, _ = self.net.apply(params, observation)
        return dist.categorical_mode(logits)

    def learned_action(self, trajectory: Transition) -> jax.Array:
        """The action whose log-probability the learner evaluates: the raw Gaussian sample for a
        Box (the env got it clipped), the action itself for a Discrete space."""
        return trajectory.extras["raw_action"] if self.continuous else trajectory.action


def actor(policy: Policy) -> Fragment:
    """The actor fragment: ``(observation, params) -> action, [raw_action,] log_prob, value``."""

    def act(state, inputs, key):
        return state, policy.act(inputs["params"], inputs["observation"], key)

    return fragment(
        "actor", Role.ACTOR, act, inputs=("observation", "params"), outputs=policy.outputs
    )


class LearnerState(NamedTuple):
    params: Any
    opt_state: optax.OptState


class Batch(NamedTuple):
    """A rollout flattened to ``[T·B, ...]``, with advantages and value targets."""

    observation: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


def make_batch(policy: Policy, params: Any, trajectory: Transition, hp: ActorCriticConfig) -> Batch:
    """GAE(γ, λ) advantages and value targets for a rollout, flattened over time and envs.

    ``V(s'_t)`` comes from ``next_observation`` (the final observation where an episode ended),
    so truncation bootstraps and termination does not (``losses.generalized_advantage_
    estimation``).
    """
    value_next = policy.value(params, trajectory.next_observation)
    advantage, target = losses.generalized_advantage_estimation(
        trajectory.reward,
        trajectory.extras["value"],
        value_next,
        trajectory.terminated,
        trajectory.truncated,
        hp.gamma,
        hp.gae_lambda,
    )
    batch = Batch(
        trajectory.observation,
        policy.learned_action(trajectory),
        trajectory.extras["log_prob"],
        trajectory.extras["value"],
        advantage,
        target,
    )
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), batch)


def advantages(hp: ActorCriticConfig, batch: Batch) -> jax.Array:
    """The batch's advantages, standardised over the (mini)batch when ``normalize_advantages``."""
    return losses.normalize(batch.advantage) if hp.normalize_advantages else batch.advantage


def total_loss(
    hp: ActorCriticConfig,
    policy_loss: jax.Array,
    value_loss: jax.Array,
    entropy: jax.Array,
    **extra: jax.Array,
) -> tuple[jax.Array, Metrics]:
    """``L = L_π + c_v L_V − c_H H`` and the metrics every actor-critic reports (plus ``extra``)."""
    total = policy_loss + hp.vf_coef * value_loss - hp.ent_coef * entropy
    metrics = {
        "loss": total,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        **extra,
    }
    return total, metrics


def optimizer(
    ctx: AlgorithmContext,
    num_updates: int,
    make: Callable[[float | optax.Schedule], optax.GradientTransformation],
) -> optax.GradientTransformation:
    """Global-norm gradient clipping, then ``make(lr)``, as the context hands it to a learner;
    with ``anneal_lr`` the learning rate falls linearly from ``lr`` to 0 over ``num_updates``
    gradient steps (the whole run)."""
    hp: ActorCriticConfig = ctx.hparams
    lr: float | optax.Schedule = hp.lr
    if hp.anneal_lr:
        lr = optax.linear_schedule(hp.lr, 0.0, num_updates)
    return ctx.optimizer(optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), make(lr)))


def gradient_step(
    loss: Callable[[Any, Batch], tuple[jax.Array, Metrics]],
    tx: optax.GradientTransformation,
) -> Callable[[LearnerState, Batch], tuple[LearnerState, Metrics]]:
    """One optimizer step on ``loss(params, batch) -> (loss, metrics)``."""

    def update(state: LearnerState, batch: Batch) -> tuple[LearnerState, Metrics]:
        grads, metrics = jax.grad(loss, has_aux=True)(state.params, batch)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        return LearnerState(optax.apply_updates(state.params, updates), opt_state), metrics

    return update


def algorithm(
    name: str,
    ctx: AlgorithmContext,
    policy: Policy,
    tx: optax.GradientTransformation,
    update: Callable[[LearnerState, Batch, jax.Array], tuple[LearnerState, Metrics]],
) -> Algorithm:
    """The actor and the learner fragment; the learner turns each rollout into a :class:`Batch`
    and hands it to ``update(state, batch, key)``, the algorithm's own part."""

    def init(key):
        params = policy.init(key)
        return LearnerState(params, tx.init(params))

    def learn(state: LearnerState, inputs, key):
        batch = make_batch(policy, state.params, inputs["trajectory"], ctx.hparams)
        state, metrics = update(state, batch, key)
        return state, {"metrics": metrics}

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
    return Algorithm(name, actor(policy), learner, policy=policy.mode)

"""What the continuous-control off-policy algorithms (SAC, TD3, DDPG) share.

* Their hyperparameters beyond replay (:class:`ContinuousConfig`): discount, Polyak rate, learning
  rates, the critic ensemble's size and the networks' shape.
* Action scaling. Networks act in ``[−1, 1]`` (a ``tanh`` output); the env and the replay see
  env-scale actions (``exploration.to_box``), so the replay holds what the env was given and the
  learner maps it back (``exploration.from_box``) before feeding it to a critic.
* The actor fragment: uniformly random actions over the box during the warm-up, the algorithm's
  exploring policy after it.
* The critic: an ensemble of ``Q(s, a)`` networks regressed on one target ``y`` with
  importance weights ``w`` (ones for uniform replay),

      L(θ) = ½ Σ_i E_w[(Q_θi(s, a) − y)²]

  followed by the Polyak update of its target network; each algorithm computes ``y`` its way.
* Brax's two options: ``reward_scaling`` in the TD target, and ``normalize_observations``
  (running moments of every observation collected, applied to the sampled batches and published
  with the actor's parameters;
  :func:`~jaxrl_fdg.fragments.normalization.normalized_observations`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, hparam
from jaxrl_fdg.core.names import ACTION, OBSERVATION, PARAMS
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.fragments import exploration, losses, normalization
from jaxrl_fdg.fragments.algorithms import offpolicy
from jaxrl_fdg.fragments.networks import ACTIVATIONS, ContinuousCritic
from jaxrl_fdg.fragments.torsos import (
    ACTOR_OBSERVATION_HELP,
    CRITIC_OBSERVATION_HELP,
    observation_ndim,
    observation_part,
)

# The run SAC, TD3 and DDPG default to (``AlgorithmSpec.defaults``): Pendulum-v1, which each
# solves in about 20,000 steps (CleanRL's and the TD3 authors' settings), with margin; 4 envs ×
# 8 steps per iteration, the replay's update-to-data ratio of 1 making 32 updates each.
PENDULUM_RUN = dict(env="Pendulum-v1", total_steps=30_000, num_envs=4, rollout_len=8)


@dataclasses.dataclass(frozen=True)
class ContinuousConfig(offpolicy.OffPolicyConfig):
    """Hyperparameters of every continuous-control off-policy algorithm (each is a ``--flag``),
    on top of the replay settings.

    The defaults are those SAC, TD3 and DDPG share in the SAC paper and in today's reference
    implementations (CleanRL, Huang et al. 2022, JMLR 23(274); the TD3 authors' repository):
    γ = 0.99, τ = 0.005, batches of 256 and two hidden layers of 256 ReLU units; each algorithm
    sets its own learning rates, warm-up and ensemble size. The replay keeps the off-policy
    default of 100k transitions (those implementations: 1M, for 1M-step MuJoCo runs), which
    holds all of a Pendulum run and bounds memory for large observations.

    With ``num_critics`` Q networks, the TD target takes their minimum: clipped double
    Q-learning with 2, DDPG's single critic with 1.
    """

    gamma: float = hparam(0.99, "discount factor γ")
    tau: float = hparam(0.005, "target networks' Polyak rate τ: θ' ← τ θ + (1 − τ) θ'")
    actor_lr: float = hparam(3e-4, "the actor's Adam learning rate")
    critic_lr: float = hparam(3e-4, "the critics' Adam learning rate")
    num_critics: int = hparam(2, "critics in the ensemble; the TD target takes their minimum")
    hidden_sizes: tuple[int, ...] = hparam((256, 256), "layer sizes of the actor and critic MLPs")
    activation: str = hparam("relu", f"hidden-layer activation: {', '.join(ACTIVATIONS)}")
    actor_observation: str = hparam("", ACTOR_OBSERVATION_HELP)
    critic_observation: str = hparam("", CRITIC_OBSERVATION_HELP)
    reward_scaling: float = hparam(
        1.0, "multiply rewards by this in the TD target (returns unchanged)"
    )
    normalize_observations: bool = hparam(
        False, "standardise observations by running moments of all collected (Brax's SAC)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        validate.positive("reward_scaling", self.reward_scaling)
        validate.in_range("gamma", self.gamma, 0.0, 1.0)
        validate.in_range("tau", self.tau, 0.0, 1.0, low_open=True)
        validate.in_range("actor_lr", self.actor_lr, 0.0, 1.0, low_open=True)
        validate.in_range("critic_lr", self.critic_lr, 0.0, 1.0, low_open=True)
        validate.positive_int("num_critics", self.num_critics)
        validate.layer_sizes("hidden_sizes", self.hidden_sizes)
        validate.choice("activation", self.activation, ACTIVATIONS)


def check(name: str, ctx: AlgorithmContext[ContinuousConfig]) -> None:
    """A bounded Box action space, and the checks every off-policy algorithm makes."""
    offpolicy.check_box(name, ctx.action_space)
    offpolicy.check(ctx)
    hp = ctx.hparams
    observation_part(ctx.observation_space, hp.actor_observation, "actor_observation")
    observation_part(ctx.observation_space, hp.critic_observation, "critic_observation")


def actor_input(ctx: AlgorithmContext[ContinuousConfig]) -> dict[str, Any]:
    """The actor network's ``obs_ndim`` and ``input_key``: the key ``actor_observation`` names
    of a dict observation, or the whole observation."""
    key = ctx.hparams.actor_observation
    part = observation_part(ctx.observation_space, key, "actor_observation")
    return dict(obs_ndim=observation_ndim(part), input_key=key)


class Optimized(NamedTuple):
    """Parameters and their optimizer's state."""

    params: Any
    opt_state: optax.OptState


def optimizer_step(tx: optax.GradientTransformation, opt: Optimized, grads: Any) -> Optimized:
    updates, opt_state = tx.update(grads, opt.opt_state, opt.params)
    return Optimized(optax.apply_updates(opt.params, updates), opt_state)


class Critic(NamedTuple):
    """The critic ensemble's parameters, their target copy and the optimizer's state."""

    params: Any
    target_params: Any
    opt_state: optax.OptState


def observation_example(ctx: AlgorithmContext) -> jax.Array:
    return spaces.example(ctx.observation_space)


def action_dim(ctx: AlgorithmContext) -> int:
    """Networks act on the flattened action: a Box of any shape is ``prod(shape)`` numbers."""
    return math.prod(ctx.action_space.shape)


def critic_network(ctx: AlgorithmContext[ContinuousConfig]) -> ContinuousCritic:
    hp = ctx.hparams
    return ContinuousCritic(
        num_critics=hp.num_critics,
        hidden_sizes=tuple(hp.hidden_sizes),
        activation=hp.activation,
        obs_ndim=observation_ndim(
            observation_part(ctx.observation_space, hp.critic_observation, "critic_observation")
        ),
        input_key=hp.critic_observation,
    )


def init_critic(
    net: ContinuousCritic, tx: optax.GradientTransformation, ctx: AlgorithmContext, key: jax.Array
) -> Critic:
    params = net.init(key, observation_example(ctx), jnp.zeros(action_dim(ctx), jnp.float32))
    return Critic(params, params, tx.init(params))


def unit_action(action: jax.Array, ctx: AlgorithmContext) -> jax.Array:
    """A batch of env-scale actions ``[B, *shape]`` (as stored in the replay) as the networks'
    ``[B, A]`` in ``[−1, 1]``."""
    unit = exploration.from_box(action, ctx.action_space)
    return unit.reshape(unit.shape[0], -1)


def env_action(unit: jax.Array, ctx: AlgorithmContext) -> jax.Array:
    """Inverse of :func:`unit_action`: ``[B, A]`` in ``[−1, 1]`` onto the env's box."""
    space = ctx.action_space
    return exploration.to_box(unit.reshape(unit.shape[0], *space.shape), space)


def critic_loss(q: jax.Array, target: jax.Array, weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``½ Σ_i mean(w · (Q_i − y)²)`` over the ensemble ``q [N, B]``, and the TD error fed back to
    prioritized replay: per sample, the member's error of largest magnitude, as Fujimoto, Meger &
    Precup (2020, arXiv:2007.06049) prioritise TD3 by ``max(|δ₁|, |δ₂|)``.

    Returns ``(loss, td_error [B])``.
    """
    td = q - target
    loss = 0.5 * jax.vmap(losses.weighted_mean, in_axes=(0, None))(td**2, weights).sum()
    worst = jnp.argmax(jnp.abs(td), axis=0)
    return loss, jnp.take_along_axis(td, worst[None], axis=0)[0]


def critic_step(
    net: ContinuousCritic,
    tx: optax.GradientTransformation,
    critic: Critic,
    observation: jax.Array,
    action: jax.Array,
    target: jax.Array,
    weights: jax.Array,
    updates: jax.Array,
    tau: float,
    target_period: int = 1,
) -> tuple[Critic, dict[str, jax.Array], jax.Array]:
    """One gradient step of :func:`critic_loss` on ``Q(observation, action)`` (unit-scale
    ``action``) toward ``target``, then the target update (every ``target_period`` updates;
    ``updates`` counts them, this one included).

    Returns ``(critic, metrics, td_error [B])``.
    """

    def loss(params):
        q = net.apply(params, observation, action)
        value, td_error = critic_loss(q, target, weights)
        return value, (td_error, q.mean())

    (value, (td_error, q_mean)), grads = jax.value_and_grad(loss, has_aux=True)(critic.params)
    params, opt_state = optimizer_step(tx, Optimized(critic.params, critic.opt_state), grads)
    target_params = offpolicy.update_target(
        critic.target_params, params, updates, tau, target_period
    )
    metrics = {"critic_loss": value, "q_mean": q_mean, "abs_td_error": jnp.abs(td_error).mean()}
    return Critic(params, target_params, opt_state), metrics, td_error


def td_critic_step(
    net: ContinuousCritic,
    tx: optax.GradientTransformation,
    ctx: AlgorithmContext[ContinuousConfig],
    critic: Critic,
    sample: Any,
    next_action: jax.Array,
    updates: jax.Array,
    target_period: int = 1,
    entropy: tuple[jax.Array, jax.Array] | None = None,
) -> tuple[Critic, dict[str, jax.Array], jax.Array]:
    """The clipped double-Q target and :func:`critic_step` toward it, as SAC, TD3 and DDPG do.

        y = c · r + discount · (min_i Q'_i(s', a') − α log π(a'|s'))

    with ``c`` the ``reward_scaling``, ``next_action`` ``a' [B, A]`` (unit scale) drawn by the
    algorithm, and the entropy term
    only when ``entropy = (α, log π(a'|s') [B])`` is given (SAC). ``sample`` is the replay's
    ``Sample`` of ``k``-step transitions ``[B, ...]``; its importance weights enter the loss.
    ``updates`` counts the critic updates, this one included; the targets move every
    ``target_period`` of them at the Polyak rate ``ctx.hparams.tau``.

    Returns ``(critic, metrics, td_error [B])``.
    """
    hp = ctx.hparams
    exp = sample.transitions
    q_next = net.apply(critic.target_params, exp.next_observation, next_action).min(axis=0)
    if entropy is not None:
        alpha, next_log_prob = entropy
        q_next = q_next - alpha * next_log_prob
    target = losses.td_target(exp.reward * hp.reward_scaling, exp.discount, q_next)
    return critic_step(
        net,
        tx,
        critic,
        exp.observation,
        unit_action(exp.action, ctx),
        target,
        sample.weights,
        updates,
        hp.tau,
        target_period,
    )


def build(
    name: str,
    ctx: AlgorithmContext[ContinuousConfig],
    explore: Callable[[Any, jax.Array, jax.Array], jax.Array],
    mode: Callable[[Any, jax.Array], jax.Array],
    init: Callable[[jax.Array], Any],
    learn: Callable[[Any, dict, jax.Array], tuple[Any, dict]],
) -> Algorithm:
    """The algorithm from its policy and learner.

    Args:
      explore: ``(actor params, observations [B, ...], key) -> [B, A]`` exploring actions in
        ``[−1, 1]``.
      mode: ``(actor params, observations [B, ...]) -> [B, A]``, the deterministic policy in
        ``[−1, 1]`` that evaluation runs.
      init, learn: the learner fragment's ``init`` and ``apply``; the learner state's field
        ``actor`` is an :class:`Optimized` whose ``params`` are published to the actor.
    """
    hp = ctx.hparams
    space = ctx.action_space

    def published(state):
        return state.actor.params

    moments, extra, learner_inputs = None, (), ()
    if hp.normalize_observations:
        moments = normalization.ObservationMoments(ctx.observation_space)
        statistics, init, learn, published = normalization.normalized_observations(
            ctx, moments, init, learn, published
        )
        extra, learner_inputs = (statistics,), (offpolicy.MOMENTS,)

    def act(steps, inputs, key):
        """The exploring policy, or uniformly random actions over the box during the warm-up.
        The actor's state counts the env steps taken."""
        k_random, k_policy = jax.random.split(key)
        batch = jax.tree.leaves(inputs[OBSERVATION])[0].shape[0]
        actor_params, observation = normalization.standardized(
            moments, inputs[PARAMS], inputs[OBSERVATION]
        )
        policy = env_action(explore(actor_params, observation, k_policy), ctx)
        random = exploration.random_actions(k_random, space, batch)
        warm = exploration.warming_up(steps, hp.learning_starts)
        return steps + batch, {ACTION: jnp.where(warm, random, policy).astype(space.dtype)}

    actor, learner = offpolicy.actor_and_learner(ctx, act, init, learn, published, learner_inputs)

    def policy(params, observation):
        return env_action(mode(*normalization.standardized(moments, params, observation)), ctx)

    replay = offpolicy.replay(ctx, hp.gamma)
    return Algorithm(name, actor, learner, policy, extra=(replay, *extra))

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

Memory. With ``memory`` ``gru`` or ``lstm`` the network is recurrent
(:class:`~jaxrl_fdg.fragments.recurrent.RecurrentActorCritic`) and the actor fragment's state is
its memory of each environment ``[B, W]``, zeros at first. The env fragment publishes
``episode_step``, the steps each episode has taken (``core.env_fragment.publish``); where it is
0 the observation is an episode's first, and the actor resets that environment's memory to zeros
before acting on it. It outputs the memory it acted from and those ``episode_start`` flags, so
``trajectory.extras["memory"]`` ``[T, B, W]`` and ``["episode_start"]`` ``[T, B]`` are what the
learner needs to re-run each sequence exactly: from the memory at the rollout's first step
(index 0 of time), with the same resets. At the rollout's parameters it reproduces the actor's
log-probabilities and values to float32 rounding (tests/fragments/test_recurrent.py): it applies
the torsos and heads to all steps at once and scans only the cells (:meth:`Policy.unroll`), one
wide product where the actor made one per step, whose last bits can differ. The learner's
batch is then :class:`Sequences`, whole env sequences, which PPO splits by environment
(``fragments.minibatch.sequence_minibatch_epochs``), never in time. The value of each
``next_observation`` is the actor's where the episode goes on, and otherwise the network's from
the memory after that step (:meth:`Policy.next_values`).

The networks and what is asked of them live in :mod:`~jaxrl_fdg.fragments.actor_critic_policy`
(:class:`Policy`, re-exported here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, hparam
from jaxrl_fdg.core.fragment import Fragment, Role, fragment
from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.core.names import (
    ACTION_MASK,
    EPISODE_START,
    EPISODE_STEP,
    LOG_PROB,
    MEMORY,
    METRICS,
    OBSERVATION,
    PARAMS,
    TRAJECTORY,
    VALUE,
)
from jaxrl_fdg.envs.spaces import Box, Discrete
from jaxrl_fdg.errors import ConfigError, SpaceMismatch
from jaxrl_fdg.fragments import losses, normalization
from jaxrl_fdg.fragments.actor_critic_policy import Batch, Policy, Sequences
from jaxrl_fdg.fragments.networks import ACTIVATIONS, TORSO_HELP, TORSOS, check_torso
from jaxrl_fdg.fragments.recurrent import MEMORIES, check_acts_for_all
from jaxrl_fdg.fragments.torsos import (
    ACTOR_OBSERVATION_HELP,
    CRITIC_OBSERVATION_HELP,
    observation_part,
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
    torso: str = hparam("mlp", TORSO_HELP)
    log_std_init: float = hparam(0.0, "initial log std of the Gaussian policy, for Box actions")
    memory: str = hparam("none", "recurrent core after the torso: none, gru or lstm")
    memory_size: int = hparam(128, "units of the recurrent core (memory gru or lstm)")
    head_sizes: tuple[int, ...] = hparam(
        (),
        "hidden layers between the recurrent core and each head (memory gru or lstm); "
        "JaxMARL's recurrent baselines have 128",
    )
    normalize_observations: bool = hparam(
        False, "standardise observations by running moments the learner keeps (Brax's trainers)"
    )
    reward_scaling: float = hparam(1.0, "multiply rewards by this in the loss (returns unchanged)")
    actor_observation: str = hparam("", ACTOR_OBSERVATION_HELP)
    critic_observation: str = hparam("", CRITIC_OBSERVATION_HELP)

    def __post_init__(self) -> None:
        validate.in_range("lr", self.lr, 0.0, 1.0, low_open=True)
        validate.positive("reward_scaling", self.reward_scaling)
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
        validate.finite("log_std_init", self.log_std_init)
        validate.choice("memory", self.memory, MEMORIES)
        validate.positive_int("memory_size", self.memory_size)
        for size in self.head_sizes:
            validate.positive_int("head_sizes entry", size)
        if self.head_sizes and self.memory == "none":
            raise ConfigError(
                f"head_sizes = {tuple(self.head_sizes)} sets layers after a recurrent core, and "
                "memory is 'none': add --memory gru (or lstm), or put the layers in "
                "hidden_sizes"
            )


def check(name: str, ctx: AlgorithmContext[ActorCriticConfig]) -> None:
    """Reject spaces the policy cannot handle, before anything is compiled."""
    space = ctx.action_space
    if isinstance(space, Box):
        if len(space.shape) != 1:
            raise SpaceMismatch(
                f"{name} needs a Discrete or a one-dimensional Box action space, "
                f"got a Box of shape {tuple(space.shape)}"
            )
    elif not isinstance(space, Discrete):
        raise SpaceMismatch(
            f"{name} needs a Discrete or Box action space, got {type(space).__name__}"
        )
    hp = ctx.hparams
    actor = observation_part(ctx.observation_space, hp.actor_observation, "actor_observation")
    critic = observation_part(ctx.observation_space, hp.critic_observation, "critic_observation")
    check_torso(hp.torso, actor)
    check_torso(hp.torso, critic)


def actor(policy: Policy, num_envs: int) -> Fragment:
    """The actor fragment: ``(observation, params) -> action, [raw_action,] log_prob, value``.

    A recurrent policy's actor also reads the env's ``episode_step`` and keeps
    :class:`ActorMemory` of its ``num_envs`` environments as its state; where ``episode_step``
    is 0 an episode starts (:meth:`Policy.act_recurrent`). It also writes the memory it acted
    from and ``episode_start`` (bool ``[B]``), which the trajectory records beside the actions
    they belong to."""
    masked = (ACTION_MASK,) if policy.masked else ()
    if not policy.recurrent:

        def act(state, inputs, key):
            mask = inputs.get(ACTION_MASK)
            return state, policy.act(inputs[PARAMS], inputs[OBSERVATION], key, mask)

        return fragment(
            "actor",
            Role.ACTOR,
            act,
            inputs=(OBSERVATION, PARAMS, *masked),
            outputs=policy.outputs,
        )

    def init(key: jax.Array) -> ActorMemory:
        del key
        return ActorMemory(policy.initial_memory(num_envs))

    def act_recurrent(state: ActorMemory, inputs, key):
        observation = inputs[OBSERVATION]
        check_acts_for_all(observation, num_envs, "a recurrent actor")
        start = inputs[EPISODE_STEP] == 0
        memory, outputs = policy.act_recurrent(
            inputs[PARAMS], state.memory, observation, start, key, inputs.get(ACTION_MASK)
        )
        return ActorMemory(memory), outputs

    return fragment(
        "actor",
        Role.ACTOR,
        act_recurrent,
        init=init,
        inputs=(OBSERVATION, EPISODE_STEP, PARAMS, *masked),
        outputs=policy.outputs,
    )


class ActorMemory(NamedTuple):
    """A recurrent actor's state: the memory of each environment ``[B, W]`` after its last step
    (reset to zeros at the next step where that environment's episode starts)."""

    memory: jax.Array


class LearnerState(NamedTuple):
    params: Any
    opt_state: optax.OptState


def make_batch(policy: Policy, params: Any, trajectory: Transition, hp: ActorCriticConfig) -> Batch:
    """GAE(γ, λ) advantages and value targets for a rollout, flattened over time and envs.

    ``V(s'_t)`` is the value of ``next_observation`` (the final observation where an episode
    ended), so truncation bootstraps and termination does not (``losses.generalized_advantage_
    estimation``); :meth:`Policy.next_values` reuses the actor's values where it can.
    """
    advantage, target = losses.generalized_advantage_estimation(
        trajectory.reward * hp.reward_scaling,
        trajectory.extras[VALUE],
        policy.next_values(params, trajectory),
        trajectory.terminated,
        trajectory.truncated,
        hp.gamma,
        hp.gae_lambda,
    )
    batch = Batch(
        trajectory.observation,
        policy.learned_action(trajectory),
        trajectory.extras[LOG_PROB],
        trajectory.extras[VALUE],
        advantage,
        target,
        policy.action_mask(trajectory),
    )
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), batch)


def make_sequences(
    policy: Policy, params: Any, trajectory: Transition, hp: ActorCriticConfig
) -> Sequences:
    """:func:`make_batch` for a recurrent policy: the same GAE(γ, λ), with ``V(s'_t)`` from
    :meth:`Policy.next_values`, kept as whole sequences (:class:`Sequences`) rather than
    flattened."""
    extras = trajectory.extras
    advantage, target = losses.generalized_advantage_estimation(
        trajectory.reward * hp.reward_scaling,
        extras[VALUE],
        policy.next_values(params, trajectory),
        trajectory.terminated,
        trajectory.truncated,
        hp.gamma,
        hp.gae_lambda,
    )
    time_major = (
        trajectory.observation,
        policy.learned_action(trajectory),
        extras[LOG_PROB],
        extras[VALUE],
        advantage,
        target,
        extras[EPISODE_START],
    )
    env_major = [jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), x) for x in time_major]
    mask = policy.action_mask(trajectory)
    mask = None if mask is None else jnp.swapaxes(mask, 0, 1)
    return Sequences(*env_major, memory=extras[MEMORY][0], action_mask=mask)


def advantages(hp: ActorCriticConfig, batch: Batch | Sequences) -> jax.Array:
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


class OptimizerConfig(Protocol):
    """The hyperparameters :func:`optimizer` reads: an :class:`ActorCriticConfig`'s, or another
    config with the same three fields (PQN's)."""

    @property
    def lr(self) -> float: ...

    @property
    def anneal_lr(self) -> bool: ...

    @property
    def max_grad_norm(self) -> float: ...


def optimizer(
    ctx: AlgorithmContext[OptimizerConfig],
    num_updates: int,
    make: Callable[[float | optax.Schedule], optax.GradientTransformation],
) -> optax.GradientTransformation:
    """Global-norm gradient clipping, then ``make(lr)``, as the context hands it to a learner;
    with ``anneal_lr`` the learning rate falls linearly from ``lr`` to 0 over ``num_updates``
    gradient steps (the whole run).

    Both act on the parameters raveled into one vector (``optax.flatten``; the optimizer's state
    holds vectors too). Per parameter array, the clipping and the optimizer's update are a few
    small kernels each, which XLA compiles one by one: the two 64 × 64 MLPs' 12 arrays made a
    quarter of A2C's scan program. One vector takes a few kernels in all; the global norm is then
    summed over the vector rather than array by array, which rounds its last bit differently
    (docs/decisions.md, "Fewer kernels to compile")."""
    hp = ctx.hparams
    lr: float | optax.Schedule = hp.lr
    if hp.anneal_lr:
        lr = optax.linear_schedule(hp.lr, 0.0, num_updates)
    clipped = optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), make(lr))
    return ctx.optimizer(optax.flatten(clipped))


def gradient_step(
    loss: Callable[[Any, Batch], tuple[jax.Array, Metrics]],
    tx: optax.GradientTransformation,
) -> Callable[[LearnerState, Batch], tuple[LearnerState, Metrics]]:
    """One optimizer step on ``loss(params, batch) -> (loss, metrics)``, of the trained part of
    ``params`` (not the observation moments beside it: :func:`normalization.trainable`)."""

    def update(state: LearnerState, batch: Batch) -> tuple[LearnerState, Metrics]:
        def trained_loss(trained, batch):
            return loss(normalization.with_trainable(state.params, trained), batch)

        trained = normalization.trainable(state.params)
        grads, metrics = jax.grad(trained_loss, has_aux=True)(trained, batch)
        updates, opt_state = tx.update(grads, state.opt_state, trained)
        params = normalization.with_trainable(state.params, optax.apply_updates(trained, updates))
        return LearnerState(params, opt_state), metrics

    return update


def rollout_learner(
    init_params: Callable[[jax.Array], Any],
    tx: optax.GradientTransformation,
    learn: Callable[[LearnerState, Any, jax.Array], tuple[LearnerState, dict[str, Any]]],
) -> Fragment:
    """The learner fragment of an algorithm that learns from each rollout once, then drops it
    (PPO, A2C, PQN): its state is a :class:`LearnerState` of the parameters ``init_params(key)``
    makes and ``tx``'s state for them; ``learn(state, {"trajectory"}, key)`` outputs
    ``metrics``; it publishes ``params`` for the actor."""

    def init(key):
        params = init_params(key)
        return LearnerState(params, tx.init(normalization.trainable(params)))

    return fragment(
        "learner",
        Role.LEARNER,
        learn,
        init=init,
        inputs=(TRAJECTORY,),
        outputs=(METRICS,),
        publish=lambda state: {PARAMS: state.params},
        published=(PARAMS,),
    )


def algorithm(
    name: str,
    ctx: AlgorithmContext[ActorCriticConfig],
    policy: Policy,
    tx: optax.GradientTransformation,
    update: Callable[[LearnerState, Any, jax.Array], tuple[LearnerState, Metrics]],
    prepare: Callable[[Policy, Any, Transition, Any], Any] | None = None,
) -> Algorithm:
    """The actor and the learner fragment; the learner turns each rollout into a :class:`Batch`
    (:class:`Sequences` for a recurrent policy), or whatever ``prepare(policy, params,
    trajectory, hparams)`` makes of it, and hands it to ``update(state, batch, key)``, the
    algorithm's own part."""

    if prepare is None:
        prepare = make_sequences if policy.recurrent else make_batch

    def learn(state: LearnerState, inputs, key):
        trajectory = inputs[TRAJECTORY]
        batch = prepare(policy, state.params, trajectory, ctx.hparams)
        state, metrics = update(state, batch, key)
        # The rollout joins the observation moments only now: the updates above saw its
        # observations standardised as the actor saw them, as under a normalising env wrapper.
        params = policy.observe(state.params, trajectory.observation, ctx.pool)
        return state._replace(params=params), {METRICS: metrics}

    learner = rollout_learner(policy.init, tx, learn)
    if policy.recurrent:
        return Algorithm(
            name,
            actor(policy, ctx.num_envs),
            learner,
            policy=policy.recurrent_mode,
            policy_memory=policy.initial_memory,
        )
    return Algorithm(name, actor(policy, ctx.num_envs), learner, policy=policy.mode)

"""The policy and value networks of the actor-critic algorithms (PPO, A2C) and what the actor
and the learner ask of them: sampling, log-probabilities and entropies of stored actions,
values, the deterministic policy, and, for a recurrent policy, stepping and re-running its
memory. See :mod:`jaxrl_fdg.fragments.algorithms.actor_critic` for how the fragments use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import chunks
from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.core.names import (
    ACTION,
    ACTION_MASK,
    EPISODE_START,
    LOG_PROB,
    MEMORY,
    RAW_ACTION,
    VALUE,
)
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.spaces import Box
from jaxrl_fdg.fragments import distributions as dist
from jaxrl_fdg.fragments import normalization
from jaxrl_fdg.fragments.networks import ActorCritic, GaussianActorCritic
from jaxrl_fdg.fragments.normalization import ObservationMoments
from jaxrl_fdg.fragments.recurrent import RecurrentActorCritic, memory_width, reset_memory
from jaxrl_fdg.fragments.torsos import observation_ndim, observation_part

if TYPE_CHECKING:  # actor_critic imports this module
    from jaxrl_fdg.fragments.algorithms.actor_critic import ActorCriticConfig


class Batch(NamedTuple):
    """A rollout flattened to ``[T·B, ...]``, with advantages and value targets, and for an
    environment with an action mask the legal actions at each observation ``[T·B, n]``."""

    observation: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array
    action_mask: jax.Array | None = None


class Sequences(NamedTuple):
    """A rollout as whole env sequences, env-major: ``[B, T, ...]`` for what varies in time,
    with advantages and value targets, and each sequence's memory before its first step
    ``memory`` ``[B, W]``: what a recurrent learner re-runs (:meth:`Policy.unroll`). Split it by
    environment only (``fragments.minibatch.sequence_minibatch_epochs``)."""

    observation: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array
    episode_start: jax.Array
    memory: jax.Array
    action_mask: jax.Array | None = None


class Policy:
    """The policy and value network of an actor-critic, for a Discrete or a Box action space,
    feed-forward or (``memory`` gru or lstm) recurrent.

    ``network`` replaces the built-in feed-forward network by a flax module of the same contract
    (a custom head, a shared torso): ``network(observation)`` returns ``(logits [..., n], value
    [...])`` for a Discrete action space, ``(mean, log_std, value)`` for a Box, and
    ``network.value(observation)`` the value alone. Sampling, masks, log-probabilities,
    normalisation and evaluation stay as they are: ``ppo.build(ctx, policy=Policy(ctx,
    network=...))`` trains it with no copy of PPO. With ``memory`` gru or lstm the network is
    recurrent, as :class:`~jaxrl_fdg.fragments.recurrent.RecurrentActorCritic`: one step is
    ``network(memory [B, W], observation) -> (memory, outputs)`` and ``network.value(memory,
    observation)`` the value alone; ``W`` is its attribute ``memory_width`` (where it has none, the
    built-in network's width for ``memory`` and ``memory_size``), and the memory is zeros at an
    episode's start (a shared core, as Craftax's PPO-RNN baseline has, is such a network). A
    recurrent network that also has ``encode(observation)``, ``recur(memory, features) ->
    (memory, core)`` and ``decode(core) -> outputs`` (one step being their composition) is
    re-run by the learner with its encoder and heads on every step at once and only ``recur``
    scanned, much faster than stepping it whole (:meth:`unroll`). A network with an attribute
    ``num_agents`` (:class:`~jaxrl_fdg.fragments.networks.PerAgent`: a copy of its parameters per
    agent of a multi-agent game) acts on rows in whole games, each in its order: that is
    :attr:`game_size`, which the learner's minibatches keep together (1 otherwise).
    """

    def __init__(self, ctx: AlgorithmContext[ActorCriticConfig], network: Any = None):
        hp = ctx.hparams
        space = ctx.action_space
        common = dict(
            hidden_sizes=tuple(hp.hidden_sizes),
            activation=hp.activation,
            obs_ndim=observation_ndim(ctx.observation_space),
            torso=hp.torso,
        )
        asymmetric = {}
        if hp.actor_observation or hp.critic_observation:  # each network reads one key
            seen = ctx.observation_space
            common["obs_ndim"] = observation_ndim(observation_part(seen, hp.actor_observation))
            asymmetric = dict(
                policy_input=hp.actor_observation,
                critic_input=hp.critic_observation,
                critic_ndim=observation_ndim(observation_part(seen, hp.critic_observation)),
            )
        self.continuous = isinstance(space, Box)
        self.masked = ctx.has_action_mask and not self.continuous
        if self.continuous:
            (dim,) = space.shape
            self.net: ActorCritic = GaussianActorCritic(
                dim, log_std_init=hp.log_std_init, **common, **asymmetric
            )
            self.low = np.broadcast_to(np.asarray(space.low, np.float32), space.shape)
            self.high = np.broadcast_to(np.asarray(space.high, np.float32), space.shape)
            self.outputs: tuple[str, ...] = (ACTION, RAW_ACTION, LOG_PROB, VALUE)
        else:
            self.net = ActorCritic(space.n, **common, **asymmetric)
            self.outputs = (ACTION, LOG_PROB, VALUE)
        self.obs_example = spaces.example(ctx.observation_space)
        self.moments = (
            ObservationMoments(ctx.observation_space) if hp.normalize_observations else None
        )
        self.recurrent = hp.memory != "none"
        if self.recurrent:
            num_actions = dim if self.continuous else space.n
            self.net = RecurrentActorCritic(
                num_actions,
                memory=hp.memory,
                memory_size=hp.memory_size,
                head_sizes=tuple(hp.head_sizes),
                continuous=self.continuous,
                log_std_init=hp.log_std_init,
                **common,
                **asymmetric,
            )
            self.memory_width = memory_width(hp.memory, hp.memory_size)
            self.outputs = (*self.outputs, MEMORY, EPISODE_START)
        if network is not None:
            self.net = network
            if self.recurrent:  # its memory's width is its own business
                self.memory_width = int(getattr(network, "memory_width", self.memory_width))
        # A network with a copy of its parameters per agent (networks.PerAgent) must see each
        # game's rows together and in their order: the learner's minibatches keep them so.
        self.game_size = int(getattr(self.net, "num_agents", 1))

    def init(self, key: jax.Array) -> Any:
        """The network's variables: ``{"params": ...}``, and with ``normalize_observations``
        the observation moments beside them (:mod:`~jaxrl_fdg.fragments.normalization`)."""
        if self.recurrent:
            variables = self.net.init(key, self.initial_memory(1)[0], self.obs_example)
        else:
            variables = self.net.init(key, self.obs_example)
        if self.moments is not None:
            variables = {**variables, normalization.COLLECTION: self.moments.init()}
        return variables

    def observe(self, params: Any, observations: jax.Array, pool) -> Any:
        """``params`` with ``observations`` folded into their observation moments (the
        learner's, after each rollout); ``params`` as they are without normalisation."""
        if self.moments is None:
            return params
        moments = self.moments.update(params[normalization.COLLECTION], observations, pool)
        return {**params, normalization.COLLECTION: moments}

    def _apply(self, params: Any, *args: Any, **kwargs: Any) -> Any:
        """The network on ``args``, whose last is always the observation: standardised first
        by the moments ``params`` carry, with ``normalize_observations``."""
        if self.moments is not None:
            *rest, observation = args
            moments = params[normalization.COLLECTION]
            args = (*rest, self.moments.standardize(moments, observation))
            params = normalization.trainable(params)
        return self.net.apply(params, *args, **kwargs)

    def act(
        self, params: Any, observation: jax.Array, key: jax.Array, action_mask=None
    ) -> dict[str, jax.Array]:
        """Sample an action for each observation: the actor fragment's outputs. With
        ``action_mask`` (bool ``[B, n]``) only legal actions are drawn, from the policy
        renormalised over them."""
        return self._sample(self._apply(params, observation), key, action_mask)

    def _sample(
        self, out: tuple[jax.Array, ...], key: jax.Array, action_mask=None
    ) -> dict[str, jax.Array]:
        """The actor's outputs from the network's (``(mean, log_std, value)`` or ``(logits,
        value)``)."""
        if self.continuous:
            mean, log_std, value = out
            raw = dist.gaussian_sample(key, mean, log_std)
            return {
                ACTION: jnp.clip(raw, self.low, self.high),
                RAW_ACTION: raw,
                LOG_PROB: dist.gaussian_log_prob(mean, log_std, raw),
                VALUE: value,
            }
        logits, value = out
        logits = dist.mask_logits(logits, action_mask)
        action = dist.categorical_sample(key, logits)
        return {
            ACTION: action,
            LOG_PROB: dist.categorical_log_prob(logits, action),
            VALUE: value,
        }

    def evaluate(
        self, params: Any, observation: jax.Array, action: jax.Array, action_mask=None
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(log π(a|s), H(π(·|s)), V(s))`` under ``params``; ``action`` as the learner stores it
        (:meth:`learned_action`). With ``action_mask`` the policy is the one the actor sampled
        from, over the legal actions only: so are the log-probability and the entropy."""
        return self._evaluate(self._apply(params, observation), action, action_mask)

    def _evaluate(self, out: tuple[jax.Array, ...], action: jax.Array, action_mask=None):
        if self.continuous:
            mean, log_std, value = out
            log_prob = dist.gaussian_log_prob(mean, log_std, action)
            return log_prob, dist.gaussian_entropy(log_std), value
        logits, value = out
        logits = dist.mask_logits(logits, action_mask)
        log_prob = dist.categorical_log_prob(logits, action)
        return log_prob, dist.categorical_entropy(logits), value

    def evaluate_batch(
        self, params: Any, batch: Batch | Sequences
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """:meth:`evaluate` on a learner's (mini)batch: a flat :class:`Batch`, or whole
        :class:`Sequences` re-run through the recurrent network (:meth:`unroll`); the results
        have the batch's shape (``[N]``, or ``[b, T]``)."""
        if isinstance(batch, Sequences):
            out = self.unroll(params, batch.memory, batch.observation, batch.episode_start)
            return self._evaluate(out, batch.action, batch.action_mask)
        return self.evaluate(params, batch.observation, batch.action, batch.action_mask)

    # -- memory ------------------------------------------------------------------------------

    def initial_memory(self, n: int) -> jax.Array:
        """The memory of ``n`` environments at an episode's start: zeros ``[n, W]``."""
        return jnp.zeros((n, self.memory_width), jnp.float32)

    def act_recurrent(
        self,
        params: Any,
        memory: jax.Array,
        observation: jax.Array,
        episode_start: jax.Array,
        key: jax.Array,
        action_mask: jax.Array | None = None,
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        """One step of the recurrent policy: ``(memory after the step, the actor's outputs)``.

        ``memory`` ``[B, W]`` is reset where ``episode_start`` ``[B]`` holds, then the network
        steps; the outputs add ``memory`` (the one acted from, after the reset) and
        ``episode_start`` to :meth:`act`'s."""
        memory = reset_memory(memory, episode_start)
        memory_next, out = self._apply(params, memory, observation)
        sampled = self._sample(out, key, action_mask)
        outputs = {**sampled, MEMORY: memory, EPISODE_START: episode_start}
        return memory_next, outputs

    def unroll(
        self, params: Any, memory: jax.Array, observation: jax.Array, episode_start: jax.Array
    ) -> tuple[jax.Array, ...]:
        """The network's outputs over whole sequences, as the actor computed them step by step.

        ``memory`` ``[b, W]`` is each sequence's memory before its first step; ``observation``
        ``[b, T, ...]`` and ``episode_start`` ``[b, T]`` are env-major (as :class:`Sequences`
        stores them). Each step resets the memory where an episode starts, then steps the cell,
        exactly as :meth:`act_recurrent`; outputs ``[b, T, ...]``."""
        time_major = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), (observation, episode_start))
        _, out = self._sequence(params, memory, *time_major)
        return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), out)

    def _sequence(
        self, params: Any, memory: jax.Array, observation: Any, episode_start: jax.Array
    ) -> tuple[jax.Array, Any]:
        """Time-major sequences ``[T, b, ...]`` through the network from ``memory`` ``[b, W]``:
        the memory after each step (before the next step's reset) ``[T, b, W]`` and the outputs.

        A network with ``encode``, ``recur`` and ``decode`` methods (one step is ``decode(recur(
        memory, encode(obs)))``, as :class:`RecurrentActorCritic`'s) has its torso and heads
        applied to all ``T × b`` steps at once and only its cell scanned: wide products rather
        than ``T`` narrow ones. Any other is stepped whole, step by step."""
        if self._split:
            features = self._apply(params, observation, method="encode")
            net = self._network_params(params)

            def recur(m, inputs):
                x, start = inputs
                m, y = self.net.apply(net, reset_memory(m, start), x, method="recur")
                return m, (m, y)

            _, (memories, core) = jax.lax.scan(recur, memory, (features, episode_start))
            return memories, self.net.apply(net, core, method="decode")

        def step(m, inputs):
            obs, start = inputs
            m, out = self._apply(params, reset_memory(m, start), obs)
            return m, (m, out)

        return jax.lax.scan(step, memory, (observation, episode_start))[1]

    @property
    def _split(self) -> bool:
        return all(hasattr(self.net, name) for name in ("encode", "recur", "decode"))

    def _network_params(self, params: Any) -> Any:
        return normalization.trainable(params) if self.moments is not None else params

    def next_values(self, params: Any, trajectory: Transition) -> jax.Array:
        """``V(s'_t)`` ``[T, B]``, the value of each step's ``next_observation``, computed only
        where the actor has not already computed it.

        Where an episode goes on, ``s'_t`` is ``s_{t+1}``, whose value the actor stored at step
        ``t + 1`` with these parameters and observation moments (the learner joins a rollout's
        moments only after its update) and, for a recurrent policy, the memory after step ``t``:
        the same number, up to the rounding of a batch of another size. The network runs again
        only for the rollout's last step and for truncated steps, whose ``s'_t`` is a final
        observation the actor never acted on; a terminated step's is never bootstrapped from
        (a terminal state is worth zero), so it is left as it is. A recurrent policy values a
        final observation from the memory after step ``t``, which belongs to the ended episode
        (the next step's memory is reset to zeros): one step from the memory the actor acted
        from at ``t``, stored in the trajectory.

        Those steps are gathered ``B`` at a time and evaluated as one batch, a chunk after
        another until all are done: one chunk (the last step) in most rollouts, two when
        environments truncate in lock-step. Evaluating every ``T × B`` next observation would
        cost one more forward pass over the rollout (4% of a Craftax PPO iteration here), or for
        a recurrent policy a second run through its memory.
        """
        values = trajectory.extras[VALUE]
        num_steps, num_envs = values.shape
        rows = num_steps * num_envs
        needed = (
            trajectory.next_observation,
            trajectory.observation,
            trajectory.extras.get(MEMORY),
        )
        flat = jax.tree.map(lambda x: x.reshape(rows, *x.shape[2:]), needed)
        wanted = trajectory.truncated & ~trajectory.terminated
        wanted = wanted.at[-1].set(True).reshape(rows)
        later = jnp.concatenate([values[1:], jnp.zeros_like(values[:1])]).reshape(rows)

        def value_of(c: jax.Array, index: jax.Array) -> jax.Array:
            del c
            next_observation, observation, memory = jax.tree.map(lambda x: x[index], flat)
            if not self.recurrent:
                return self.value(params, next_observation)
            after, _ = self._apply(params, memory, observation)
            return self._apply(params, after, next_observation, method="value")

        # A game's flags are its agents' (the team's) and a chunk is whole games, so each chunk
        # holds whole games in their order, as a network per agent needs (game_size).
        out = chunks.on_selected(wanted, num_envs, value_of, later)
        return out.reshape(num_steps, num_envs)

    def value(self, params: Any, observation: jax.Array) -> jax.Array:
        return self._apply(params, observation, method="value")

    def mode(self, params: Any, observation: jax.Array, action_mask=None) -> jax.Array:
        """The deterministic policy (for evaluation): the most probable (legal) action, or the
        Gaussian's mean clipped to the box."""
        return self._mode(self._apply(params, observation), action_mask)

    def recurrent_mode(
        self, params: Any, observation: jax.Array, memory: jax.Array, action_mask=None
    ) -> tuple[jax.Array, jax.Array]:
        """:meth:`mode` with memory: ``(actions, memory after the step)``; the caller resets
        ``memory`` to :meth:`initial_memory` where episodes start (``Algorithm.policy_memory``)."""
        memory, out = self._apply(params, memory, observation)
        return self._mode(out, action_mask), memory

    def _mode(self, out: tuple[jax.Array, ...], action_mask=None) -> jax.Array:
        if self.continuous:
            return jnp.clip(out[0], self.low, self.high)
        return dist.categorical_mode(dist.mask_logits(out[0], action_mask))

    def action_mask(self, trajectory: Transition) -> jax.Array | None:
        """The legal actions the actor sampled among at each step (``[T, B, n]``), or None."""
        return trajectory.info[ACTION_MASK] if self.masked else None

    def learned_action(self, trajectory: Transition) -> jax.Array:
        """The action whose log-probability the learner evaluates: the raw Gaussian sample for a
        Box (the env got it clipped), the action itself for a Discrete space."""
        return trajectory.extras[RAW_ACTION] if self.continuous else trajectory.action

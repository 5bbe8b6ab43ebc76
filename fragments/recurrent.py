"""Recurrent networks: a torso followed by a GRU or LSTM cell, the actor-critic built from
two of them (the recurrent policies of PPO and A2C, ``--memory gru|lstm``), and the Q-network
built from one (the agents of VDN and QMIX)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments.networks import (
    ACTIVATIONS,
    MLP,
    ObservationEncoder,
    ObsNdim,
    image_torso,
    orthogonal,
)
from jaxrl_fdg.fragments.torsos import view

MEMORIES = ("none", "gru", "lstm")


def reset_memory(memory: jax.Array, episode_start: jax.Array) -> jax.Array:
    """``memory`` ``[B, W]`` with zeros (the initial memory) where ``episode_start`` ``[B]``."""
    return jnp.where(episode_start[..., None], 0.0, memory)


def check_acts_for_all(observation: Any, num_envs: int, who: str) -> None:
    """A recurrent actor (``who``) keeps the memory of its ``num_envs`` rows and must act for
    all of them at every step: a ``ConfigError`` where ``observation`` has another number of
    rows (placement host_env acts for each half of the batch in turn)."""
    acting_for = jax.tree.leaves(observation)[0].shape[0]
    if acting_for != num_envs:
        raise ConfigError(
            f"{who} keeps the memory of its {num_envs} environments and must act for all of them "
            f"at every step, but was called on {acting_for} (placement host_env acts for each "
            "half of the batch in turn; use placement single or data_parallel with a recurrent "
            "actor)"
        )


def memory_width(memory: str, memory_size: int) -> int:
    """Width of a :class:`RecurrentActorCritic`'s memory as one array: each of its two networks
    keeps ``memory_size`` units for a GRU, twice that for an LSTM (cell and hidden vectors)."""
    return 2 * (2 * memory_size if memory == "lstm" else memory_size)


class RecurrentCore(nn.Module):
    """The hidden layers of ``hidden_sizes`` (after an image torso with ``torso`` ``cnn`` or
    ``nature``), then a recurrent cell of ``memory_size`` units: flax's ``GRUCell`` (Cho et al.
    2014) or ``OptimizedLSTMCell`` (Hochreiter & Schmidhuber 1997), whose ``(c, h)`` it keeps as one
    array ``[c, h]``. One step: ``(memory [B, M], obs [B, *obs_shape]) -> (memory, features [B,
    H])``.
    """

    hidden_sizes: Sequence[int]
    activation: str
    obs_ndim: ObsNdim
    torso: str
    memory: str
    memory_size: int

    def setup(self) -> None:
        sizes = tuple(self.hidden_sizes)
        body = MLP(sizes[:-1], sizes[-1], self.activation, out_scale=np.sqrt(2.0))
        if isinstance(self.obs_ndim, tuple):  # a structured observation, leaf by leaf
            torso = ObservationEncoder(self.obs_ndim, self.torso, self.activation)
        else:
            torso = image_torso(self.torso, self.activation)
        self.body = body if torso is None else nn.Sequential([torso, body])
        # The project's orthogonal initializer: flax's own batches its QRs under vmap, which can
        # hang XLA:CPU (see orthogonal).
        cells = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell}
        self.cell = cells[self.memory](self.memory_size, recurrent_kernel_init=orthogonal(1.0))

    def __call__(self, memory: jax.Array, obs: Any) -> tuple[jax.Array, jax.Array]:
        return self.step(memory, self.features(obs))

    def features(self, obs: Any) -> jax.Array:
        """The torso's features of ``obs`` (any leading axes): what the cell reads."""
        if not isinstance(self.obs_ndim, tuple):  # a structured one goes to the encoder as it is
            obs = obs.astype(jnp.float32)
            if self.torso == "mlp":
                obs = obs.reshape(*obs.shape[: obs.ndim - self.obs_ndim], -1)
        return ACTIVATIONS[self.activation](self.body(obs))

    def step(self, memory: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """The cell alone: ``(memory, features) -> (memory, output)``."""
        if self.memory == "lstm":
            (c, h), y = self.cell(tuple(jnp.split(memory, 2, axis=-1)), x)
            return jnp.concatenate([c, h], axis=-1), y
        return self.cell(memory, x)


class RecurrentActorCritic(nn.Module):
    """:class:`ActorCritic` with memory: policy and value networks each a
    :class:`RecurrentCore` (torso, then a GRU or LSTM cell) and a linear head (orthogonal gains
    0.01 for the policy, 1.0 for the value).

    As in :class:`ActorCritic`, the two share no parameters, and so each has a memory of its
    own: the value loss's scale never reaches the policy's features (with one shared core, the
    value gradients of CartPole's returns of hundreds swamp the policy's after global-norm
    clipping). The memory is one array ``[..., memory_width]`` (:func:`memory_width`), the
    policy's then the value's, zeros at the start of an episode; resetting it where episodes
    start is the caller's business (``fragments.algorithms.actor_critic``).

    ``__call__`` is one step: ``(memory [B, W], obs [B, *obs_shape]) -> (memory, (logits [B, A],
    value [B]))``, or with ``continuous`` ``(mean, log_std, value)`` as
    :class:`GaussianActorCritic`, whose state-independent log-std it shares.

    ``head_sizes`` puts hidden layers (gain √2, the torso's activation) between each cell and
    its linear head, as JaxMARL's recurrent baselines have one of 128 units; empty, each head is
    the one linear layer.
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    obs_ndim: ObsNdim = 1
    torso: str = "mlp"
    memory: str = "gru"
    memory_size: int = 128
    continuous: bool = False
    log_std_init: float = 0.0
    # An asymmetric actor-critic, as ActorCritic's: each core reads one key of a dict
    # observation ("": all of it); ``critic_ndim`` is the critic's part's rank.
    policy_input: str = ""
    critic_input: str = ""
    critic_ndim: ObsNdim | None = None
    head_sizes: Sequence[int] = ()

    def setup(self) -> None:
        core = dict(
            hidden_sizes=tuple(self.hidden_sizes),
            activation=self.activation,
            torso=self.torso,
            memory=self.memory,
            memory_size=self.memory_size,
        )
        critic_ndim = self.obs_ndim if self.critic_ndim is None else self.critic_ndim
        self.policy_core = RecurrentCore(obs_ndim=self.obs_ndim, **core)
        self.value_core = RecurrentCore(obs_ndim=critic_ndim, **core)
        if self.head_sizes:
            heads = tuple(self.head_sizes)
            self.policy = MLP(heads, self.num_actions, self.activation, out_scale=0.01)
            self.critic = MLP(heads, 1, self.activation, out_scale=1.0)
        else:  # the linear heads alone (parameters as they were before head_sizes)
            self.policy = nn.Dense(self.num_actions, kernel_init=orthogonal(0.01))
            self.critic = nn.Dense(1, kernel_init=orthogonal(1.0))
        if self.continuous:
            self.log_std = self.param(
                "log_std", nn.initializers.constant(self.log_std_init), (self.num_actions,)
            )

    def __call__(self, memory: jax.Array, obs: jax.Array):
        memory, core = self.recur(memory, self.encode(obs))
        return memory, self.decode(core)

    # One step in three parts, so that a learner re-running whole sequences applies the torsos
    # and heads to every step at once and scans only the cells (Policy.unroll).

    def encode(self, obs: Any) -> tuple[jax.Array, jax.Array]:
        """What the cells read of ``obs`` (any leading axes): each torso's features."""
        return (
            self.policy_core.features(view(obs, self.policy_input)),
            self.value_core.features(view(obs, self.critic_input)),
        )

    def recur(self, memory: jax.Array, features: tuple[jax.Array, jax.Array]):
        """The two cells' step: ``(memory, features) -> (memory, their outputs)``."""
        policy_memory, value_memory = jnp.split(memory, 2, axis=-1)
        policy_memory, y = self.policy_core.step(policy_memory, features[0])
        value_memory, z = self.value_core.step(value_memory, features[1])
        return jnp.concatenate([policy_memory, value_memory], axis=-1), (y, z)

    def decode(self, core: tuple[jax.Array, jax.Array]):
        """The heads on the cells' outputs: ``(logits, value)`` or ``(mean, log_std, value)``."""
        y, z = core
        out, value = self.policy(y), self.critic(z)[..., 0]
        if self.continuous:
            return out, jnp.broadcast_to(self.log_std, out.shape), value
        return out, value

    def value(self, memory: jax.Array, obs: jax.Array) -> jax.Array:
        """``V [B]`` after one step from ``memory`` (the value network alone)."""
        _, value_memory = jnp.split(memory, 2, axis=-1)
        obs = view(obs, self.critic_input)
        return self.critic(self.value_core(value_memory, obs)[1])[..., 0]


class RecurrentQNetwork(nn.Module):
    """An agent's Q-network with memory: :class:`~jaxrl_fdg.fragments.recurrent.RecurrentCore`
    (torso, then the cell) and a linear head. One step is ``(memory [R, W], obs [R, ...]) ->
    (memory, Q [R, A])``; ``encode``, ``recur`` and ``decode`` are its three parts, so that a
    sequence has its torso and head applied to every step at once and only its cell scanned."""

    num_actions: int
    hidden_sizes: tuple[int, ...]
    activation: str
    obs_ndim: Any
    torso: str
    memory: str
    memory_size: int

    def setup(self) -> None:
        self.core = RecurrentCore(
            hidden_sizes=self.hidden_sizes,
            activation=self.activation,
            obs_ndim=self.obs_ndim,
            torso=self.torso,
            memory=self.memory,
            memory_size=self.memory_size,
        )
        self.head = nn.Dense(self.num_actions, kernel_init=orthogonal(1.0))

    def __call__(self, memory: jax.Array, obs: Any) -> tuple[jax.Array, jax.Array]:
        memory, y = self.recur(memory, self.encode(obs))
        return memory, self.decode(y)

    def encode(self, obs: Any) -> jax.Array:
        return self.core.features(obs)

    def recur(self, memory: jax.Array, features: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self.core.step(memory, features)

    def decode(self, y: jax.Array) -> jax.Array:
        return self.head(y)

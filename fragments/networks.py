"""Flax networks shared by the algorithms: actor-critics, Q-networks and the continuous-control
actors and critics, on the basic layers (:mod:`~jaxrl_fdg.fragments.layers`) and image torsos
(:mod:`~jaxrl_fdg.fragments.torsos`), whose names this module also offers.

A Q-network *sows* its last hidden layer's activations (flax's ``sow``, collection
``intermediates``, name ``features``), which costs nothing unless asked for:
:func:`hidden_features` reads them, for an extension that learns on the network's own
representation (an auxiliary loss, a model of the dynamics).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl_fdg.fragments.layers import ACTIVATIONS, MLP, orthogonal
from jaxrl_fdg.fragments.torsos import (
    TORSO_HELP,
    TORSOS,
    Conv,
    ConvTorso,
    NatureTorso,
    ObservationEncoder,
    ObsNdim,
    _flat_observation,
    check_torso,
    features,
    image_min_size,
    image_torso,
    observation_ndim,
    strided_conv,
    view,
)


class ActorCritic(nn.Module):
    """Separate policy and value networks on the same observation.

    ``torso="mlp"`` flattens the observation into MLPs; ``torso="cnn"`` puts a :class:`ConvTorso`
    (``"nature"``: a :class:`NatureTorso`) in front of each MLP and needs an image observation
    ``[H, W, C]``. Policy and value share no
    parameters (as in the PPO implementations this follows), so the value loss's scale never
    reaches the policy's features.

    Input ``[..., *obs_shape]``; output ``(logits [..., num_actions], value [...])``.
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    obs_ndim: ObsNdim = 1
    torso: str = "mlp"
    # An asymmetric actor-critic: each network reads one key of a dict observation ("": all of
    # it); ``critic_ndim`` is the critic's part's rank (None: ``obs_ndim``, the same input).
    policy_input: str = ""
    critic_input: str = ""
    critic_ndim: ObsNdim | None = None

    def setup(self) -> None:
        self.policy = self._network(self.num_actions, 0.01, self.obs_ndim)
        self.critic = self._network(1, 1.0, self._critic_ndim)

    @property
    def _critic_ndim(self) -> ObsNdim:
        return self.obs_ndim if self.critic_ndim is None else self.critic_ndim

    def __call__(self, obs: Any) -> tuple[jax.Array, jax.Array]:
        x = self._input(view(obs, self.policy_input), self.obs_ndim)
        return self.policy(x), self.value(obs)

    def value(self, obs: Any) -> jax.Array:
        x = self._input(view(obs, self.critic_input), self._critic_ndim)
        return self.critic(x)[..., 0]

    def _network(self, out_dim: int, out_scale: float, ndim: ObsNdim) -> nn.Module:
        mlp = MLP(self.hidden_sizes, out_dim, self.activation, out_scale=out_scale)
        if isinstance(ndim, tuple):  # a structured observation: leaf by leaf
            return nn.Sequential([ObservationEncoder(ndim, self.torso, self.activation), mlp])
        torso = image_torso(self.torso, self.activation)
        return mlp if torso is None else nn.Sequential([torso, mlp])

    def _input(self, obs: Any, ndim: ObsNdim) -> Any:
        if isinstance(ndim, tuple):
            return obs
        obs = obs.astype(jnp.float32)
        if self.torso != "mlp":
            return obs
        lead = obs.shape[: obs.ndim - ndim]
        return obs.reshape(*lead, -1)


class GaussianActorCritic(ActorCritic):
    """:class:`ActorCritic` for continuous actions: the policy network outputs the mean of a
    diagonal Gaussian over ``num_actions`` dimensions, and the log standard deviation is one
    learnable vector, independent of the state (initialised to ``log_std_init``), as in OpenAI
    baselines' and cleanrl's continuous PPO.

    Output ``(mean [..., num_actions], log_std [..., num_actions], value [...])``; ``log_std`` is
    broadcast to the mean's shape so the distribution functions batch without further ado.
    """

    log_std_init: float = 0.0

    def setup(self) -> None:
        super().setup()
        self.log_std = self.param(
            "log_std", nn.initializers.constant(self.log_std_init), (self.num_actions,)
        )

    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        mean, value = super().__call__(obs)
        return mean, jnp.broadcast_to(self.log_std, mean.shape), value


class QNetwork(nn.Module):
    """``Q(s, ·)`` for discrete actions: ``[..., *obs_shape] -> [..., num_actions]``.

    An image torso where ``torso`` names one (:func:`image_torso`), then an MLP, then one linear
    head, or with ``dueling`` a value and an advantage stream
    combined as ``Q = V + A − mean_a A`` (Wang et al. 2016, "Dueling Network Architectures for
    Deep Reinforcement Learning", arXiv:1511.06581). With ``layer_norm`` each hidden layer is
    ``act(LayerNorm(Dense(x)))`` (Ba et al. 2016), which keeps TD learning stable without a
    target network (Gallici et al. 2024, arXiv:2407.04811).
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (128, 128)
    activation: str = "relu"
    dueling: bool = False
    obs_ndim: ObsNdim = 1
    layer_norm: bool = False
    torso: str = "mlp"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = features(obs, self.obs_ndim, self.torso, self.activation)
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = nn.Dense(size)(x)
            x = act(nn.LayerNorm()(x) if self.layer_norm else x)
        self.sow("intermediates", "features", x)
        if not self.dueling:
            return nn.Dense(self.num_actions)(x)
        value = nn.Dense(1)(x)
        advantage = nn.Dense(self.num_actions)(x)
        return value + advantage - advantage.mean(axis=-1, keepdims=True)


class CategoricalQNetwork(nn.Module):
    """The return distribution ``Z(s, ·)`` of C51 as logits over ``num_atoms`` fixed atoms per
    action: ``[..., *obs_shape] -> [..., num_actions, num_atoms]``; the probabilities are a
    softmax over the last axis (Bellemare, Dabney & Munos 2017, arXiv:1707.06887).

    An image torso where ``torso`` names one, then an MLP, then one linear layer of
    ``num_actions · num_atoms`` outputs, or with
    ``dueling`` a value stream ``[num_atoms]`` and an advantage stream ``[num_actions,
    num_atoms]`` combined atom by atom as ``V + A − mean_a A`` before the softmax (as Rainbow
    does, Hessel et al. 2018).
    """

    num_actions: int
    num_atoms: int = 51
    hidden_sizes: Sequence[int] = (128, 128)
    activation: str = "relu"
    dueling: bool = False
    obs_ndim: ObsNdim = 1
    torso: str = "mlp"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = features(obs, self.obs_ndim, self.torso, self.activation)
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = act(nn.Dense(size)(x))
        self.sow("intermediates", "features", x)
        shape = (*x.shape[:-1], self.num_actions, self.num_atoms)
        logits = nn.Dense(self.num_actions * self.num_atoms)(x).reshape(shape)
        if not self.dueling:
            return logits
        value = nn.Dense(self.num_atoms)(x)[..., None, :]
        return value + logits - logits.mean(axis=-2, keepdims=True)


def hidden_features(network: nn.Module, params: Any, observation: jax.Array) -> jax.Array:
    """The last hidden layer's activations ``[..., F]`` of a network that sows them (the
    Q-networks), for ``observation`` ``[..., *obs_shape]``: what its output layer reads."""
    _, sown = network.apply(params, observation, mutable=["intermediates"])
    (found,) = sown["intermediates"]["features"]
    return found


class ContinuousCritic(nn.Module):
    """An ensemble of ``num_critics`` independent ``Q(s, a)`` MLPs for continuous actions.

    The members share no parameters (``nn.vmap`` over an ensemble axis, each initialised from its
    own key), so their errors are independent enough for clipped double Q-learning's minimum
    (Fujimoto et al. 2018) to curb overestimation. Each is an :class:`MLP` on the concatenated
    flat observation and action.

    Input ``obs [..., *obs_shape]``, ``action [..., A]``; output ``[num_critics, ...]``.
    """

    num_critics: int = 2
    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    obs_ndim: ObsNdim = 1
    input_key: str = ""  # the key of a dict observation it reads ("": all of it)

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        obs = view(obs, self.input_key)
        x = jnp.concatenate(
            [_flat_observation(obs, self.obs_ndim), action.astype(jnp.float32)], axis=-1
        )
        ensemble = nn.vmap(
            MLP,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_critics,
        )
        return ensemble(tuple(self.hidden_sizes), 1, self.activation)(x)[..., 0]


class PerAgent(nn.Module):
    """``network`` with a copy of its parameters for each of a game's ``num_agents`` agents,
    each copy applied to its own agent's rows: independent learners *without* parameter sharing
    (IPPO and MAPPO with ``share_parameters = false``).

    A multi-agent batch is folded game-major (:mod:`~jaxrl_fdg.envs.multi_agent`): row
    ``g·N + i`` is agent ``i`` of game ``g``. The rows are the last of an input's leading axes
    (``[rows]`` as the actor and a learner's minibatch give them, ``[T, rows]`` for a recurrent
    learner's time-major sequences); they are reshaped to ``[G, N]``, ``network`` is mapped over
    the ``N`` axis by ``nn.vmap`` with every parameter leaf given a leading agents axis
    (``variable_axes={"params": 0}``) and each copy initialised from its own key
    (``split_rngs``), and the outputs are reshaped back to rows. So agent ``i``'s rows meet copy
    ``i`` only, and its gradients reach copy ``i`` only: ``N`` networks in one batched product per
    layer, the shared network's cost in arithmetic.

    Which axes lead is read from the inputs' ranks: an observation leaf's own rank is given
    (``obs_ndims``, one per leaf of one agent's observation, in ``jax.tree.leaves`` order), and
    every other input (a recurrent network's memory ``[..., W]``, its features and cell outputs)
    is one vector per row. An input without leading axes (the example observation ``init`` is
    called with) goes whole to every copy, and the outputs gain a leading agents axis.

    It forwards what :class:`~jaxrl_fdg.fragments.actor_critic_policy.Policy` calls:
    ``__call__`` and ``value`` (the observation last, after a recurrent network's memory), and a
    recurrent network's ``encode``, ``recur`` and ``decode``. Whoever applies it must keep each
    game's rows together and in order: the actor acts on whole games, the learner's minibatches
    are drawn by game (``Policy.game_size``), and bootstrap values are gathered for whole games
    (a game's flags are the team's).
    """

    network: nn.Module
    num_agents: int
    obs_ndims: tuple[int, ...]

    def __call__(self, *args: Any) -> Any:
        return self._each_agent("__call__", args, observation=True)

    def value(self, *args: Any) -> Any:
        return self._each_agent("value", args, observation=True)

    def encode(self, obs: Any) -> Any:
        return self._each_agent("encode", (obs,), observation=True)

    def recur(self, memory: jax.Array, features: Any) -> Any:
        return self._each_agent("recur", (memory, features), observation=False)

    def decode(self, core: Any) -> Any:
        return self._each_agent("decode", (core,), observation=False)

    def _each_agent(self, method: str, args: tuple[Any, ...], observation: bool) -> Any:
        """``network.<method>(*args)``, agent ``i``'s copy on agent ``i``'s rows; ``args[-1]``
        is the observation where ``observation``."""
        n = self.num_agents
        lead = self._leading_axes(method, args, observation)

        def call(module: nn.Module, *xs: Any) -> Any:
            return getattr(module, method)(*xs)

        mapped = dict(variable_axes={"params": 0}, split_rngs={"params": True})
        if lead == 0:  # one input for every copy (init's example)
            each = nn.vmap(call, in_axes=None, out_axes=0, axis_size=n, **mapped)
            return each(self.network, *args)
        rows = jax.tree.leaves(args)[0].shape[lead - 1]
        if rows % n:
            raise ValueError(
                f"{method} of a network per agent got {rows} rows, not whole games of {n} agents"
            )

        def games(x: jax.Array) -> jax.Array:  # [..., G·N, *own] -> [..., G, N, *own]
            return x.reshape(*x.shape[: lead - 1], rows // n, n, *x.shape[lead:])

        def rows_again(y: jax.Array) -> jax.Array:  # [..., G, N, *own] -> [..., G·N, *own]
            return y.reshape(*y.shape[: lead - 1], rows, *y.shape[lead + 1 :])

        each = nn.vmap(call, in_axes=lead, out_axes=lead, **mapped)
        return jax.tree.map(rows_again, each(self.network, *jax.tree.map(games, args)))

    def _leading_axes(self, method: str, args: tuple[Any, ...], observation: bool) -> int:
        """The leading axes every input shares (the rows the last of them)."""
        ranks = [(leaf, 1) for leaf in jax.tree.leaves(args[:-1] if observation else args)]
        if observation:
            leaves = jax.tree.leaves(args[-1])
            if len(leaves) != len(self.obs_ndims):
                raise ValueError(
                    f"{method} of a network per agent got an observation of {len(leaves)} "
                    f"arrays, not {len(self.obs_ndims)}"
                )
            ranks += list(zip(leaves, self.obs_ndims, strict=True))
        leads = {jnp.ndim(leaf) - rank for leaf, rank in ranks}
        if len(leads) != 1 or min(leads) < 0:
            shapes = [tuple(jnp.shape(leaf)) for leaf, _ in ranks]
            raise ValueError(
                f"{method} of a network per agent got inputs {shapes} without the same leading "
                f"axes before their own (observation ranks {self.obs_ndims}, vectors otherwise)"
            )
        return leads.pop()


class DeterministicActor(nn.Module):
    """A deterministic policy ``μ(s) = tanh(MLP(s))`` with actions in ``[−1, 1]``, the actor of
    DDPG and TD3.

    The output layer starts near zero (orthogonal gain 0.01, as Lillicrap et al. 2016 draw it from
    ±3·10⁻³), so the first actions sit mid-range, away from the flat ends of the tanh.

    Input ``[..., *obs_shape]``; output ``[..., action_dim]``.
    """

    action_dim: int
    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    obs_ndim: ObsNdim = 1
    input_key: str = ""  # the key of a dict observation it reads ("": all of it)

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        obs = view(obs, self.input_key)
        mlp = MLP(tuple(self.hidden_sizes), self.action_dim, self.activation, out_scale=0.01)
        return jnp.tanh(mlp(_flat_observation(obs, self.obs_ndim)))


class SquashedGaussianActor(nn.Module):
    """The policy of SAC: the mean and log standard deviation of a state-dependent diagonal
    Gaussian, to be squashed by ``tanh`` (``distributions.tanh_gaussian_sample``).

    ``log σ`` is mapped smoothly into ``[log_std_min, log_std_max]`` by a rescaled ``tanh`` (as in
    CleanRL's and OpenAI Spinning Up's SAC), which keeps σ away from 0, where the log-density
    diverges, and from values so large that the squashed policy is all ±1.

    Input ``[..., *obs_shape]``; output ``(mean [..., action_dim], log_std [..., action_dim])``.
    """

    action_dim: int
    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    obs_ndim: ObsNdim = 1
    input_key: str = ""  # the key of a dict observation it reads ("": all of it)
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        obs = view(obs, self.input_key)
        mlp = MLP(tuple(self.hidden_sizes), 2 * self.action_dim, self.activation, out_scale=0.01)
        mean, raw = jnp.split(mlp(_flat_observation(obs, self.obs_ndim)), 2, axis=-1)
        unit = 0.5 * (jnp.tanh(raw) + 1.0)
        return mean, self.log_std_min + (self.log_std_max - self.log_std_min) * unit


__all__ = [
    "ACTIVATIONS",
    "MLP",
    "TORSOS",
    "TORSO_HELP",
    "ActorCritic",
    "CategoricalQNetwork",
    "ContinuousCritic",
    "Conv",
    "ConvTorso",
    "DeterministicActor",
    "GaussianActorCritic",
    "NatureTorso",
    "ObservationEncoder",
    "PerAgent",
    "QNetwork",
    "SquashedGaussianActor",
    "check_torso",
    "features",
    "hidden_features",
    "image_min_size",
    "image_torso",
    "observation_ndim",
    "orthogonal",
    "strided_conv",
]

"""Flax networks shared by the algorithms."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.errors import ConfigError

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "relu": nn.relu,
    "gelu": nn.gelu,
    "silu": nn.silu,
}


def orthogonal(scale: float) -> nn.initializers.Initializer:
    """Orthogonal initialisation (Saxe et al. 2014) as flax draws it, with its QR factorisation
    kept unbatched under ``vmap``.

    Under a vmap (a critic ensemble, seeds, data-parallel shards) flax's initializer becomes one
    batched LAPACK QR, which XLA:CPU runs by splitting the batch over its intra-op thread pool
    and waiting for the pieces. When every thread of that pool is itself such a waiting kernel
    (one per forced device, on a machine with as many cores as devices) nothing is left to run
    the pieces and the program never finishes. ``sequential_vmap`` makes the batch a loop of
    single QRs instead: the same numbers, bit for bit, and no wait on the pool.
    """
    base = nn.initializers.orthogonal(scale)

    def init(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


class MLP(nn.Module):
    """Dense layers with orthogonal initialisation, the convention of PPO implementations.

    Hidden layers use gain √2; the output layer uses ``out_scale`` (0.01 for policy logits, so the
    initial policy is near uniform; 1.0 for values). Engstrom et al. (2020), "Implementation
    Matters in Deep Policy Gradients".
    """

    hidden_sizes: Sequence[int]
    out_dim: int
    activation: str = "tanh"
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = nn.Dense(size, kernel_init=orthogonal(np.sqrt(2.0)))(x)
            x = act(x)
        return nn.Dense(self.out_dim, kernel_init=orthogonal(self.out_scale))(x)


class ConvTorso(nn.Module):
    """Unpadded 3×3 convolutions (stride 1, orthogonal init with gain √2), flattened.

    Small on purpose: it is meant for small boards such as bsuite's Catch (10 × 5), where a stride
    or pooling would throw away most of the image. Each convolution trims a border of one cell,
    so Catch's board leaves 6 × 1 × 16 features, and every one of them sees all five columns.

    Each convolution is a ``Dense`` layer on the nine shifted views of its input stacked along the
    channels (im2col by slicing), not ``nn.Conv``. On the 2-core CPU the gradient of policy and
    value torsos for a minibatch of 128 Catch boards takes 1.6 ms this way against 2.3 ms with
    ``nn.Conv`` (9.5 against 19.6 ms at 512), and it is plain slices and matrix products, which XLA
    compiles to the same arithmetic inside the scan plan's loop and outside it: the kernel gradient
    of ``nn.Conv`` differed in the last bit between the ``scan`` and ``iteration`` fusion modes.
    Padding to keep the board's size would make a step several times slower (measured 6× with
    ``nn.Conv``); both learn Catch.

    Input ``[..., H, W, C]`` with ``H, W ≥ min_size``; output ``[..., (H − 2n)(W − 2n)·f]`` for
    ``n`` convolutions of which the last has ``f`` features.
    """

    features: Sequence[int] = (16, 16)
    activation: str = "relu"
    layer_norm: bool = False  # each convolution's features normalised before the activation

    @property
    def min_size(self) -> int:
        return 2 * len(self.features) + 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for size in self.features:
            h, w = x.shape[-3] - 2, x.shape[-2] - 2
            patches = [x[..., i : i + h, j : j + w, :] for i in range(3) for j in range(3)]
            dense = nn.Dense(size, kernel_init=orthogonal(np.sqrt(2.0)))
            x = dense(jnp.concatenate(patches, axis=-1))
            x = act(nn.LayerNorm()(x) if self.layer_norm else x)
        return x.reshape(*x.shape[:-3], -1)


_NHWC = ("NHWC", "HWIO", "NHWC")


def _conv(x: jax.Array, kernel: jax.Array, stride: int) -> jax.Array:
    return jax.lax.conv_general_dilated(
        x, kernel, (stride, stride), "VALID", dimension_numbers=_NHWC
    )


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def strided_conv(x: jax.Array, kernel: jax.Array, stride: int) -> jax.Array:
    """An unpadded convolution ``[N, H, W, C] × [k, k, C, O] → [N, H', W', O]`` whose gradients
    are convolutions in the same NHWC / HWIO layout.

    JAX differentiates a convolution into convolutions whose dimension labels XLA:CPU rewrites to
    its fast kernels only outside loops: inside the learner's minibatch loop the kernel and input
    gradients of the Atari convolutions ran as generic loops, an order of magnitude slower
    (``docs/decisions.md``; ``benchmarks/atari_profile.py`` measures it). Here the gradients
    transpose their operands themselves, so every convolution is the plain NHWC one wherever it
    is compiled.
    The values are those of ``jax.grad`` of the plain convolution (tested).
    """
    return _conv(x, kernel, stride)


def _strided_conv_forward(x, kernel, stride):
    return _conv(x, kernel, stride), (x, kernel)


def _strided_conv_backward(stride, residuals, g):
    x, kernel = residuals
    k_h, k_w = kernel.shape[:2]
    (height, width), (out_h, out_w) = x.shape[1:3], g.shape[1:3]
    # The input gradient: g spread out by the stride, padded, against the flipped kernel with
    # its input and output features swapped.
    flipped = jnp.transpose(jnp.flip(kernel, (0, 1)), (0, 1, 3, 2))
    padding = (
        (k_h - 1, height - (out_h - 1) * stride - 1),
        (k_w - 1, width - (out_w - 1) * stride - 1),
    )
    dx = jax.lax.conv_general_dilated(
        g, flipped, (1, 1), padding, lhs_dilation=(stride, stride), dimension_numbers=_NHWC
    )
    # The kernel gradient: x's channels as the batch, its batch as the features, g as a kernel
    # dilated by the stride.
    dk = jax.lax.conv_general_dilated(
        jnp.transpose(x, (3, 1, 2, 0)),
        jnp.transpose(g, (1, 2, 0, 3)),
        (1, 1),
        "VALID",
        rhs_dilation=(stride, stride),
        dimension_numbers=_NHWC,
    )
    return dx, jnp.transpose(dk[:, :k_h, :k_w, :], (1, 2, 0, 3))


strided_conv.defvjp(_strided_conv_forward, _strided_conv_backward)


class Conv(nn.Module):
    """``nn.Conv`` unpadded with a square kernel and stride, computed by :func:`strided_conv`;
    the same parameters (``kernel`` ``[k, k, C, O]`` and ``bias``) under the same names."""

    features: int
    size: int
    stride: int
    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        shape = (self.size, self.size, x.shape[-1], self.features)
        kernel = self.param("kernel", self.kernel_init, shape)
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        lead = x.shape[:-3]
        y = strided_conv(x.reshape(-1, *x.shape[-3:]), kernel, self.stride)
        return y.reshape(*lead, *y.shape[1:]) + bias


class NatureTorso(nn.Module):
    """The convolutions of DQN's Atari network (Mnih et al. 2015), flattened: 32 filters 8×8
    stride 4, 64 filters 4×4 stride 2, 64 filters 3×3 stride 1, unpadded, each followed by a
    ReLU; orthogonal init with gain √2, as in PPO's Atari implementations.

    For stacked 84 × 84 frames of 8-bit pixels (Atari through EnvPool): the input is divided by
    255 first. An 84 × 84 input leaves 7 × 7 × 64 = 3,136 features.

    Input ``[..., H, W, C]`` with ``H, W ≥ min_size``.
    """

    min_size = 36  # the smallest side the three strided convolutions leave a cell of

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x / 255.0
        for features, size, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
            x = nn.relu(Conv(features, size, stride, kernel_init=orthogonal(2**0.5))(x))
        return x.reshape(*x.shape[:-3], -1)


TORSOS = ("mlp", "cnn", "minatar", "nature")


def image_torso(torso: str, activation: str) -> nn.Module | None:
    """The image torso ``torso`` names, or None for ``mlp``:

    * ``cnn``: :class:`ConvTorso`, two 3×3 convolutions of 16 (small boards such as Catch);
    * ``minatar``: one 3×3 convolution of 16 with LayerNorm, the convolution of purejaxql's
      MinAtar Q-network (``pqn_minatar.py``: 16 filters 3×3, stride 1, unpadded, LayerNorm,
      ReLU; its Dense 128 with LayerNorm is ``hidden_sizes=(128,)`` after it);
    * ``nature``: :class:`NatureTorso`, DQN's Atari convolutions, for 84 × 84 frames of 8-bit
      pixels (divided by 255 inside).
    """
    if torso == "cnn":
        return ConvTorso(activation=activation)
    if torso == "minatar":
        return ConvTorso(features=(16,), activation=activation, layer_norm=True)
    if torso == "nature":
        return NatureTorso()
    return None


def image_min_size(torso: str) -> int:
    """The smallest image side the ``torso`` takes (0 for ``mlp``)."""
    return {"cnn": 5, "minatar": 3, "nature": NatureTorso.min_size}.get(torso, 0)


TORSO_HELP = (
    "mlp; cnn: 3×3 convolutions first, for small boards (Catch); minatar: purejaxql's MinAtar "
    "convolution; nature: DQN's Atari convolutions, for 84×84 frames"
)


def check_torso(torso: str, obs_shape: tuple[int, ...]) -> None:
    """An image torso needs image observations ``[height, width, channels]`` it fits."""
    size = image_min_size(torso)
    if size and (len(obs_shape) != 3 or min(obs_shape[:2]) < size):
        raise ConfigError(
            f"torso {torso!r} needs image observations [height, width, channels] of at least "
            f"{size} × {size}, got shape {obs_shape}; use torso 'mlp' for this environment"
        )


def features(obs: jax.Array, obs_ndim: int, torso: str, activation: str) -> jax.Array:
    """``[..., *obs_shape] -> [..., F]`` in float32: the observation flattened (``mlp``), or
    through the image torso ``torso`` names (which takes ``[..., H, W, C]``)."""
    module = image_torso(torso, activation)
    if module is None:
        return _flat_observation(obs, obs_ndim)
    return module(obs.astype(jnp.float32))


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
    obs_ndim: int = 1
    torso: str = "mlp"

    def setup(self) -> None:
        self.policy = self._network(self.num_actions, out_scale=0.01)
        self.critic = self._network(1, out_scale=1.0)

    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = self._input(obs)
        return self.policy(x), self.critic(x)[..., 0]

    def value(self, obs: jax.Array) -> jax.Array:
        return self.critic(self._input(obs))[..., 0]

    def _network(self, out_dim: int, out_scale: float) -> nn.Module:
        mlp = MLP(self.hidden_sizes, out_dim, self.activation, out_scale=out_scale)
        torso = image_torso(self.torso, self.activation)
        return mlp if torso is None else nn.Sequential([torso, mlp])

    def _input(self, obs: jax.Array) -> jax.Array:
        obs = obs.astype(jnp.float32)
        if self.torso != "mlp":
            return obs
        lead = obs.shape[: obs.ndim - self.obs_ndim]
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
    obs_ndim: int = 1
    layer_norm: bool = False
    torso: str = "mlp"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = features(obs, self.obs_ndim, self.torso, self.activation)
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = nn.Dense(size)(x)
            x = act(nn.LayerNorm()(x) if self.layer_norm else x)
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
    obs_ndim: int = 1
    torso: str = "mlp"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = features(obs, self.obs_ndim, self.torso, self.activation)
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = act(nn.Dense(size)(x))
        shape = (*x.shape[:-1], self.num_actions, self.num_atoms)
        logits = nn.Dense(self.num_actions * self.num_atoms)(x).reshape(shape)
        if not self.dueling:
            return logits
        value = nn.Dense(self.num_atoms)(x)[..., None, :]
        return value + logits - logits.mean(axis=-2, keepdims=True)


def _flat_observation(obs: jax.Array, obs_ndim: int) -> jax.Array:
    """``[..., *obs_shape] -> [..., prod(obs_shape)]`` in float32."""
    lead = obs.shape[: obs.ndim - obs_ndim]
    return obs.reshape(*lead, -1).astype(jnp.float32)


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
    obs_ndim: int = 1

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
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
    obs_ndim: int = 1

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
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
    obs_ndim: int = 1
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mlp = MLP(tuple(self.hidden_sizes), 2 * self.action_dim, self.activation, out_scale=0.01)
        mean, raw = jnp.split(mlp(_flat_observation(obs, self.obs_ndim)), 2, axis=-1)
        unit = 0.5 * (jnp.tanh(raw) + 1.0)
        return mean, self.log_std_min + (self.log_std_max - self.log_std_min) * unit

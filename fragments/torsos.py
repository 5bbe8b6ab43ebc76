"""Image torsos: the convolutions in front of a network's MLP, by name (``torso``), and the
observation's features they make (flattened for ``mlp``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.envs import spaces
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments.layers import ACTIVATIONS, orthogonal


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


ObsNdim = int | tuple[int, ...]
"""The rank of one observation (an int), or of each leaf of a structured one, in pytree order (a
tuple): what the networks need to tell an observation's axes from the batch's."""


def observation_ndim(space: Any) -> ObsNdim:
    """``len(shape)`` of an observation space of one array; for a structured space
    (:class:`~jaxrl_fdg.envs.spaces.Dict`, :class:`~jaxrl_fdg.envs.spaces.Tuple`) the tuple of
    its leaves' ranks, in the order ``jax.tree.leaves`` gives the observation's arrays."""
    if spaces.is_nested(space):
        return tuple(len(leaf.shape) for _, leaf in spaces.leaves(space))
    return len(space.shape)


def observation_part(space: Any, key: str, flag: str = "observation key") -> Any:
    """The space of the part ``key`` names of a :class:`~jaxrl_fdg.envs.spaces.Dict`
    observation (``""``: the whole observation), or a one-line ``ConfigError`` naming the keys
    there are (``flag`` names the setting in the message)."""
    if not key:
        return space
    if not isinstance(space, spaces.Dict):
        raise ConfigError(
            f"{flag} = {key!r} picks a key of a dict observation; this environment's observation "
            f"is {spaces.describe(space)}"
        )
    if key not in space.spaces:
        raise ConfigError(
            f"{flag} = {key!r} is no key of the observation; valid: {', '.join(space.spaces)}"
        )
    return space.spaces[key]


ACTOR_OBSERVATION_HELP = "key of a dict observation the actor reads (empty: the whole observation)"
CRITIC_OBSERVATION_HELP = (
    "key of a dict observation the critic reads, e.g. privileged_state (empty: the whole "
    "observation)"
)


def view(obs: Any, key: str) -> Any:
    """The part of ``obs`` that ``key`` names (``obs[key]``), or all of it for ``""``."""
    return obs[key] if key else obs


def check_torso(torso: str, obs: Any) -> None:
    """An image torso needs image observations ``[height, width, channels]`` it fits.

    ``obs`` is the observation's shape, or its space: in a structured one the image torso reads
    the leaves of rank 3 (each through its own convolutions) and flattens the others, so at
    least one leaf must be an image it fits, and every rank-3 leaf must fit."""
    size = image_min_size(torso)
    if not size:
        return
    if spaces.is_nested(obs):
        images = [(path, leaf.shape) for path, leaf in spaces.leaves(obs) if len(leaf.shape) == 3]
        small = [(p, s) for p, s in images if min(s[:2]) < size]
        if images and not small:
            return
        found = ", ".join(f"{p}: {tuple(s)}" for p, s in spaces.leaves_shapes(obs))
        raise ConfigError(
            f"torso {torso!r} needs image leaves [height, width, channels] of at least {size} × "
            f"{size} in the observation, got {found}; use torso 'mlp' for this environment"
        )
    obs_shape = tuple(getattr(obs, "shape", obs))
    if len(obs_shape) != 3 or min(obs_shape[:2]) < size:
        raise ConfigError(
            f"torso {torso!r} needs image observations [height, width, channels] of at least "
            f"{size} × {size}, got shape {obs_shape}; use torso 'mlp' for this environment"
        )


def features(obs: Any, obs_ndim: ObsNdim, torso: str, activation: str) -> jax.Array:
    """``[..., *obs_shape] -> [..., F]`` in float32: the observation flattened (``mlp``), or
    through the image torso ``torso`` names (which takes ``[..., H, W, C]``).

    A structured observation (``obs_ndim`` a tuple) goes leaf by leaf: each image leaf (rank 3)
    through an image torso of its own where ``torso`` names one, every other leaf flattened,
    and the features of all joined along the last axis."""
    if isinstance(obs_ndim, tuple):
        return ObservationEncoder(obs_ndim, torso, activation)(obs)
    module = image_torso(torso, activation)
    if module is None:
        return _flat_observation(obs, obs_ndim)
    return module(obs.astype(jnp.float32))


class ObservationEncoder(nn.Module):
    """The features of a structured observation (a dict or tuple of arrays), leaf by leaf:
    image leaves (rank 3) through the image torso ``torso`` names, one per leaf, every other
    leaf flattened; joined along the last axis in pytree order. Input: the observation with any
    leading batch axes; output ``[..., F]`` float32."""

    obs_ndim: tuple[int, ...]
    torso: str = "mlp"
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        parts = []
        for x, ndim in zip(jax.tree.leaves(obs), self.obs_ndim, strict=True):
            module = image_torso(self.torso, self.activation) if ndim == 3 else None
            if module is None:
                parts.append(_flat_observation(x, ndim))
            else:
                parts.append(module(x.astype(jnp.float32)))
        return jnp.concatenate(parts, axis=-1)


def _flat_observation(obs: Any, obs_ndim: ObsNdim) -> jax.Array:
    """``[..., *obs_shape] -> [..., prod(obs_shape)]`` in float32; a structured observation's
    leaves (``obs_ndim`` a tuple) each flattened so, then joined in pytree order."""
    if isinstance(obs_ndim, tuple):
        leaves = jax.tree.leaves(obs)
        flat = [_flat_observation(x, n) for x, n in zip(leaves, obs_ndim, strict=True)]
        return jnp.concatenate(flat, axis=-1)
    lead = obs.shape[: obs.ndim - obs_ndim]
    return obs.reshape(*lead, -1).astype(jnp.float32)

"""DQN, C51 and PQN see images through the torsos PPO has: the network's layers, the checks
before compiling, and one run of each whose fusion modes agree."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.fragments.networks import QNetwork

_OFF_POLICY = {"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125}
TINY = rl.TrainConfig(
    env="Catch-bsuite",  # a 10 × 5 board, one channel
    total_steps=2 * 8 * 3,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    profile="off",
    log_every=3,
)
HPARAMS = {
    "dqn": {**_OFF_POLICY, "torso": "minatar", "hidden_sizes": (16,)},
    "c51": {**_OFF_POLICY, "torso": "cnn", "hidden_sizes": (16,), "num_atoms": 11},
    "pqn": {"torso": "minatar", "hidden_sizes": (16,), "num_minibatches": 2, "update_epochs": 1},
}


def test_minatar_torso_is_purejaxqls_network():
    # One 3×3 convolution of 16 with LayerNorm and ReLU, flattened, then the MLP (a Dense 128
    # with LayerNorm: hidden_sizes=(128,), layer_norm) and the head: pqn_minatar.py's CNN.
    net = QNetwork(num_actions=3, hidden_sizes=(128,), torso="minatar", layer_norm=True)
    board = jnp.zeros((5, 10, 10, 4))  # MinAtar Breakout: 10 × 10, 4 channels
    params = net.init(jax.random.key(0), board)["params"]
    shapes = jax.tree.map(jnp.shape, params)
    assert shapes["ConvTorso_0"]["Dense_0"]["kernel"] == (9 * 4, 16)
    assert shapes["ConvTorso_0"]["LayerNorm_0"]["scale"] == (16,)
    assert shapes["Dense_0"]["kernel"] == (8 * 8 * 16, 128)
    assert shapes["Dense_1"]["kernel"] == (128, 3)
    assert net.apply({"params": params}, board).shape == (5, 3)


@pytest.mark.parametrize("algo", sorted(HPARAMS))
def test_image_torsos_are_checked_before_compiling(algo):
    with pytest.raises(rl.ConfigError, match=r"torso 'minatar' needs image observations.*\(4,\)"):
        resolve(TINY.replace(algo=algo, env="CartPole-v1", hparams={"torso": "minatar"}))
    with pytest.raises(rl.ConfigError, match=r"torso 'nature' needs .* at least 36 × 36"):
        resolve(TINY.replace(algo=algo, hparams={"torso": "nature"}))
    with pytest.raises(rl.ConfigError, match=r"unknown torso 'vit' \(valid: mlp, cnn, minatar"):
        resolve(TINY.replace(algo=algo, hparams={"torso": "vit"}))


@pytest.mark.parametrize(
    "algo", ["dqn", *(pytest.param(a, marks=pytest.mark.slow) for a in ("pqn", "c51"))]
)
def test_a_pixel_run_is_the_same_under_step_and_scan(algo):
    config = TINY.replace(algo=algo, hparams=HPARAMS[algo])
    scan, step = (rl.train(config.replace(fusion=mode)) for mode in ("scan", "step"))
    learner = scan.state.fragments["learner"]
    assert "ConvTorso_0" in learner.params["params"]  # the network did look through the torso
    testing.assert_same_bits(step, scan, "step against scan")


@pytest.mark.parametrize(
    ("shape", "features", "size", "stride"),
    [
        ((2, 84, 84, 4), 32, 8, 4),
        ((2, 3, 11, 11, 2), 4, 3, 2),  # a leading batch of two axes, an uneven stride
        # Slow tier: the nature torso's other two layers.
        pytest.param((3, 20, 20, 32), 64, 4, 2, marks=pytest.mark.slow),
        pytest.param((3, 9, 9, 6), 5, 3, 1, marks=pytest.mark.slow),
    ],
)
def test_the_atari_convolution_equals_flax_conv_with_gradients_in_loops(
    shape, features, size, stride
):
    # networks.Conv computes its gradients as NHWC convolutions (XLA:CPU's generic loop for the
    # labels JAX's own gradient has was an order of magnitude slower inside the learner's loop):
    # the same parameters, values and gradients as nn.Conv, outside a loop and inside one.
    from jaxrl_fdg.fragments.networks import Conv

    x = jax.random.normal(jax.random.key(0), shape)
    ours = Conv(features, size, stride)
    flax_conv = nn.Conv(features, (size, size), (stride, stride), "VALID")
    params = flax_conv.init(jax.random.key(1), x)
    assert jax.tree.map(jnp.shape, ours.init(jax.random.key(1), x)) == jax.tree.map(
        jnp.shape, params
    )

    def grads(module):
        def loss(p, x):
            return jnp.sum(jnp.sin(module.apply(p, x)))

        def looped(p, x):
            return jax.lax.fori_loop(0, 2, lambda i, acc: jax.grad(loss, (0, 1))(p, x), (p, x))

        return jax.jit(jax.grad(loss, (0, 1)))(params, x), jax.jit(looped)(params, x)

    for want, got in zip(grads(flax_conv), grads(ours), strict=True):
        for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)
    np.testing.assert_array_equal(ours.apply(params, x), flax_conv.apply(params, x))

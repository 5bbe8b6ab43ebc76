"""Structured observations (a dict of arrays, Minefield-v0's image and position) through the
networks, normalisation and replay, and the one-line error for an observation unlike its space."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.contracts import check_reset
from jaxrl_fdg.envs.errors import EnvironmentContractError
from jaxrl_fdg.fragments.networks import ActorCritic, QNetwork
from jaxrl_fdg.fragments.normalization import ObservationMoments
from jaxrl_fdg.fragments.torsos import check_torso, observation_ndim

SPACE = spaces.Dict(
    {
        "position": spaces.Box(0.0, 1.0, (2,), jnp.float32),
        "board": spaces.Box(0.0, 1.0, (6, 6, 2), jnp.float32),
    }
)


def test_a_dict_space_lists_its_leaves_in_pytree_order():
    assert [path for path, _ in spaces.leaves(SPACE)] == ["board", "position"]
    assert observation_ndim(SPACE) == (3, 1)
    example = spaces.example(SPACE, (4,))
    assert example["board"].shape == (4, 6, 6, 2) and example["position"].shape == (4, 2)
    assert spaces.mismatch(SPACE, example, (4,)) is None
    assert bool(SPACE.contains(SPACE.sample(jax.random.key(0))))


def test_mismatches_name_the_leaf_and_what_the_space_says():
    bad = {"board": jnp.zeros((6, 6, 2)), "position": jnp.zeros((3,))}
    assert (
        spaces.mismatch(SPACE, bad) == "observation['position'] has shape (3,), its space says (2,)"
    )
    assert "keys ['board']" in spaces.mismatch(SPACE, {"board": bad["board"]})
    assert "declare a spaces.Dict" in spaces.mismatch(spaces.Box(0, 1, (2,)), bad)
    wrong_dtype = {**bad, "position": jnp.zeros((2,), jnp.int32)}
    assert spaces.mismatch(SPACE, wrong_dtype) == (
        "observation['position'] has dtype int32, its space says float32"
    )


@pytest.mark.parametrize("torso", ["mlp", "cnn"])
def test_networks_take_each_leaf_through_its_own_torso(torso):
    obs = spaces.example(SPACE, (3,))
    net = QNetwork(num_actions=4, hidden_sizes=(8,), obs_ndim=observation_ndim(SPACE), torso=torso)
    params = net.init(jax.random.key(0), obs)
    assert net.apply(params, obs).shape == (3, 4)
    kernels = [p for p, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    has_conv = any("ConvTorso" in jax.tree_util.keystr(p) for p in kernels)
    assert has_conv == (torso == "cnn")
    ac = ActorCritic(
        num_actions=4, hidden_sizes=(8,), obs_ndim=observation_ndim(SPACE), torso=torso
    )
    logits, value = ac.apply(ac.init(jax.random.key(0), obs), obs)
    assert logits.shape == (3, 4) and value.shape == (3,)


def test_an_image_torso_needs_an_image_leaf_it_fits():
    check_torso("cnn", SPACE)
    with pytest.raises(rl.ConfigError, match="image leaves"):
        check_torso("nature", SPACE)  # 6 × 6 is below the Atari convolutions' 36
    with pytest.raises(rl.ConfigError, match="image leaves"):
        check_torso("cnn", spaces.Dict({"v": spaces.Box(0, 1, (3,))}))


def test_moments_are_kept_per_leaf():
    moments = ObservationMoments(SPACE)
    state = moments.init()
    rng = np.random.default_rng(0)
    batch = {
        "board": jnp.asarray(rng.normal(3.0, 2.0, (64, 6, 6, 2)), jnp.float32),
        "position": jnp.asarray(rng.normal(-1.0, 0.5, (64, 2)), jnp.float32),
    }
    state = moments.update(state, batch, lambda x: x)
    np.testing.assert_allclose(state.mean["position"], batch["position"].mean(0), rtol=1e-3)
    np.testing.assert_allclose(state.mean["board"], batch["board"].mean(0), rtol=1e-3)
    standardized = moments.standardize(state, batch)
    assert abs(float(standardized["position"].mean())) < 1e-3
    # An observation of one array keeps the moments it always had: arrays, not dicts.
    single = ObservationMoments((3,))
    assert isinstance(single.init().mean, jax.Array)


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_normalised_dict_observations_train(algo):
    hparams = {"normalize_observations": True} if algo == "ppo" else {}
    result = rl.train(testing.tiny(algo, env="Minefield-v0", hparams=hparams))
    assert np.all(np.isfinite(np.asarray(result.metrics["loss"])))


class _Lying(envs.Minefield):
    """A Minefield whose space declares a vector its observations do not have."""

    def observation_space(self, params):
        space = super().observation_space(params)
        return spaces.Dict({**space.spaces, "fuel": spaces.Box(0.0, 1.0, (1,))})


def test_an_observation_unlike_its_space_is_one_line_before_compiling():
    env = _Lying()
    with pytest.raises(EnvironmentContractError) as error:
        check_reset(env, env.default_params)
    message = str(error.value)
    assert "\n" not in message
    assert (
        "observation has keys ['board', 'position'], its space ['board', 'fuel', 'position']"
        in message
    )
    if "Lying-v0" not in envs.registered():
        envs.register("Lying-v0", _Lying)
    with pytest.raises(rl.ConfigError, match="its space"):  # the CLI's exit 2, in one line
        rl.resolve(testing.tiny("ppo", env="Lying-v0"))

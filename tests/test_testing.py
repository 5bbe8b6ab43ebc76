"""jaxrl_fdg.testing: what a user's tests of their algorithm use."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import testing


def test_differences_name_the_leaves_that_differ():
    a = {"w": jnp.ones(3), "key": jax.random.key(0), "n": jnp.int32(1)}
    assert testing.differences(a, a) == []
    b = {**a, "w": jnp.array([1.0, 2.0, 1.0])}
    assert testing.differences(a, b) == ["['w']"]
    assert testing.differences(a, {**a, "key": jax.random.key(1)}) == ["['key']"]
    assert testing.differences(a, {**a, "n": jnp.float32(1)}) == ["['n']"]  # another dtype
    assert testing.differences(a, {"w": a["w"]})[0].startswith("structure:")
    nan = {"x": jnp.array([np.nan])}
    assert testing.differences(nan, nan) == []
    with pytest.raises(AssertionError, match="state: not the same bits at \\['w'\\]"):
        testing.assert_same_bits(a, b, "state")


def test_tiny_configurations_of_built_ins_and_of_algorithms_built_on_them():
    config = testing.tiny("sac")
    assert config.env == "Pendulum-v1" and config.num_iterations == 3
    assert config.hparams["learning_starts"] == 16
    mine = testing.tiny("my-dqn", 5, like="dqn", hparams={"batch_size": 4}, seed=3)
    assert mine.algo == "my-dqn" and mine.env == "CartPole-v1" and mine.seed == 3
    assert mine.hparams["batch_size"] == 4 and mine.hparams["buffer_size"] == 64
    assert mine.num_iterations == 5


def test_modes_agree_and_a_difference_is_caught():
    runs = testing.assert_modes_agree(testing.tiny("ppo", 2), modes=("step", "scan"))
    assert set(runs) == {"step", "scan"}
    other = testing.run_modes(testing.tiny("ppo", 2, seed=1), modes=("scan",))["scan"]
    with pytest.raises(AssertionError, match="not the same bits"):
        testing.assert_same_bits(runs["scan"], other)

"""An asymmetric actor-critic: the actor reads one key of a dict observation, the critic another
(``actor_observation``, ``critic_observation``), for PPO, A2C and the continuous-control
algorithms; Playground's locomotion tasks observe ``state`` beside ``privileged_state`` so."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.fragments.actor_critic_policy import Policy
from jaxrl_fdg.fragments.algorithms import ppo


class PrivilegedPendulum(envs.Wrapper):
    """Pendulum observed as ``{"state": (cos θ, sin θ), "privileged_state": (cos θ, sin θ, θ̇)}``:
    the angular velocity only in the privileged part."""

    def __init__(self):
        super().__init__(envs.Pendulum())
        self.name = "PrivilegedPendulum-v0"

    def reset_env(self, key, params):
        state, obs = super().reset_env(key, params)
        return state, _split(obs)

    def auto_reset_env(self, key, state, params):
        state, obs = super().auto_reset_env(key, state, params)
        return state, _split(obs)

    def step_env(self, key, state, action, params):
        state, obs, reward, terminated = super().step_env(key, state, action, params)
        return state, _split(obs), reward, terminated

    def observation_space(self, params):
        return spaces.Dict(
            {
                "state": spaces.Box(-1.0, 1.0, (2,), jnp.float32),
                "privileged_state": spaces.Box(-8.0, 8.0, (3,), jnp.float32),
            }
        )


def _split(obs):
    return {"state": obs[:2], "privileged_state": obs}


if "PrivilegedPendulum-v0" not in envs.registered():
    envs.register("PrivilegedPendulum-v0", PrivilegedPendulum)

ASYMMETRIC = {"actor_observation": "state", "critic_observation": "privileged_state"}


def _context(algo: str, **hparams):
    config = testing.tiny(algo, env="PrivilegedPendulum-v0", hparams={**ASYMMETRIC, **hparams})
    return rl.resolve(config).context


def test_the_actor_never_sees_the_privileged_part_and_the_critic_does():
    policy = Policy(_context("ppo"))
    params = policy.init(jax.random.key(0))
    obs = spaces.example(PrivilegedPendulum().observation_space(None), (4,))

    def outputs(privileged):
        mean, _, value = policy._apply(params, {**obs, "privileged_state": privileged})
        return mean.sum(), value.sum()

    d_mean = jax.grad(lambda p: outputs(p)[0])(obs["privileged_state"])
    d_value = jax.grad(lambda p: outputs(p)[1])(obs["privileged_state"])
    assert float(jnp.abs(d_mean).sum()) == 0.0
    assert float(jnp.abs(d_value).sum()) > 0.0
    kernels = params["params"]
    assert kernels["policy"]["Dense_0"]["kernel"].shape[0] == 2
    assert kernels["critic"]["Dense_0"]["kernel"].shape[0] == 3


@pytest.mark.parametrize("algo", ["ppo", "sac", pytest.param("td3", marks=pytest.mark.slow)])
def test_asymmetric_runs_train(algo):
    result = rl.train(testing.tiny(algo, env="PrivilegedPendulum-v0", hparams=ASYMMETRIC))
    losses = [v for k, v in result.metrics.items() if "loss" in k]
    assert losses and all(np.all(np.isfinite(np.asarray(v))) for v in losses)
    learner = result.state.fragments["learner"]
    leaves = jax.tree_util.tree_flatten_with_path(learner)[0]
    first = {
        jax.tree_util.keystr(path): x.shape
        for path, x in leaves
        if "Dense_0" in jax.tree_util.keystr(path) and "kernel" in jax.tree_util.keystr(path)
    }
    widths = {shape[-2] for shape in first.values()}
    if algo == "ppo":
        assert widths == {2, 3}  # the actor's 2 inputs, the critic's 3
    else:  # the critic also reads the action (1 dimension): 3 + 1
        assert 2 in widths and 4 in widths


def test_asymmetric_runs_agree_across_fusion_modes():
    config = testing.tiny("ppo", env="PrivilegedPendulum-v0", hparams=ASYMMETRIC)
    testing.assert_modes_agree(config, ppo.SPEC, modes=("step", "scan"))


def test_a_key_the_observation_lacks_is_refused_with_the_valid_ones():
    with pytest.raises(rl.ConfigError, match="no key of the observation; valid: state, privileged"):
        _context("ppo", critic_observation="privileged")
    with pytest.raises(rl.ConfigError, match="picks a key of a dict observation"):
        rl.resolve(testing.tiny("sac", hparams={"critic_observation": "privileged_state"}))


def test_a_recurrent_asymmetric_actor_critic_keeps_each_core_on_its_key():
    # Each core (torso, then its cell) reads its own key: MAPPO's recurrent critic on the world
    # state, the actors' cells on their observations.
    policy = Policy(_context("ppo", memory="gru", memory_size=8, hidden_sizes=(16,)))
    params = policy.init(jax.random.key(0))["params"]
    assert params["policy_core"]["body"]["Dense_0"]["kernel"].shape[0] == 2
    assert params["value_core"]["body"]["Dense_0"]["kernel"].shape[0] == 3

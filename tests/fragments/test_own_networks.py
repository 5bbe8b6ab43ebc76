"""A network of one's own in a built-in algorithm: ``ppo.build(ctx, policy=Policy(ctx,
network=...))`` and ``dqn.build(ctx, network=...)`` train it with the algorithm's sampling,
masks and losses, with no copy of the algorithm."""

import flax.linen as nn
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.fragments.actor_critic_policy import Policy
from jaxrl_fdg.fragments.algorithms import a2c, dqn, ppo
from jaxrl_fdg.fragments.torsos import ObservationEncoder, features


class SharedTorso(nn.Module):
    """Policy and value heads on one torso (the built-in keeps them apart)."""

    num_actions: int

    def setup(self):
        self.encoder = ObservationEncoder((3, 1))  # Minefield's board and position, flattened
        self.torso = nn.Dense(16)
        self.logits = nn.Dense(self.num_actions)
        self.head = nn.Dense(1)

    def _features(self, obs):
        return jnp.tanh(self.torso(self.encoder(obs)))

    def __call__(self, obs):
        x = self._features(obs)
        return self.logits(x), self.head(x)[..., 0]

    def value(self, obs):
        return self.head(self._features(obs))[..., 0]


class TinyQ(nn.Module):
    num_actions: int

    @nn.compact
    def __call__(self, obs):
        return nn.Dense(self.num_actions)(features(obs, (3, 1), "mlp", "relu"))


@pytest.mark.parametrize("module", [ppo, a2c])
def test_an_actor_critic_of_ones_own_trains_under_the_mask(module):
    spec = rl.core.algorithm.get(module.SPEC.name)
    own = spec._replace(build=lambda ctx: module.build(ctx, policy=Policy(ctx, SharedTorso(5))))
    result = rl.train(testing.tiny(module.SPEC.name, env="Minefield-v0"), own)
    params = result.state.fragments["learner"].params["params"]
    assert set(params) == {"torso", "logits", "head"}  # the encoder has no parameters
    assert np.all(np.isfinite(np.asarray(result.metrics["loss"])))


def test_a_q_network_of_ones_own_trains():
    own = dqn.SPEC._replace(build=lambda ctx: dqn.build(ctx, network=TinyQ(5)))
    result = rl.train(testing.tiny("dqn", env="Minefield-v0"), own)
    params = result.state.fragments["learner"].params["params"]
    assert set(params) == {"Dense_0"}


class SharedCore(nn.Module):
    """One torso and GRU for policy and value (the built-in recurrent network keeps two)."""

    num_actions: int
    memory_width: int = 8

    def setup(self):
        self.torso = nn.Dense(16)
        self.cell = nn.GRUCell(self.memory_width)
        self.logits = nn.Dense(self.num_actions)
        self.head = nn.Dense(1)

    def _core(self, memory, obs):
        return self.cell(memory, nn.relu(self.torso(obs)))

    def __call__(self, memory, obs):
        memory, y = self._core(memory, obs)
        return memory, (self.logits(y), self.head(y)[..., 0])

    def value(self, memory, obs):
        return self.head(self._core(memory, obs)[1])[..., 0]


def test_a_recurrent_network_of_ones_own_keeps_its_own_memory():
    spec = rl.core.algorithm.get("ppo")
    own = spec._replace(build=lambda ctx: ppo.build(ctx, policy=Policy(ctx, SharedCore(2))))
    config = testing.tiny("ppo", hparams={"memory": "gru", "memory_size": 32})
    result = rl.train(config, own)
    assert set(result.state.fragments["learner"].params["params"]) == {
        "torso", "cell", "logits", "head"
    }  # fmt: skip
    memory = result.state.fragments["actor"].memory
    assert memory.shape == (config.num_envs, 8)  # its width, not memory_size's
    assert np.all(np.isfinite(np.asarray(result.metrics["loss"])))

"""The network of Craftax_Baselines' ``ppo_rnn.py``, as a network of one's own in our PPO.

Their ``ActorCriticRNN``: the observation through a 512-unit ReLU layer into one GRU of 512
units that policy and value share, then a policy head and a value head of two 512-unit ReLU
layers each. Ours (``RecurrentActorCritic``) keeps a core per network; this module is theirs for
``benchmarks/craftax_baseline.py --algo ppo-rnn``, trained by the built-in PPO through
``ppo.build(ctx, policy=Policy(ctx, network))`` with ``memory gru`` (the memory, one GRU's 512
units, zeros at an episode's start, is the policy's business, as for the built-in network):

    jaxrl-fdg train --algo benchmarks/craftax_rnn.py:SPEC --memory gru ...

Initialisation as theirs: orthogonal with gain √2 into the GRU, 2 in the heads' hidden layers,
0.01 and 1.0 on the outputs, zero biases; the GRU's own defaults (LeCun-normal input kernels,
orthogonal recurrent kernels).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import numpy as np

from jaxrl_fdg.fragments.actor_critic_policy import Policy
from jaxrl_fdg.fragments.algorithms import ppo
from jaxrl_fdg.fragments.layers import orthogonal

LAYER_SIZE = 512


class SharedGRUActorCritic(nn.Module):
    num_actions: int
    layer_size: int = LAYER_SIZE

    @property
    def memory_width(self) -> int:
        return self.layer_size

    def setup(self) -> None:
        def dense(units: int, gain: float) -> nn.Dense:
            return nn.Dense(units, kernel_init=orthogonal(gain))

        self.embed = dense(self.layer_size, np.sqrt(2.0))
        # flax's default recurrent initializer is orthogonal too; ours draws each seed's QR on
        # its own under the seeds' vmap (fragments.layers.orthogonal): the same numbers.
        self.cell = nn.GRUCell(self.layer_size, recurrent_kernel_init=orthogonal(1.0))
        self.actor = [dense(self.layer_size, 2.0), dense(self.layer_size, 2.0)]
        self.logits = dense(self.num_actions, 0.01)
        self.critic = [dense(self.layer_size, 2.0), dense(self.layer_size, 2.0)]
        self.head = dense(1, 1.0)

    def __call__(self, memory: jax.Array, obs: jax.Array):
        memory, y = self.recur(memory, self.encode(obs))
        return memory, self.decode(y)

    # One step in three parts: a learner re-running whole sequences embeds and decodes every
    # step at once and scans only the GRU (Policy.unroll), as their ScannedRNN does.

    def encode(self, obs: jax.Array) -> jax.Array:
        return nn.relu(self.embed(obs))

    def recur(self, memory: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self.cell(memory, x)

    def decode(self, y: jax.Array) -> tuple[jax.Array, jax.Array]:
        x, v = y, y
        for layer in self.actor:
            x = nn.relu(layer(x))
        for layer in self.critic:
            v = nn.relu(layer(v))
        return self.logits(x), self.head(v)[..., 0]

    def value(self, memory: jax.Array, obs: jax.Array) -> jax.Array:
        return self.decode(self.recur(memory, self.encode(obs))[1])[1]


def build(ctx):
    return ppo.build(ctx, policy=Policy(ctx, SharedGRUActorCritic(ctx.action_space.n)))


SPEC = ppo.SPEC._replace(
    name="ppo_rnn_shared",
    build=build,
    summary="PPO with Craftax_Baselines' PPO-RNN network (one GRU shared by policy and value)",
)

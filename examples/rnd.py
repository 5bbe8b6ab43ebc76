"""Random network distillation: PPO with an exploration bonus, as one fragment beside PPO's.

A fixed, randomly initialised target network ``f`` embeds each observation the agent reaches; a
predictor network ``f̂`` learns to reproduce the embedding. Its error is large on observations
seen rarely, so it serves as a novelty bonus added to the reward (Burda et al. 2018,
"Exploration by Random Network Distillation", arXiv:1810.12894):

    r'_t = r_t + β · ‖f̂(s̄_{t+1}) − f(s̄_{t+1})‖² / σ_b

where ``s̄`` is the observation standardised by running moments and ``σ_b`` a running standard
deviation of the bonus, so that ``β`` means the same whatever the scale of the error.

The fragment reads the ``trajectory`` after the rollout and writes it back with the bonus added,
so the graph runs it between the rollout and PPO's learner; it trains its predictor on the same
observations once per iteration. Nothing of PPO is copied or changed: the fragment joins PPO's
graph with ``Algorithm.with_fragments``, and every fusion mode computes the same bits.

    python examples/rnd.py --total-steps 100000
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.core.names import METRICS, TRAJECTORY
from jaxrl_fdg.fragments.algorithms import ppo


@dataclasses.dataclass(frozen=True)
class RNDConfig(ppo.PPOConfig):
    rnd_coef: float = rl.hparam(0.05, "weight β of the novelty bonus added to the reward")
    rnd_lr: float = rl.hparam(1e-3, "learning rate of the predictor network")
    rnd_width: int = rl.hparam(64, "width of the target's and predictor's hidden layer and output")


class Embedding(nn.Module):
    """An observation's embedding: one hidden layer, then a linear output."""

    width: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(self.width)(nn.relu(nn.Dense(self.width)(x)))


class Moments(NamedTuple):
    """Running count, mean and variance (Chan et al.'s parallel update)."""

    count: jax.Array
    mean: jax.Array
    var: jax.Array

    def add(self, batch: jax.Array) -> Moments:
        n = batch.shape[0]
        delta = batch.mean(0) - self.mean
        total = self.count + n
        m2 = self.var * self.count + batch.var(0) * n + delta**2 * self.count * n / total
        return Moments(total, self.mean + delta * n / total, m2 / total)


def _moments(size: int) -> Moments:
    return Moments(jnp.float32(1e-4), jnp.zeros((size,)), jnp.ones((size,)))


class RNDState(NamedTuple):
    predictor: Any
    target: Any  # fixed: never trained
    opt_state: Any
    observations: Moments
    bonus: Moments


def rnd(hp: RNDConfig, observation_shape: tuple[int, ...]) -> rl.Fragment:
    """The RND fragment: reads and rewrites the ``trajectory``, trains its predictor."""
    net, tx = Embedding(hp.rnd_width), optax.adam(hp.rnd_lr)
    size = math.prod(observation_shape)

    def init(key: jax.Array) -> RNDState:
        k_predictor, k_target = jax.random.split(key)
        example = jnp.zeros((1, size), jnp.float32)
        predictor = net.init(k_predictor, example)
        return RNDState(
            predictor,
            net.init(k_target, example),
            tx.init(predictor),
            _moments(size),
            _moments(1),
        )

    def error(predictor: Any, target: Any, observations: jax.Array) -> jax.Array:
        difference = net.apply(predictor, observations) - net.apply(target, observations)
        return jnp.sum(difference**2, -1)

    def apply(state: RNDState, inputs: dict, key: jax.Array):
        del key
        trajectory = inputs[TRAJECTORY]  # fields [T, B, ...]
        flat = trajectory.next_observation.reshape(-1, size).astype(jnp.float32)
        moments = state.observations.add(flat)
        scaled = jnp.clip((flat - moments.mean) / jnp.sqrt(moments.var + 1e-8), -5.0, 5.0)
        loss, grads = jax.value_and_grad(lambda p: error(p, state.target, scaled).mean())(
            state.predictor
        )
        raw = jax.lax.stop_gradient(error(state.predictor, state.target, scaled))
        spread = state.bonus.add(raw[:, None])
        bonus = (raw / jnp.sqrt(spread.var[0] + 1e-8)).reshape(trajectory.reward.shape)
        updates, opt_state = tx.update(grads, state.opt_state)
        predictor = optax.apply_updates(state.predictor, updates)
        new = RNDState(predictor, state.target, opt_state, moments, spread)
        rewritten = trajectory._replace(reward=trajectory.reward + hp.rnd_coef * bonus)
        return new, {TRAJECTORY: rewritten, METRICS: {"bonus": bonus.mean(), "loss": loss}}

    return rl.fragment(
        "rnd",
        rl.Role.TRANSFORM,
        apply,
        init=init,
        inputs=(TRAJECTORY,),
        outputs=(TRAJECTORY, METRICS),
    )


def build(ctx: rl.AlgorithmContext[RNDConfig]) -> rl.Algorithm:
    return ppo.build(ctx).with_fragments(rnd(ctx.hparams, tuple(ctx.observation_space.shape)))


SPEC = ppo.SPEC._replace(
    name="ppo-rnd",
    hparams=RNDConfig,
    build=build,
    summary="PPO with random network distillation (Burda et al. 2018)",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--fusion", default="fragment,scan", help="comma-separated fusion modes")
    args = parser.parse_args()
    config = rl.TrainConfig(algo=SPEC.name, total_steps=args.total_steps, out=None)
    print(rl.build_loop(rl.resolve(config, SPEC)).graph.describe())
    runs = testing.assert_modes_agree(config, SPEC, [m for m in args.fusion.split(",") if m])
    for mode, run in runs.items():
        s = run.summary
        print(f"{mode:>9}: final return {s['final_return']:.1f}, {s['steps_per_s']:,.0f} steps/s")
    print("same bits under every fusion mode")


if __name__ == "__main__":
    main()

"""A third fragment the core has never heard of: a novelty bonus added to PPO's rewards.

The fragment keeps running statistics of the observations it has seen (mean and variance,
updated once per rollout) and adds to each reward a bonus for reaching an unusual observation:

    r'_t = r_t + β · min(mean_i ((s_{t+1,i} − μ_i) / σ_i)², c)

It reads the edge ``trajectory`` and writes it back rewritten, so the graph runs it after the
rollout and before the learner, which reads the rewritten trajectory. Neither PPO nor the core
changes: the fragment is added to PPO's graph with ``Algorithm.with_fragments``, and the run goes
through ``rl.train`` under any fusion mode. Here it runs under every compiled mode and checks that
they agree.

    python examples/intrinsic_reward.py --total-steps 100000
"""

import argparse
from typing import NamedTuple

import jax
import jax.numpy as jnp

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.fragments.algorithms import ppo

BETA = 0.01  # weight of the bonus
CAP = 5.0  # largest bonus before weighting, so one outlier cannot swamp the task reward


class Moments(NamedTuple):
    """Running mean and variance of observations (Chan et al.'s parallel update)."""

    count: jax.Array
    mean: jax.Array
    var: jax.Array


def novelty(observation_shape: tuple[int, ...]) -> rl.Fragment:
    def init(key):
        del key
        zeros = jnp.zeros(observation_shape, jnp.float32)
        return Moments(jnp.float32(1e-4), zeros, jnp.ones(observation_shape, jnp.float32))

    def apply(state: Moments, inputs, key):
        del key
        traj = inputs["trajectory"]  # fields [T, B, ...]
        z = (traj.next_observation - state.mean) / jnp.sqrt(state.var + 1e-8)
        axes = tuple(range(2, z.ndim))
        bonus = BETA * jnp.minimum(jnp.mean(z**2, axis=axes), CAP)
        batch = traj.next_observation.reshape(-1, *observation_shape)
        n = batch.shape[0]
        delta = batch.mean(0) - state.mean
        total = state.count + n
        mean = state.mean + delta * n / total
        m2 = state.var * state.count + batch.var(0) * n + delta**2 * state.count * n / total
        new_state = Moments(total, mean, m2 / total)
        rewritten = traj._replace(reward=traj.reward + bonus)
        return new_state, {"trajectory": rewritten, "metrics": {"bonus": bonus.mean()}}

    return rl.fragment(
        "novelty",
        "transform",
        apply,
        init=init,
        inputs=("trajectory",),
        outputs=("trajectory", "metrics"),
    )


def build(ctx: rl.AlgorithmContext[ppo.PPOConfig]) -> rl.Algorithm:
    shape = tuple(ctx.observation_space.shape)
    return ppo.SPEC.build(ctx).with_fragments(novelty(shape))


SPEC = ppo.SPEC._replace(name="ppo-novelty", build=build, summary="PPO with a novelty bonus")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument(
        "--fusion", default="step,fragment,iteration,scan", help="comma-separated fusion modes"
    )
    args = parser.parse_args()
    modes = [m for m in args.fusion.split(",") if m]
    config = rl.TrainConfig(total_steps=args.total_steps, out=None, progress=False)
    print(rl.build_loop(rl.resolve(config, SPEC)).graph.describe())
    # Trained under each fusion mode; assert_modes_agree raises, naming the leaves that differ,
    # unless every run ends on the same bits (final state and metrics) as the first.
    results = testing.assert_modes_agree(config, SPEC, modes)
    for fusion, result in results.items():
        s = result.summary
        bonus = result.metrics["novelty/bonus"][-1]
        print(
            f"{fusion:>9}: final return {s['final_return']:.1f}, last bonus {bonus:.4f}, "
            f"{s['steps_per_s']:,.0f} steps/s"
        )
    print("same state and metrics under every fusion mode")


if __name__ == "__main__":
    main()

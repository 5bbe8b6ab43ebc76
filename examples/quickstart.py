"""The Python API in a few lines: train PPO on CartPole-v1, then look at what came back.

python examples/quickstart.py --total-steps 200000
"""

import argparse

import jaxrl_fdg as rl

parser = argparse.ArgumentParser()
parser.add_argument("--total-steps", type=int, default=300_000)
parser.add_argument("--out", default="runs")
args = parser.parse_args()

config = rl.TrainConfig(
    algo="ppo",
    env="CartPole-v1",
    fusion="scan",
    total_steps=args.total_steps,
    out=args.out,
    hparams={"lr": 2.5e-4},
)
result = rl.train(config)
print(
    f"final return {result.summary['final_return']:.1f} "
    f"at {result.summary['steps_per_s']:,.0f} env-steps/s"
)
print("per-iteration metrics:", sorted(result.metrics))
print("run folder:", result.run_dir)

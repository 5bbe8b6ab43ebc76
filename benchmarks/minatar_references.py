"""PQN and PPO on MinAtar Breakout with their references' settings, 3 seeds each, compared with
``jaxrl-fdg compare`` (IQM, mean and median with 95% stratified bootstrap intervals).

* ``pqn``: purejaxql's ``config/alg/pqn_minatar.yaml`` and the network of ``pqn_minatar.py``
  (one 3×3 convolution of 16 with LayerNorm, Dense 128 with LayerNorm, ReLU; RAdam at 5e-4
  decayed linearly, gradients clipped at 10, 128 envs × 32 steps, 2 epochs of 32 minibatches,
  γ 0.99, Q(λ) with λ 0.65, ε from 1 to 0.05 over the first tenth of the run, rewards unscaled).
  purejaxql's file names Asterix; the task here is Breakout, as the other MinAtar figures.
* ``ppo``: PureJaxRL's MinAtar settings, as ``benchmarks/simulator_curves.py --task minatar``
  (64 envs × 128 steps, learning rate 5e-4 annealed, 4 epochs of 8 minibatches, γ 0.99, λ 0.95,
  clip 0.2, entropy 0.01, the ``cnn`` torso).

Each algorithm trains its seeds as vmapped lanes of one program (``--num-seeds``), at the budget
given (the defaults are what this 2-core machine runs in about ten minutes each). Scores are the
training return logged last (``episode_return``: PQN's includes its final ε of 0.05). Neither
reference publishes Breakout-MinAtar numbers in its repository; the figures here are ours, at
their settings, for the next comparison to start from.

    python benchmarks/minatar_references.py    # writes results/minatar_references.json and
                                               # results/curve-minatar-references.png
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import jaxrl_fdg as rl
from jaxrl_fdg import compare
from jaxrl_fdg.plots import plot_runs
from jaxrl_fdg.profiling import write_report

sys.path.insert(0, str(Path(__file__).parent))
from simulator_curves import TASKS  # noqa: E402  (PPO's MinAtar settings)

RESULTS = Path(__file__).parent / "results"
ENV = "gymnax/Breakout-MinAtar"
SETTINGS = {
    "pqn": dict(
        num_envs=128,
        rollout_len=32,
        total_steps=128 * 32 * 732,  # 2,998,272
        hparams=dict(
            torso="minatar",
            hidden_sizes=(128,),
            layer_norm=True,
            activation="relu",
            lr=5e-4,
            anneal_lr=True,
            max_grad_norm=10.0,
            update_epochs=2,
            num_minibatches=32,
            gamma=0.99,
            q_lambda=0.65,
            epsilon_start=1.0,
            epsilon_end=0.05,
            epsilon_fraction=0.1,
            reward_scale=1.0,
        ),
    ),
    # PureJaxRL's MinAtar settings, as the MinAtar curve of simulator_curves.py runs them, at
    # whole iterations (its 1,000,000 steps run as 999,424).
    "ppo": {
        **{k: v for k, v in TASKS["minatar"].items() if k != "env"},
        "total_steps": 64 * 128 * 122,
    },
}
REFERENCES = {
    "pqn": "mttga/purejaxql purejaxql/config/alg/pqn_minatar.yaml, purejaxql/pqn_minatar.py",
    "ppo": "PureJaxRL's MinAtar PPO settings (benchmarks/simulator_curves.py --task minatar)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=None, help="env steps (default: each's own)")
    args = parser.parse_args()

    out = RESULTS / "minatar-references-runs"
    shutil.rmtree(out, ignore_errors=True)
    results, settings = {}, {}
    for algo in args.algos:
        setup = {**SETTINGS[algo], **({"total_steps": args.steps} if args.steps else {})}
        config = rl.TrainConfig(
            algo=algo,
            env=ENV,
            num_seeds=args.seeds,
            out=str(out / algo),
            run_name=algo,
            progress=False,
            **setup,
        )
        summary = rl.train(config).summary
        settings[algo] = {**setup, "hparams": dict(setup["hparams"]), "reference": REFERENCES[algo]}
        results[algo] = {
            "env_steps_per_seed": summary["env_steps"],
            "steps_per_s_per_seed": summary["steps_per_s"],
            "steps_per_s_all_seeds": summary["steps_per_s"] * args.seeds,
            "compile_s": summary["compile_s"],
            "final_return_mean": summary.get("final_return"),
        }
        print(algo, results[algo], flush=True)
    comparison = compare.compare([out / algo for algo in args.algos], metric="episode_return")
    for algo, group in zip(args.algos, comparison.groups, strict=True):
        results[algo]["label"] = group.label
        results[algo]["scores"] = [float(s) for v in group.strata.values() for s in v]
        results[algo]["aggregates"] = {
            name: {"point": e.point, "low": e.low, "high": e.high}
            for name, e in group.estimates.items()
        }
    print(compare.table(comparison))
    image = plot_runs(
        [out / algo for algo in args.algos],
        metric="episode_return",
        x="step",
        output=RESULTS / "curve-minatar-references.png",
    )
    shutil.rmtree(out)
    write_report(
        str(RESULTS / "minatar_references.json"),
        "minatar_references",
        {"env": ENV, "seeds": args.seeds, "settings": settings},
        results,
        image=image.name,
    )


if __name__ == "__main__":
    sys.exit(main())

"""Learning curves on simulators from other libraries: PPO on a Brax task and on MinAtar
Breakout, and IMPALA on MinAtar Breakout with a lagged actor.

    python benchmarks/simulator_curves.py                 # both tasks, 2 seeds each
    python benchmarks/simulator_curves.py --task minatar --seeds 1 --steps 500000

Each task trains with ``jaxrl-fdg``'s own loop on the environment through its adapter, one run per
seed, and draws the training return (mean over the episodes that ended between host boundaries)
against env steps with ``jaxrl-fdg plot``'s code: ``results/curve-<task>.png``, the mean over seeds
and a band of one standard deviation. ``results/simulator_curves.json`` keeps each run's final
return, env-steps/s and compile seconds.

* ``brax``: ``brax/inverted_pendulum`` on MJX with Brax's published PPO settings for the task
  (observation normalisation, reward scaling 10, γ 0.97, learning rate 3e-4, entropy 0.01, clip
  0.3, no value or gradient clipping, a constant learning rate), 256 envs × 16 steps, 1M steps.
  The ceiling is 1000.
* ``minatar``: ``gymnax/Breakout-MinAtar`` with the ``cnn`` torso and the MinAtar PPO settings of
  PureJaxRL (64 envs × 128 steps, learning rate 5e-4 annealed, 4 epochs of 8 minibatches,
  γ 0.99, λ 0.95, clip 0.2, entropy 0.01), 1M steps. A random policy scores about 0.5.
* ``impala-minatar``: IMPALA on ``gymnax/Breakout-MinAtar`` with the ``minatar`` torso, a policy
  lag of one iteration (the actors act with the previous iteration's parameters, as on the
  asynchronous ``actor_learner`` split; V-trace corrects for it), 64 envs × 20 steps, RMSprop at
  6e-4 annealed, IMPALA's other defaults, 3M steps.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

import jaxrl_fdg as rl
from jaxrl_fdg.plots import plot_runs
from jaxrl_fdg.profiling import write_report

sys.path.insert(0, str(Path(__file__).parent))
import brax_training  # noqa: E402  (the Brax task's settings)

RESULTS = Path(__file__).parent / "results"

# The Brax task's run is benchmarks/brax_training.py's PPO at its CPU size (ppo_config).
BRAX_SETUP = "cpu"
TASKS = {
    "brax": dict(env=f"brax/{brax_training.ENV}", setup=brax_training.SETUPS[BRAX_SETUP]),
    "minatar": dict(
        env="gymnax/Breakout-MinAtar",
        total_steps=1_000_000,
        num_envs=64,
        rollout_len=128,
        hparams=dict(
            torso="cnn",
            activation="relu",
            lr=5e-4,
            num_minibatches=8,
            update_epochs=4,
            gamma=0.99,
            gae_lambda=0.95,
            clip_eps=0.2,
            ent_coef=0.01,
        ),
    ),
    "impala-minatar": dict(
        algo="impala",
        env="gymnax/Breakout-MinAtar",
        total_steps=3_000_000,
        num_envs=64,
        rollout_len=20,
        policy_lag=1,
        hparams=dict(torso="minatar", lr=6e-4, anneal_lr=True),
    ),
}


def task_config(task: str, seed: int, steps: int | None) -> rl.TrainConfig:
    """PPO's run on ``task`` with ``seed`` (``steps`` env steps, or the task's own)."""
    if task == "brax":
        setup = {**brax_training.SETUPS[BRAX_SETUP], **({"steps": steps} if steps else {})}
        return brax_training.ppo_config(setup, seed)
    setup = {"algo": "ppo", **TASKS[task], **({"total_steps": steps} if steps else {})}
    return rl.TrainConfig(seed=seed, **setup)


def train(task: str, seed: int, steps: int | None, out: Path) -> dict:
    config = task_config(task, seed, steps)
    config = config.replace(out=str(out), run_name=f"seed-{seed}", progress=False)
    summary = rl.train(config).summary
    return {
        "seed": seed,
        "final_return": summary.get("final_return"),
        "env_steps": summary["env_steps"],
        "steps_per_s": summary["steps_per_s"],
        "compile_s": summary["compile_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=[*TASKS, "all"], default="all")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="env steps (default: the task's)")
    parser.add_argument("--keep-runs", action="store_true", help="keep the run folders")
    args = parser.parse_args()

    tasks = list(TASKS) if args.task == "all" else [args.task]
    report = {}
    for task in tasks:
        out = RESULTS / f"curve-{task}-runs"
        shutil.rmtree(out, ignore_errors=True)
        runs = [train(task, seed, args.steps, out) for seed in range(args.seeds)]
        image = plot_runs(
            [out], metric="episode_return", x="step", output=RESULTS / f"curve-{task}.png"
        )
        if not args.keep_runs:
            shutil.rmtree(out)
        report[task] = {
            "env": TASKS[task]["env"],
            "runs": runs,
            "median_final_return": statistics.median(r["final_return"] for r in runs),
            "image": image.name,
        }
        print(task, json.dumps(report[task]))
    settings = {task: described(task_config(task, 0, args.steps)) for task in tasks}
    path = RESULTS / "simulator_curves.json"
    if path.exists():  # keep the other tasks' figures when one task is re-run
        previous = json.loads(path.read_text())
        report = {**previous["results"], **report}
        settings = {**previous["config"]["tasks"], **settings}
    write_report(str(path), "simulator_curves", {"tasks": settings, "seeds": args.seeds}, report)


def described(config: rl.TrainConfig) -> dict:
    """The settings a task's run was made with, as its results file records them."""
    keys = ("algo", "env", "total_steps", "num_envs", "rollout_len", "policy_lag")
    return {**{k: getattr(config, k) for k in keys}, "hparams": dict(config.hparams)}


if __name__ == "__main__":
    main()

"""Learning curves at small budgets on one task of each JAX suite, for the docs site's learning
page: PPO (the defaults but the budget and batch below) over several seeds vmapped in one
program, each seed's return per logged row, the final return's mean with a 95% bootstrap
interval over seeds, and env-steps/s with compile apart.

    pip install "jaxrl-fdg[xminigrid,navix,jumanji]"
    python benchmarks/suite_curves.py                  # writes results/suite_curves.json
    python benchmarks/suite_curves.py --size quick     # a few iterations, to a temp file

Each task is also a command line: ``jaxrl-fdg train --env ID --total-steps N --num-seeds S``
with the settings below reproduces it. Craftax's curve is ``craftax_baseline.py``'s, beside its
own baseline.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg import stats
from jaxrl_fdg.profiling import write_report

# name -> (package, run settings): the task of each suite, and a batch that suits it.
TASKS: dict[str, tuple[str | None, dict]] = {
    "xminigrid": (
        "xminigrid",
        dict(env="xminigrid/MiniGrid-Empty-6x6", num_envs=64, rollout_len=32),
    ),
    "navix": ("navix", dict(env="navix/Navix-Empty-5x5-v0", num_envs=64, rollout_len=32)),
    "jumanji": ("jumanji", dict(env="jumanji/Game2048-v1", num_envs=64, rollout_len=32)),
    "minefield": (None, dict(env="Minefield-v0", num_envs=64, rollout_len=32)),
}
SIZES = {
    "quick": dict(total_steps=4 * 64 * 32, seeds=2),
    "full": dict(total_steps=500_000, seeds=4),
}


def curve(task: str, settings: dict, total_steps: int, seeds: int) -> dict:
    config = rl.TrainConfig(
        algo="ppo",
        total_steps=total_steps,
        num_seeds=seeds,
        log_every=total_steps // (settings["num_envs"] * settings["rollout_len"] * 20) or 1,
        out=None,
        progress=False,
        **settings,
    )
    result = rl.train(config)
    episodes = np.asarray(result.metrics["episodes"])  # [iterations, seeds]
    returns = np.asarray(result.metrics["episode_return_sum"])
    per_iteration = config.num_envs * config.rollout_len
    # Each seed's return per window of a twentieth of the run (episodes ended in it).
    windows = np.array_split(np.arange(len(episodes)), 20)
    steps, per_seed = [], []
    for window in windows:
        if not len(window):
            continue
        ended = episodes[window].sum(axis=0)
        total = returns[window].sum(axis=0)
        steps.append(int((window[-1] + 1) * per_iteration))
        per_seed.append(np.where(ended > 0, total / np.maximum(ended, 1), np.nan).tolist())
    final = np.asarray(per_seed[-1], float)
    interval = stats.interval_estimates([final[np.isfinite(final)]], ("mean",))["mean"]
    summary = result.summary
    return {
        "env": settings["env"],
        "command": (
            f"jaxrl-fdg train --env {settings['env']} --total-steps {total_steps} "
            f"--num-envs {settings['num_envs']} --rollout-len {settings['rollout_len']} "
            f"--num-seeds {seeds}"
        ),
        "env_steps": steps,
        "return_per_seed": per_seed,
        "final_return": {"mean": interval.point, "low": interval.low, "high": interval.high},
        "compile_s": summary["compile_s"],
        "run_s": summary["run_s"],
        "env_steps_per_s": total_steps * seeds / summary["run_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=tuple(SIZES), default="full")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated")
    parser.add_argument("--out", help="default: results/suite_curves.json (quick: a temp file)")
    args = parser.parse_args()
    size = SIZES[args.size]
    out = args.out or (
        str(Path(tempfile.mkdtemp()) / "suite_curves.json")
        if args.size == "quick"
        else str(Path(__file__).parent / "results" / "suite_curves.json")
    )
    results, skipped = {}, {}
    for task in args.tasks.split(","):
        package, settings = TASKS[task]
        if package and importlib.util.find_spec(package) is None:
            skipped[task] = f"{package} is not installed"
            continue
        results[task] = curve(task, settings, size["total_steps"], size["seeds"])
        final = results[task]["final_return"]
        print(
            f"{task}: final return {final['mean']:.3f} [{final['low']:.3f}, {final['high']:.3f}], "
            f"compile {results[task]['compile_s']:.1f} s, "
            f"{results[task]['env_steps_per_s']:,.0f} env-steps/s",
            file=sys.stderr,
        )
    write_report(out, "suite_curves", {"size": args.size, **size}, results, skipped=skipped)


if __name__ == "__main__":
    main()

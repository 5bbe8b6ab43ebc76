"""Population-based training against the grid it starts from: PPO on CartPole-v1 (or Brax's
inverted_pendulum, ``--task brax``) with a deliberately poor grid of learning rates, 8 lanes,
3 seeds.

For each seed, three runs of one vmapped program each:

* ``grid``: the 8 learning rates of ``GRID`` as lanes (``--lr 1e-5,...``), nothing else;
* ``pbt``: the same lanes, with ``--pbt-every`` (the worst quarter copies the best quarter and
  perturbs its learning rate by 0.8 or 1.25, or redraws it from the grid with chance 1/4);
* ``pbt_perturb``: the same with ``--pbt-resample 0``: a copied learning rate is only perturbed,
  never redrawn from the poor grid.

Until the first population step both runs compute the same lanes. A lane's *steps to threshold*
is the env step of its first metric row whose mean training return reaches ``--threshold``; a
lane that never does counts as the budget (a lower bound: the ``reached`` counts say how many
did). Per seed and run: its best lane and its median lane. Across seeds: IQM with a 95%
stratified bootstrap interval (``jaxrl_fdg.stats``, what ``jaxrl-fdg compare`` reports).

    python benchmarks/pbt.py                # writes results/pbt.json and results/pbt-lineage.png
    python benchmarks/pbt.py --task brax    # Brax's inverted_pendulum: results/pbt-brax.json
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg import lineage, stats
from jaxrl_fdg.plots import load_run
from jaxrl_fdg.profiling import write_report

RESULTS = Path(__file__).parent / "results"
# PPO's own default is 2.5e-4 (3e-4 on Brax); most of these are far too small for the budget.
GRID = (1e-6, 2e-6, 4e-6, 8e-6, 1.6e-5, 3.2e-5, 6.4e-5, 2.56e-4)
SETTINGS = dict(
    algo="ppo",
    env="CartPole-v1",
    num_envs=4,
    rollout_len=128,
    total_steps=4 * 128 * 586,  # 300,032
    hparams={"lr": list(GRID), "anneal_lr": False},
)
# Each task: its PBT interval (env steps), threshold, default budget and results file.
TASKS = {
    "cartpole": dict(pbt_every=4 * 128 * 20, threshold=475.0, steps=SETTINGS["total_steps"]),
    # Brax's inverted_pendulum (MJX) at benchmarks/simulator_curves.py's PPO settings
    # (256 envs × 16 steps); returns reach 1,000.
    "brax": dict(pbt_every=256 * 16 * 10, threshold=300.0, steps=256 * 16 * 147),  # 602,112
}


def base_config(task: str, seed: int, steps: int) -> rl.TrainConfig:
    """The grid's run of ``task``: its lanes are ``GRID``'s learning rates."""
    if task == "cartpole":
        return rl.TrainConfig(**{**SETTINGS, "total_steps": steps}, seed=seed)
    sys.path.insert(0, str(Path(__file__).parent))
    import brax_training  # the Brax task's settings

    config = brax_training.ppo_config({**brax_training.SETUPS["cpu"], "steps": steps}, seed)
    return config.replace(hparams={**config.hparams, "lr": list(GRID)})


def kinds(task: str) -> dict[str, dict]:
    """The runs of each seed: the grid alone, PBT at its defaults (a copied learning rate is
    redrawn from the grid with chance 1/4), and PBT that only perturbs (never redraws from the
    poor grid)."""
    pbt = dict(pbt_every=TASKS[task]["pbt_every"], pbt_quantile=0.25)
    return {"grid": {}, "pbt": pbt, "pbt_perturb": {**pbt, "pbt_resample": 0.0}}


STATISTICS = tuple(f"{kind}_{which}" for kind in kinds("cartpole") for which in ("best", "median"))


def steps_to_threshold(rows: list[dict], threshold: float, budget: int) -> tuple[float, bool]:
    """The env step of the first row at or over ``threshold`` (``budget`` if none), and whether
    one was."""
    for row in rows:
        if row.get("episode_return") is not None and row["episode_return"] >= threshold:
            return float(row["step"]), True
    return float(budget), False


def _final(rows: list[dict]) -> float:
    """A lane's last logged training return."""
    return float(next(r["episode_return"] for r in reversed(rows) if r.get("episode_return")))


def lane_rows(run: Path) -> list[list[dict]]:
    return [
        load_run(path).rows for path in sorted(run.iterdir()) if (path / "metrics.jsonl").is_file()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=tuple(TASKS), default="cartpole")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, help="env steps per lane (default: the task's)")
    parser.add_argument("--threshold", type=float, help="return (default: the task's)")
    parser.add_argument("--out", help="results file (default: results/pbt.json, or pbt-TASK.json)")
    args = parser.parse_args()
    task = TASKS[args.task]
    steps, threshold = args.steps or task["steps"], args.threshold or task["threshold"]
    name = "pbt" if args.task == "cartpole" else f"pbt-{args.task}"
    out = args.out or str(RESULTS / f"{name}.json")

    runs = RESULTS / f"{name}-runs"
    shutil.rmtree(runs, ignore_errors=True)
    per_seed, wall = {name: [] for name in STATISTICS}, {}
    reached = dict.fromkeys(kinds(args.task), 0)
    final: dict[str, list] = {kind: [] for kind in kinds(args.task)}
    for seed in range(args.seeds):
        for kind, extra in kinds(args.task).items():
            config = base_config(args.task, 100 * seed, steps).replace(
                **extra,
                out=str(runs),
                run_name=f"{kind}-{seed}",
                progress=False,
                profile="off",
            )
            result = rl.train(config)
            wall.setdefault(kind, []).append(result.summary["run_s"] + result.summary["compile_s"])
            lanes = [
                steps_to_threshold(r, threshold, steps) for r in lane_rows(runs / f"{kind}-{seed}")
            ]
            reached_at = np.asarray([s for s, _ in lanes])
            finals = [_final(r) for r in lane_rows(runs / f"{kind}-{seed}")]
            final[kind].append({"best": max(finals), "median": float(np.median(finals))})
            reached[kind] += sum(hit for _, hit in lanes)
            per_seed[f"{kind}_best"].append(float(reached_at.min()))
            per_seed[f"{kind}_median"].append(float(np.median(reached_at)))
            print(kind, seed, sorted(reached_at), flush=True)
    aggregates = {
        name: stats.interval_estimates([np.asarray(values)], ("iqm",))["iqm"]._asdict()
        for name, values in per_seed.items()
    }
    image = lineage.plot_lineage(runs / "pbt-0", output=RESULTS / f"{name}-lineage.png")
    shutil.rmtree(runs)
    results = {
        "steps_to_threshold": {
            name: {"per_seed": per_seed[name], "iqm": aggregates[name]} for name in STATISTICS
        },
        "lanes_reaching_threshold": {
            kind: f"{count} of {len(GRID) * args.seeds}" for kind, count in reached.items()
        },
        "final_return_per_seed": final,
        "wall_s_per_run": {kind: float(np.mean(w)) for kind, w in wall.items()},
    }
    for name in STATISTICS:
        print(f"{name:12s} IQM {aggregates[name]}")
    config = base_config(args.task, 0, steps)
    write_report(
        out,
        "pbt",
        {
            "task": args.task,
            "algo": config.algo,
            "env": config.env,
            "num_envs": config.num_envs,
            "rollout_len": config.rollout_len,
            "total_steps": steps,
            "hparams": dict(config.hparams),
            **kinds(args.task)["pbt"],
            "runs": kinds(args.task),
            "seeds": [100 * s for s in range(args.seeds)],
            "threshold": threshold,
        },
        results,
        image=image.name,
    )


if __name__ == "__main__":
    sys.exit(main())

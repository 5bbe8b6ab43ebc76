"""Population-based training against the grid it starts from: PPO on CartPole-v1 with a
deliberately poor grid of learning rates, 8 lanes, 3 seeds.

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

    python benchmarks/pbt.py    # writes results/pbt.json and results/pbt-lineage.png
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
# PPO's own default is 2.5e-4; most of these are far too small for the budget.
GRID = (1e-6, 2e-6, 4e-6, 8e-6, 1.6e-5, 3.2e-5, 6.4e-5, 2.56e-4)
SETTINGS = dict(
    algo="ppo",
    env="CartPole-v1",
    num_envs=4,
    rollout_len=128,
    total_steps=4 * 128 * 586,  # 300,032
    hparams={"lr": list(GRID), "anneal_lr": False},
)
PBT = dict(pbt_every=4 * 128 * 20, pbt_quantile=0.25)  # a step every 10,240 env steps
# The runs of each seed: the grid alone, PBT at its defaults (a copied learning rate is redrawn
# from the grid with chance 1/4), and PBT that only perturbs (never redraws from the poor grid).
KINDS = {"grid": {}, "pbt": PBT, "pbt_perturb": {**PBT, "pbt_resample": 0.0}}
STATISTICS = tuple(f"{kind}_{which}" for kind in KINDS for which in ("best", "median"))


def steps_to_threshold(rows: list[dict], threshold: float, budget: int) -> tuple[float, bool]:
    """The env step of the first row at or over ``threshold`` (``budget`` if none), and whether
    one was."""
    for row in rows:
        if row.get("episode_return") is not None and row["episode_return"] >= threshold:
            return float(row["step"]), True
    return float(budget), False


def lane_rows(run: Path) -> list[list[dict]]:
    return [
        load_run(path).rows for path in sorted(run.iterdir()) if (path / "metrics.jsonl").is_file()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=SETTINGS["total_steps"])
    parser.add_argument("--threshold", type=float, default=475.0)
    parser.add_argument("--out", default=str(RESULTS / "pbt.json"))
    args = parser.parse_args()

    runs = RESULTS / "pbt-runs"
    shutil.rmtree(runs, ignore_errors=True)
    per_seed, wall = {name: [] for name in STATISTICS}, {}
    reached = dict.fromkeys(KINDS, 0)
    for seed in range(args.seeds):
        for kind, extra in KINDS.items():
            config = rl.TrainConfig(
                **{**SETTINGS, "total_steps": args.steps},
                **extra,
                seed=100 * seed,
                out=str(runs),
                run_name=f"{kind}-{seed}",
                progress=False,
                profile="off",
            )
            result = rl.train(config)
            wall.setdefault(kind, []).append(result.summary["run_s"] + result.summary["compile_s"])
            lanes = [
                steps_to_threshold(r, args.threshold, args.steps)
                for r in lane_rows(runs / f"{kind}-{seed}")
            ]
            steps = np.asarray([s for s, _ in lanes])
            reached[kind] += sum(hit for _, hit in lanes)
            per_seed[f"{kind}_best"].append(float(steps.min()))
            per_seed[f"{kind}_median"].append(float(np.median(steps)))
            print(kind, seed, sorted(steps), flush=True)
    aggregates = {
        name: stats.interval_estimates([np.asarray(values)], ("iqm",))["iqm"]._asdict()
        for name, values in per_seed.items()
    }
    image = lineage.plot_lineage(runs / "pbt-0", output=RESULTS / "pbt-lineage.png")
    shutil.rmtree(runs)
    results = {
        "steps_to_threshold": {
            name: {"per_seed": per_seed[name], "iqm": aggregates[name]} for name in STATISTICS
        },
        "lanes_reaching_threshold": {
            kind: f"{count} of {len(GRID) * args.seeds}" for kind, count in reached.items()
        },
        "wall_s_per_run": {kind: float(np.mean(w)) for kind, w in wall.items()},
    }
    for name in STATISTICS:
        print(f"{name:12s} IQM {aggregates[name]}")
    write_report(
        args.out,
        "pbt",
        {
            **SETTINGS,
            "total_steps": args.steps,
            **PBT,
            "runs": {kind: extra for kind, extra in KINDS.items()},
            "seeds": [100 * s for s in range(args.seeds)],
            "threshold": args.threshold,
        },
        results,
        image=image.name,
    )


if __name__ == "__main__":
    sys.exit(main())

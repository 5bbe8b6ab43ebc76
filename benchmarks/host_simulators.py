"""Env-steps/s of PPO on CartPole-v1 stepped on the host two ways: EnvPool's batched C++
(``envpool/CartPole-v1``) against gymnasium's Python environments (``gym/CartPole-v1``).

The same task, sizes and hyperparameters for both; only the simulator differs. For each batch size
(``--num-envs``) and each placement/fusion case of ``benchmarks/host_env.py`` (``single/step``:
actor, then the batch stepped from Python; ``host_env/step``: two halves, each stepped while the
device acts for the other; ``single/scan``: the simulators called back from inside one fused
program), every run compiles its plan ahead of time (``compile_s``, reported apart) and then
trains, timed (``run_s``). Runs are interleaved (gym, envpool, gym, envpool, ...) and repeated;
medians are reported, with the ratio envpool / gym per case taken from the same run.

On this machine the "device" is the same CPU that steps the simulators, so the gap shows where
stepping dominates: many environments, small networks.

    python benchmarks/host_simulators.py    # writes benchmarks/results/host_simulators.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from host_env import measure  # noqa: E402  (the same timing as benchmarks/host_env.py)

from jaxrl_fdg.profiling import write_report  # noqa: E402

SIMULATORS = ("gym/CartPole-v1", "envpool/CartPole-v1")
CASES = ("single/step", "host_env/step", "single/scan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[8, 256])
    parser.add_argument("--total-steps", type=int, default=128 * 1024)
    parser.add_argument("--rollout-len", type=int, default=128)
    parser.add_argument("--log-every", type=int, default=8, help="iterations per boundary")
    parser.add_argument("--hidden", type=int, default=64, help="width of the two hidden layers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "host_simulators.json")
    )
    args = parser.parse_args()

    results: dict[str, dict] = {}
    for num_envs in args.num_envs:
        for case in CASES:
            runs: dict[str, list[dict]] = {env: [] for env in SIMULATORS}
            for _ in range(args.repeats):  # interleaved: machine noise hits both alike
                for env in SIMULATORS:
                    run_args = argparse.Namespace(**{**vars(args), "env": env})
                    run_args.num_envs = num_envs
                    runs[env].append(measure(run_args, case))
            row = {}
            for env, rs in runs.items():
                run_s = statistics.median(r["run_s"] for r in rs)
                row[env] = {
                    "compile_s": statistics.median(r["compile_s"] for r in rs),
                    "run_s": run_s,
                    "run_s_all": [r["run_s"] for r in rs],
                    "steps_per_s": rs[0]["env_steps"] / run_s,
                    "final_return_all": [r["final_return"] for r in rs],
                }
            gym, pool = (row[env]["steps_per_s"] for env in SIMULATORS)
            row["envpool_vs_gym"] = pool / gym
            results[f"{num_envs} envs {case}"] = row
            print(
                f"{num_envs:>5} envs {case:<14} gym {gym:>9,.0f}  envpool {pool:>9,.0f} "
                f"env-steps/s  ({pool / gym:.2f}x)",
                flush=True,
            )
    write_report(
        args.out,
        "host_simulators",
        {
            "simulators": list(SIMULATORS),
            "algo": "ppo",
            "num_envs": args.num_envs,
            "rollout_len": args.rollout_len,
            "hidden_sizes": [args.hidden, args.hidden],
            "total_steps": args.total_steps,
            "log_every": args.log_every,
            "seed": args.seed,
            "repeats": args.repeats,
        },
        results,
    )
    print("| envs | placement/fusion | gym env-steps/s | envpool env-steps/s | envpool / gym |")
    print("|---:|---|---:|---:|---:|")
    for name, row in results.items():
        num_envs, _, case = name.split(" ", 2)
        gym, pool = (row[env]["steps_per_s"] for env in SIMULATORS)
        print(f"| {num_envs} | {case} | {gym:,.0f} | {pool:,.0f} | {row['envpool_vs_gym']:.2f} |")


if __name__ == "__main__":
    main()

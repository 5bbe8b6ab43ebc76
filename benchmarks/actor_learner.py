"""Env-steps/s of the actor/learner placement: synchronous and asynchronous against one device.

An algorithm (``--algo``: PPO by default; IMPALA, whose V-trace corrects for the lag the
asynchronous split brings) on CartPole-v1 with its own default rollout length, the same sizes
in every case, fusion ``fragment`` (a rollout program and a learner program per iteration):

* ``single``: both programs on one device, in turn;
* ``actor_learner/sync``: the rollout on device 0, the learner on device 1, in turn (equal to
  ``single`` bit for bit), plus the transfers between them;
* ``actor_learner/async``: ``--policy-lag 1``: the two programs of an iteration share no input,
  so device 0 collects the next rollout while device 1 trains on the last one;
* ``single/lagged``: the lagged loop on one device (what ``async`` computes, without the overlap).

Two forced CPU devices here (``XLA_FLAGS`` is set before JAX starts); on this machine they share
its 2 cores, so overlap gains only what one program leaves of the other core. Runs are interleaved
and repeated; the medians of the runs' run times are reported, compile time apart.

    python benchmarks/actor_learner.py               # writes results/actor_learner.json
    python benchmarks/actor_learner.py --algo impala # writes results/actor_learner-impala.json
    python benchmarks/actor_learner.py --algo impala --rollout-len 128  # PPO's rollout length
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")

import argparse  # noqa: E402
import statistics  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.config import resolve  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402

CASES = {
    "single": {},
    "actor_learner/sync": {"placement": "actor_learner", "devices": 2},
    "actor_learner/async": {"placement": "actor_learner", "devices": 2, "policy_lag": 1},
    "single/lagged": {"policy_lag": 1},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=200_000)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--algo", default="ppo", help="a registered on-policy algorithm")
    parser.add_argument(
        "--rollout-len", type=int, default=None, help="default: the algorithm's own"
    )
    parser.add_argument(
        "--out", default=None, help="default: results/actor_learner[-ALGO][-rolloutN].json"
    )
    args = parser.parse_args()
    suffix = "" if args.algo == "ppo" else f"-{args.algo}"
    suffix += "" if args.rollout_len is None else f"-rollout{args.rollout_len}"
    args.out = args.out or f"benchmarks/results/actor_learner{suffix}.json"
    base = rl.TrainConfig(
        algo=args.algo,
        fusion="fragment",
        total_steps=args.total_steps,
        num_envs=args.num_envs,
        rollout_len=args.rollout_len,
        out=None,
        progress=False,
        compile_cache=False,
    )
    base = resolve(base).config  # the settings left unset, as the run resolves them
    runs: dict[str, list[dict]] = {name: [] for name in CASES}
    for _ in range(args.repeats):
        for name, changes in CASES.items():
            summary = rl.train(base.replace(**changes)).summary
            runs[name].append(summary)
            print(f"{name:22s} run {summary['run_s']:.2f} s", flush=True)
    results = {}
    for name, summaries in runs.items():
        run_s = statistics.median(s["run_s"] for s in summaries)
        results[name] = {
            "run_s": run_s,
            "steps_per_s": base.num_iterations * base.steps_per_iteration / run_s,
            "compile_s": statistics.median(s["compile_s"] for s in summaries),
            "final_return": statistics.median(s["final_return"] for s in summaries),
            "runs_s": [s["run_s"] for s in summaries],
        }
    single = results["single"]["steps_per_s"]
    for name, r in results.items():
        r["ratio_to_single"] = r["steps_per_s"] / single
        print(f"{name:22s} {r['steps_per_s']:>10,.0f} steps/s  {r['ratio_to_single']:.2f}×")
    config = {**vars(args), "env": base.env, "fusion": "fragment", "rollout_len": base.rollout_len}
    write_report(args.out, "actor_learner", config, results, loadavg=list(os.getloadavg()))


if __name__ == "__main__":
    main()

"""Env-steps/s of PPO on gymnasium's CartPole-v1 (a host simulator): placement single vs host_env.

Same sizes and hyperparameters in every case; the simulators always step on the host:

* ``single/step``: one batch of ``num_envs``; each step is actor → env, strictly in turn (the env
  step is the fragment's uncompiled callback, dispatched from Python between compiled actors);
* ``host_env/step``: the double-buffered plan: two halves of ``num_envs / 2`` stepped in numpy on
  the host, each while the other half's actor program runs;
* ``host_env/step-serial``: the same plan with ``pipelined=False`` (each actor call awaited as
  soon as it is dispatched): the same computation without the overlap, which isolates what the
  overlap itself gains from what stepping the simulators directly in numpy gains;
* ``single/scan`` and ``host_env/scan``: the simulators called back from inside one fused
  program (no overlap there), for reference.

Every case is timed the same way: the plan's programs compiled ahead of time (``compile_s``),
then every iteration advanced and its metrics read back at boundaries (``run_s``). Runs are
interleaved and repeated; medians are reported. One extra run of each ``step`` case with host
timers gives seconds per program scope (for ``host_env/step``, ``env.device_s`` is the host
waiting for a half's actions and ``env.dispatch_s`` the host stepping the simulators).

On a CPU-only machine the "device" is the same CPU that runs the Python simulators, so there is
little idle time to hide: the overlap's gain is small there. On an accelerator the actor runs
elsewhere and the gain is bounded by min(host stepping, device inference) per step.

    python benchmarks/host_env.py            # writes benchmarks/results/host_env.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.envs import host
from jaxrl_fdg.policies import host_env
from jaxrl_fdg.profiling import Timings, write_report

PlanFactory = Callable[[rl.Loop, Timings, int], object]  # (loop, timings, chunk) -> plan

CASES: dict[str, tuple[str, str, PlanFactory]] = {
    "single/step": ("single", "step", lambda loop, t, c: rl.make_plan("step", loop, t)),
    "host_env/step": (
        "host_env",
        "step",
        lambda loop, t, c: host_env.HOST_ENV.plan("step", loop, t, 1),
    ),
    "host_env/step-serial": (
        "host_env",
        "step",
        lambda loop, t, c: host_env.DoubleBufferedPlan(loop, t, pipelined=False),
    ),
    "single/scan": ("single", "scan", lambda loop, t, c: rl.make_plan("scan", loop, t, c)),
    "host_env/scan": (
        "host_env",
        "scan",
        lambda loop, t, c: host_env.HOST_ENV.plan("scan", loop, t, c),
    ),
}


def config(args: argparse.Namespace, placement: str, fusion: str) -> rl.TrainConfig:
    return rl.TrainConfig(
        env=args.env,
        placement=placement,
        fusion=fusion,
        num_envs=args.num_envs,
        rollout_len=args.rollout_len,
        total_steps=args.total_steps,
        log_every=args.log_every,
        seed=args.seed,
        out=None,
        progress=False,
        profile="off",
        hparams={"hidden_sizes": (args.hidden, args.hidden)},
    )


def measure(args: argparse.Namespace, case: str) -> dict:
    placement, fusion, factory = CASES[case]
    cfg = config(args, placement, fusion)
    loop = rl.build_loop(resolve(cfg))
    plan = factory(loop, Timings("off"), cfg.boundary_every)
    start = time.perf_counter()
    state = plan.init(jax.random.key(cfg.seed))
    plan.compile(state)
    compile_s = time.perf_counter() - start
    start, done, last = time.perf_counter(), 0, {}
    while done < cfg.num_iterations:
        n = min(cfg.boundary_every, cfg.num_iterations - done)
        state, pending = plan.advance(state, n)
        last = plan.collect(pending)
        done += n
    run_s = time.perf_counter() - start
    for handle in host_env.simulator_handles(loop, state):
        host.close(handle)
    episodes = float(np.sum(last["episodes"]))
    steps = cfg.num_iterations * cfg.steps_per_iteration
    return {
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps": steps,
        "steps_per_s": steps / run_s,
        "final_return": float(np.sum(last["episode_return_sum"])) / episodes if episodes else None,
    }


def host_profile(args: argparse.Namespace, case: str) -> dict:
    """One run through ``rl.train`` with host timers: seconds per program scope."""
    placement, fusion, _ = CASES[case]
    summary = rl.train(config(args, placement, fusion).replace(profile="host")).summary
    timing = summary["timing"]
    return {
        "run_s": summary["run_s"],
        "programs": {
            name: {k: row[k] for k in ("calls", "dispatch_s", "device_s")}
            for name, row in timing["programs"].items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--env", default="gym/CartPole-v1", help="a host simulator (gym/, envpool/)"
    )
    parser.add_argument("--total-steps", type=int, default=64 * 1024)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--rollout-len", type=int, default=128)
    parser.add_argument("--log-every", type=int, default=8, help="iterations per boundary")
    parser.add_argument("--hidden", type=int, default=64, help="width of the two hidden layers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "host_env.json"))
    args = parser.parse_args()

    runs: dict[str, list[dict]] = {name: [] for name in CASES}
    for _ in range(args.repeats):  # interleaved, so machine noise hits every case alike
        for name in CASES:
            runs[name].append(measure(args, name))
    results = {}
    for name, rs in runs.items():
        result = dict(rs[0])
        result["run_s"] = statistics.median(r["run_s"] for r in rs)
        result["steps_per_s"] = result["env_steps"] / result["run_s"]
        result["run_s_all"] = [r["run_s"] for r in rs]
        result["final_return_all"] = [r["final_return"] for r in rs]
        results[name] = result
    profiles = {case: host_profile(args, case) for case in ("single/step", "host_env/step")}

    def speed(name: str) -> float:
        return results[name]["steps_per_s"]

    ratios = {
        "host_env_step_vs_single_step": speed("host_env/step") / speed("single/step"),
        "host_env_step_vs_serial": speed("host_env/step") / speed("host_env/step-serial"),
        "host_env_scan_vs_single_scan": speed("host_env/scan") / speed("single/scan"),
    }
    write_report(
        args.out,
        "host_env",
        {
            "env": args.env,
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
        ratios=ratios,
        host_profiles=profiles,
    )
    print("| placement/fusion | compile s | run s (median) | env-steps/s |")
    print("|---|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['compile_s']:.2f} | {r['run_s']:.2f} | {r['steps_per_s']:,.0f} |")
    print(" ".join(f"{k} = {v:.3f}" for k, v in ratios.items()))
    for case, profile in profiles.items():
        print(case, profile["programs"])


if __name__ == "__main__":
    main()

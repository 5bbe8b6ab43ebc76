"""Env-steps/s of PPO on CartPole-v1 under every fusion mode and a hand-written baseline, one run.

Configuration (the spine issue's): 4 envs × 128 steps, 4 epochs × 4 minibatches, 64×64 tanh MLP,
500k steps. Compile seconds are reported apart from run seconds. ``eager`` dispatches every op
from Python and is measured over a few iterations after one warm-up iteration (its throughput
per iteration is flat); every other mode runs the whole budget.

    python benchmarks/fusion_modes.py            # writes benchmarks/results/fusion_modes.json
    python benchmarks/fusion_modes.py --cpus 1   # pinned to one core: fusion_modes_1cpu.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path


def _pin_cpus() -> int | None:
    """Honour ``--cpus N`` before JAX starts its thread pools (threads inherit the affinity)."""
    if "--cpus" not in sys.argv:
        return None
    n = int(sys.argv[sys.argv.index("--cpus") + 1])
    os.sched_setaffinity(0, set(range(n)))
    return n


_PINNED = _pin_cpus()

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

import handwritten_ppo  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.config import resolve  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402


def run_baseline(total_steps: int, seed: int) -> dict:
    train = handwritten_ppo.make_train(total_steps=total_steps)
    key = jax.random.key(seed)
    start = time.perf_counter()
    compiled = jax.jit(train).lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    params, ret_sum, episodes = jax.block_until_ready(compiled(key))
    run_s = time.perf_counter() - start
    steps = (total_steps // 512) * 512
    last = slice(-20, None)
    final = float(np.sum(ret_sum[last]) / max(np.sum(episodes[last]), 1))
    return {
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps": steps,
        "steps_per_s": steps / run_s,
        "final_return": final,
    }


def run_mode(mode: str, total_steps: int, seed: int) -> dict:
    config = rl.TrainConfig(
        fusion=mode, total_steps=total_steps, seed=seed, out=None, progress=False
    )
    s = rl.train(config).summary
    return {k: s[k] for k in ("compile_s", "run_s", "env_steps", "steps_per_s", "final_return")}


def run_eager(iterations: int, seed: int) -> dict:
    """Warm up one iteration (op-by-op compiles), then time ``iterations`` more."""
    config = rl.TrainConfig(
        fusion="eager", total_steps=(iterations + 1) * 512, seed=seed, out=None, progress=False
    )
    plan = rl.make_plan("eager", rl.build_loop(resolve(config)))
    state = plan.init(jax.random.key(seed))
    start = time.perf_counter()
    state, pending = plan.advance(state, 1)
    plan.collect(pending)
    warmup_s = time.perf_counter() - start
    start = time.perf_counter()
    state, pending = plan.advance(state, iterations)
    plan.collect(pending)
    run_s = time.perf_counter() - start
    steps = iterations * 512
    return {
        "compile_s": None,
        "warmup_s": warmup_s,
        "run_s": run_s,
        "env_steps": steps,
        "steps_per_s": steps / run_s,
        "final_return": None,
        "measured_iterations": iterations,
    }


def _progress(name: str, r: dict) -> None:
    """One line per run as it ends, so a run stopped from outside has said what it measured."""
    compile_s = "—" if r["compile_s"] is None else f"{r['compile_s']:.2f} s"
    print(
        f"{name}: compile {compile_s}, run {r['run_s']:.2f} s, {r['steps_per_s']:,.0f} env-steps/s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3, help="runs of scan and baseline (median)")
    parser.add_argument("--eager-iterations", type=int, default=2, help="0 skips eager")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cpus", type=int, default=None, help="pin the process to this many cores (default: all)"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="results file (default: benchmarks/results/fusion_modes[_Ncpu].json)",
    )
    parser.add_argument(
        "--modes",
        default="iteration,fragment,step",
        help="comma-separated modes to run besides scan and the baseline (default: all three)",
    )
    args = parser.parse_args()
    others = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(others) - {"iteration", "fragment", "step"})
    if unknown:
        parser.error(
            f"--modes: unknown {', '.join(unknown)}; choose from iteration, fragment, step"
        )
    if args.out is None:
        suffix = f"_{args.cpus}cpu" if args.cpus else ""
        args.out = str(Path(__file__).parent / "results" / f"fusion_modes{suffix}.json")

    results: dict[str, dict] = {}
    # Interleave the two that the headline ratio compares, so machine noise hits both alike.
    pairs = []
    for _ in range(args.repeats):
        baseline = run_baseline(args.total_steps, args.seed)
        _progress("handwritten", baseline)
        scan = run_mode("scan", args.total_steps, args.seed)
        _progress("scan", scan)
        pairs.append((baseline, scan))
    for name, runs in (("handwritten", [p[0] for p in pairs]), ("scan", [p[1] for p in pairs])):
        best = dict(runs[0])
        best["run_s"] = statistics.median(r["run_s"] for r in runs)
        best["steps_per_s"] = best["env_steps"] / best["run_s"]
        best["run_s_all"] = [r["run_s"] for r in runs]
        results[name] = best
    for mode in others:
        results[mode] = run_mode(mode, args.total_steps, args.seed)
        _progress(mode, results[mode])
    if args.eager_iterations > 0:
        results["eager"] = run_eager(args.eager_iterations, args.seed)
        _progress("eager", results["eager"])

    ratios = {
        "scan_vs_handwritten": results["scan"]["steps_per_s"]
        / results["handwritten"]["steps_per_s"],
    }
    if "step" in results:
        ratios["scan_vs_step"] = results["scan"]["steps_per_s"] / results["step"]["steps_per_s"]
    if "eager" in results:
        ratios["scan_vs_eager"] = results["scan"]["steps_per_s"] / results["eager"]["steps_per_s"]
    write_report(
        args.out,
        "fusion_modes",
        {
            "env": "CartPole-v1",
            "num_envs": 4,
            "rollout_len": 128,
            "update_epochs": 4,
            "num_minibatches": 4,
            "hidden_sizes": [64, 64],
            "activation": "tanh",
            "total_steps": args.total_steps,
            "seed": args.seed,
            "repeats": args.repeats,
        },
        results,
        ratios=ratios,
    )

    print("| mode | compile s | run s | env-steps/s | final return |")  # docs: benchmarks/pages.py
    print("|---|---:|---:|---:|---:|")
    for name, r in results.items():
        compile_s = "—" if r["compile_s"] is None else f"{r['compile_s']:.2f}"
        final = "—" if r["final_return"] is None else f"{r['final_return']:.1f}"
        print(f"| {name} | {compile_s} | {r['run_s']:.2f} | {r['steps_per_s']:,.0f} | {final} |")
    print(" ".join(f"{k} = {v:.3f}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()

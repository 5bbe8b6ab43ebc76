"""Env-steps/s of ``--fusion scan`` against hand-written single-program baselines, in pairs.

Each family runs ours and its baseline (``handwritten_ppo.py``, ``handwritten_dqn.py``,
``handwritten_sac.py``) in one process, ``--pairs`` times, the order alternating from pair to pair
(A B, B A, A B, …, so drift and machine noise hit both sides alike). Each pair gives a ratio of
rates (ours over the baseline's: above 1, ours is faster); reported are the median, the range and
every pair's ratio. Compile seconds are reported apart (every run compiles: ours with no
persistent cache, as the baselines). Our config is set to the baseline's:

* PPO, CartPole-v1: the PPO defaults (4 envs × 128 steps, 4 epochs of 4 minibatches, 64-64 tanh).
* DQN, CartPole-v1: 10 envs × rollouts of 1 step, ``utd_ratio = 0.1`` (one update of batch 128
  per iteration of 10 env steps), the DQN defaults otherwise (10k buffer, 10k warm-up, 120-84
  ReLU, ε over half the run, double Q, target copy every 50 updates).
* SAC, Pendulum-v1: 1 env × rollouts of 1 step, ``utd_ratio = 1`` (one update of batch 256 per
  env step), a 131,072-transition buffer, the SAC defaults otherwise (5k warm-up, 256-256 ReLU,
  twin critics, α learned from 1).

Our side is ``jaxrl_fdg.train`` as a user calls it: its run seconds include the host boundaries
where metrics are read back.

Each family is also timed in its steady state, the phase that dominates a run: past a short
warm-up (DQN and SAC: ``learning_starts`` of 200 and 300 env steps, so every iteration updates),
the same compiled chunk of iterations run ``--steady-runs`` times per side from the same state,
the sides alternating, µs per iteration (ours: ``Plan.advance`` of the ``scan`` mode, no host
boundary inside the chunk; the baseline, whose ``lax.scan`` starts at iteration 0: its program for
the warm-up and the chunk, less its program for the warm-up alone).

Both sides compute the same math from different random-key streams, so final returns agree in
distribution, not bit for bit.

    python benchmarks/handwritten_pairs.py                # writes results/handwritten_pairs.json
    python benchmarks/handwritten_pairs.py --families ppo --pairs 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import cli_args  # noqa: E402
import handwritten_dqn  # noqa: E402
import handwritten_ppo  # noqa: E402
import handwritten_sac  # noqa: E402
import jax  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.config import resolve  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402

FAMILIES = {
    "ppo": dict(
        baseline=handwritten_ppo.run,
        config=dict(algo="ppo", env="CartPole-v1", num_envs=4, rollout_len=128),
    ),
    "dqn": dict(
        baseline=handwritten_dqn.run,
        config=dict(
            algo="dqn",
            env="CartPole-v1",
            num_envs=10,
            rollout_len=1,
            hparams=dict(
                utd_ratio=0.1,
                batch_size=128,
                buffer_size=10_000,
                learning_starts=10_000,
                hidden_sizes=(120, 84),
                target_update_period=50,
            ),
        ),
    ),
    "sac": dict(
        baseline=handwritten_sac.run,
        config=dict(
            algo="sac",
            env="Pendulum-v1",
            num_envs=1,
            rollout_len=1,
            hparams=dict(
                utd_ratio=1.0,
                batch_size=256,
                buffer_size=131_072,
                learning_starts=5_000,
                hidden_sizes=(256, 256),
            ),
        ),
    ),
}
KEYS = ("compile_s", "run_s", "env_steps", "steps_per_s", "final_return")
# Steady state: iterations per timed chunk, warm-up iterations before it, and ``learning_starts``
# in env steps (off-policy: every iteration past the warm-up updates).
STEADY = {
    "ppo": dict(iterations=100, warm=1, learning_starts=None),
    "dqn": dict(iterations=8_000, warm=100, learning_starts=200),
    "sac": dict(iterations=1_000, warm=400, learning_starts=300),
}


def steady_chunk(family: str, seed: int):
    """Ours in its steady state: a function that runs one compiled ``scan`` chunk of the
    family's iterations (``STEADY``) from the state past its warm-up, always the same one, and
    returns the state after it (ready)."""
    setting = STEADY[family]
    n, starts = setting["iterations"], setting["learning_starts"]
    config = dict(FAMILIES[family]["config"])
    per_iteration = config["num_envs"] * config["rollout_len"]
    if starts is not None:
        config["hparams"] = {**config["hparams"], "learning_starts": starts}
    config = rl.TrainConfig(
        **config,
        fusion="scan",
        total_steps=(n + setting["warm"]) * per_iteration * 4,
        seed=seed,
        out=None,
        progress=False,
        compile_cache=False,
    )
    plan = rl.make_plan("scan", rl.build_loop(resolve(config)), chunk=n)
    state = plan.start(jax.random.key(seed))
    state, pending = plan.advance(state, setting["warm"])
    plan.collect(pending)

    def chunk() -> Any:
        new, pending = plan.advance(state, n)
        plan.collect(pending)
        return jax.block_until_ready(new)

    return chunk


def steady_state(family: str, runs: int, seed: int) -> dict:
    """µs per iteration of ours and the baseline past the warm-up, medians of ``runs`` alternating
    runs."""
    setting = STEADY[family]
    n, starts = setting["iterations"], setting["learning_starts"]
    config = FAMILIES[family]["config"]
    per_iteration = config["num_envs"] * config["rollout_len"]
    ours = steady_chunk(family, seed)

    # The baseline's scan starts at iteration 0, so its steady state is a difference: the first
    # ``warm + n`` iterations less the first ``warm`` (the same iterations ours skips), of one key.
    module = sys.modules[FAMILIES[family]["baseline"].__module__]
    kwargs = {} if starts is None else {"learning_starts": starts}
    key = jax.random.key(seed)
    programs = {
        length: jax.jit(module.make_train(total_steps=length * per_iteration, **kwargs))
        .lower(key)
        .compile()
        for length in (setting["warm"], setting["warm"] + n)
    }

    def handwritten(length: int):
        return lambda: jax.block_until_ready(programs[length](key))

    sides = {
        "scan": ours,
        "handwritten": handwritten(setting["warm"] + n),
        "handwritten_warm_up": handwritten(setting["warm"]),
    }
    for run in sides.values():  # every program runs once before timing
        run()
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    for i in range(runs):
        for side in list(sides) if i % 2 == 0 else list(sides)[::-1]:
            start = time.perf_counter()
            sides[side]()
            seconds[side].append(time.perf_counter() - start)
    median_s = {side: statistics.median(t) for side, t in seconds.items()}
    us = {
        "handwritten": 1e6 * (median_s["handwritten"] - median_s["handwritten_warm_up"]) / n,
        "scan": 1e6 * median_s["scan"] / n,
    }
    return {
        "iterations": n,
        "warm_up_iterations": setting["warm"],
        "learning_starts": starts,
        "us_per_iteration": us,
        "seconds_all": seconds,
        # Rates, as the pairs: above 1, ours is faster.
        "scan_vs_handwritten": us["handwritten"] / us["scan"],
    }


def run_ours(family: str, total_steps: int, seed: int) -> dict:
    config = rl.TrainConfig(
        **FAMILIES[family]["config"],
        fusion="scan",
        total_steps=total_steps,
        seed=seed,
        out=None,
        progress=False,
        compile_cache=False,
    )
    s = rl.train(config).summary
    return {k: s[k] for k in KEYS}


def median_of(runs: list[dict]) -> dict:
    out = dict(runs[0])
    out["run_s"] = statistics.median(r["run_s"] for r in runs)
    out["steps_per_s"] = out["env_steps"] / out["run_s"]
    out["run_s_all"] = [r["run_s"] for r in runs]
    out["run_s_min"] = min(out["run_s_all"])
    out["compile_s_all"] = [r["compile_s"] for r in runs]
    out["final_return_all"] = [r["final_return"] for r in runs]
    return out


def measure(family: str, total_steps: int, seed: int, pairs: int, steady_runs: int) -> dict:
    baseline = FAMILIES[family]["baseline"]
    sides: dict[str, list[dict]] = {"handwritten": [], "scan": []}
    for i in range(pairs):
        order = ("handwritten", "scan") if i % 2 == 0 else ("scan", "handwritten")
        for side in order:
            run = baseline if side == "handwritten" else partial(run_ours, family)
            sides[side].append(run(total_steps, seed))
        ratio = sides["scan"][-1]["steps_per_s"] / sides["handwritten"][-1]["steps_per_s"]
        print(
            f"{family} pair {i + 1}: handwritten {sides['handwritten'][-1]['run_s']:.3f} s, "
            f"scan {sides['scan'][-1]['run_s']:.3f} s, scan / handwritten {ratio:.3f}",
            flush=True,
        )
    ratios = [
        s["steps_per_s"] / h["steps_per_s"]
        for h, s in zip(sides["handwritten"], sides["scan"], strict=True)
    ]
    return {
        "steady_state": steady_state(family, steady_runs, seed),
        **{side: median_of(runs) for side, runs in sides.items()},
        "scan_vs_handwritten": {
            "median": statistics.median(ratios),
            "min": min(ratios),
            "max": max(ratios),
            "all": ratios,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ppo-steps", type=int, default=1_000_000)
    parser.add_argument("--dqn-steps", type=int, default=500_000)
    parser.add_argument("--sac-steps", type=int, default=15_000)
    parser.add_argument("--families", default="ppo,dqn,sac", help="comma-separated: ppo, dqn, sac")
    parser.add_argument("--pairs", type=int, default=5, help="pairs of runs (median of ratios)")
    parser.add_argument(
        "--steady-runs", type=int, default=6, help="alternating runs per side in steady state"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "handwritten_pairs.json")
    )
    args = parser.parse_args()
    families = cli_args.comma_list(parser, "--families", args.families, FAMILIES)
    if args.pairs < 1 or args.steady_runs < 1:
        parser.error(
            f"--pairs and --steady-runs must be at least 1, got {args.pairs}, {args.steady_runs}"
        )
    steps = {"ppo": args.ppo_steps, "dqn": args.dqn_steps, "sac": args.sac_steps}
    if min(steps.values()) < 1:
        parser.error(f"--ppo-steps, --dqn-steps and --sac-steps must be ≥ 1, got {steps}")

    load_before = os.getloadavg()
    results = {f: measure(f, steps[f], args.seed, args.pairs, args.steady_runs) for f in families}
    load_after = os.getloadavg()
    ratios = {
        f"{f}_scan_vs_handwritten": results[f]["scan_vs_handwritten"]["median"] for f in families
    }
    config = {
        f: {**FAMILIES[f]["config"], "total_steps": steps[f], "fusion": "scan"} for f in families
    }
    config.update(seed=args.seed, pairs=args.pairs, steady_runs=args.steady_runs, steady=STEADY)
    write_report(
        args.out,
        "handwritten_pairs",
        config,
        results,
        ratios=ratios,
        load_average={"before": list(load_before), "after": list(load_after)},
        random_streams="different: final returns agree in distribution, not bit for bit",
    )

    print("| family | side | compile s | run s (median) | env-steps/s | final return |")
    print("|---|---|---:|---:|---:|---:|")
    for f in families:
        for side in ("handwritten", "scan"):
            r = results[f][side]
            final = "—" if r["final_return"] is None else f"{r['final_return']:.1f}"
            print(
                f"| {f} | {side} | {r['compile_s']:.2f} | {r['run_s']:.2f} | "
                f"{r['steps_per_s']:,.0f} | {final} |"
            )
    print(" ".join(f"{k} = {v:.3f}" for k, v in ratios.items()))
    print(f"load average before {load_before}, after {load_after}")


if __name__ == "__main__":
    main()

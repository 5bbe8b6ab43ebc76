"""Env-steps/s of every registered algorithm under every fusion mode, in one run.

Each algorithm runs its default hyperparameters on its usual environment (``SETTINGS``; an
algorithm registered since takes its spec's own run settings) for the same number of iterations
in every compiled mode (``ITERATIONS``, or ``--iterations``), compile seconds reported apart from
run seconds. Off-policy algorithms start learning after their first iteration here
(``learning_starts`` = one iteration), so every timed iteration but the first includes its
updates. Runs are interleaved, ``--rounds`` times over (round 1: every algorithm in every mode,
then round 2, ...), so the machine's drift hits every mode alike; each figure is the median of
the rounds. ``eager`` is timed once, over a few iterations after one warm-up iteration.

    python benchmarks/algorithms.py                          # writes results/algorithms.json
    python benchmarks/algorithms.py --algos all --modes scan  # every registered algorithm
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import cli_args
import jax

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.profiling import write_report

# Environment and vector/rollout sizes per algorithm (its defaults otherwise).
SETTINGS = {
    "ppo": dict(env="CartPole-v1", num_envs=4, rollout_len=128),
    "a2c": dict(env="CartPole-v1", num_envs=8, rollout_len=5),
    "dqn": dict(env="CartPole-v1", num_envs=4, rollout_len=4),
    "sac": dict(env="Pendulum-v1", num_envs=4, rollout_len=8),
    "td3": dict(env="Pendulum-v1", num_envs=4, rollout_len=8),
    "ddpg": dict(env="Pendulum-v1", num_envs=4, rollout_len=8),
}
MODES = ("scan", "iteration", "fragment", "step")
# Iterations per compiled mode where the default (``--iterations``) would take minutes: SAC, TD3
# and DDPG make 32 updates of 256 × (256, 256) networks per iteration (~0.1 s here).
ITERATIONS = {"sac": 30, "td3": 30, "ddpg": 30}


def settings_for(algo: str) -> dict:
    """``SETTINGS[algo]``, or for an algorithm not listed there its spec's own environment and
    vector/rollout sizes."""
    if algo in SETTINGS:
        return SETTINGS[algo]
    defaults = rl.algorithm.get(algo).defaults
    return {k: defaults[k] for k in ("env", "num_envs", "rollout_len")}


def config_for(algo: str, iterations: int, mode: str, seed: int) -> rl.TrainConfig:
    setting = settings_for(algo)
    per_iteration = setting["num_envs"] * setting["rollout_len"]
    hparams = {}
    spec = rl.algorithm.get(algo)
    if "learning_starts" in {f for f in spec.hparams.__dataclass_fields__}:
        hparams["learning_starts"] = per_iteration
    return rl.TrainConfig(
        algo=algo,
        fusion=mode,
        total_steps=iterations * per_iteration,
        seed=seed,
        out=None,
        progress=False,
        hparams=hparams,
        **setting,
    )


def run_mode(config: rl.TrainConfig) -> dict:
    s = rl.train(config).summary
    return {k: s[k] for k in ("compile_s", "run_s", "env_steps", "steps_per_s")}


def run_eager(config: rl.TrainConfig, iterations: int) -> dict:
    plan = rl.make_plan("eager", rl.build_loop(resolve(config)))
    state = plan.init(jax.random.key(config.seed))
    state, pending = plan.advance(state, 1)  # warm-up: op-by-op compiles
    plan.collect(pending)
    start = time.perf_counter()
    state, pending = plan.advance(state, iterations)
    plan.collect(pending)
    run_s = time.perf_counter() - start
    steps = iterations * config.steps_per_iteration
    return {"compile_s": None, "run_s": run_s, "env_steps": steps, "steps_per_s": steps / run_s}


def medians(runs: list[dict]) -> dict:
    """One mode's rounds as medians, the per-round env-steps/s kept beside them."""
    return {
        "compile_s": statistics.median(r["compile_s"] for r in runs),
        "run_s": statistics.median(r["run_s"] for r in runs),
        "env_steps": runs[0]["env_steps"],
        "steps_per_s": statistics.median(r["steps_per_s"] for r in runs),
        "steps_per_s_all": [r["steps_per_s"] for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help=f"per compiled mode (default 200; {ITERATIONS} for the slowest)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument("--eager-iterations", type=int, default=1, help="0 skips eager")
    parser.add_argument(
        "--algos", default=",".join(SETTINGS), help="comma-separated, or 'all': every registered"
    )
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated fusion modes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "algorithms.json"))
    args = parser.parse_args()
    algos = rl.algorithm.registered() if args.algos == "all" else args.algos.split(",")
    modes = cli_args.comma_list(parser, "--modes", args.modes, MODES)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    iterations = {a: args.iterations or ITERATIONS.get(a, 200) for a in algos}

    runs: dict[str, dict[str, list[dict]]] = {a: {m: [] for m in modes} for a in algos}
    for round_ in range(args.rounds):  # interleaved: machine noise hits every mode alike
        for algo in algos:
            for mode in modes:
                print(f"round {round_ + 1}: {algo} {mode} ...", flush=True)
                config = config_for(algo, iterations[algo], mode, args.seed)
                runs[algo][mode].append(run_mode(config))
    results: dict[str, dict] = {}
    for algo in algos:
        results[algo] = {mode: medians(runs[algo][mode]) for mode in modes}
        if args.eager_iterations > 0:
            config = config_for(algo, args.eager_iterations + 1, "eager", args.seed)
            results[algo]["eager"] = run_eager(config, args.eager_iterations)
        if "scan" in results[algo] and "step" in results[algo]:
            scan = results[algo]["scan"]["steps_per_s"]
            results[algo]["scan_vs_step"] = scan / results[algo]["step"]["steps_per_s"]
    config = {
        "settings": {a: settings_for(a) for a in results},
        "iterations": iterations,
        "rounds": args.rounds,
    }
    if modes != list(MODES):
        config["modes"] = modes
    write_report(args.out, "algorithms", config, results)
    header = f"{'':<6}" + "".join(f"{m:>12}" for m in (*MODES, "eager"))
    print(header)
    for algo, cells in results.items():
        row = "".join(
            f"{cells[m]['steps_per_s']:>12,.0f}" if m in cells else f"{'—':>12}"
            for m in (*MODES, "eager")
        )
        print(f"{algo:<6}{row}")


if __name__ == "__main__":
    main()

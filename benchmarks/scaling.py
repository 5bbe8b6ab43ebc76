"""Cost as work grows: env-steps/s and compile seconds of the fused ``scan`` mode against size.

    python benchmarks/scaling.py                 # writes results/scaling.json and scaling.png
    python benchmarks/scaling.py --size smoke    # the smallest of each axis, for a quick check

Four axes, each varied alone from the algorithm's defaults (everything else as ``jaxrl-fdg train
--algo X`` runs it):

* PPO (CartPole-v1) against ``num_envs``: 1 … 4096 parallel environments, 128 steps each;
* PPO against network width: two hidden layers of 64 … 1024 units (policy and value each);
* DQN (CartPole-v1) against the learner's batch size: 32 … 4096;
* DQN against the replay buffer's capacity: 1e4 … 1e6 transitions.

Each cell trains at least ``MIN_STEPS`` env steps (and ``MIN_ITERATIONS`` iterations) in one
process with JAX's persistent cache off, so ``compile_s`` is the cold compile wait of ``init`` and
the scan program (the runner's figure) and ``steps_per_s`` the run's env-steps per second without
compiling. Off-policy runs start learning after their first iteration (``learning_starts`` = one
iteration), so the timed iterations include their updates. One process, one machine: the ratios
between cells are the result.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import jax

import jaxrl_fdg as rl

RESULTS = Path(__file__).parent / "results"

# axis -> (algo, the swept setting, its values, fixed run settings)
AXES = {
    "ppo_num_envs": ("ppo", "num_envs", [1, 4, 16, 64, 256, 1024, 4096]),
    "ppo_width": ("ppo", "hidden_sizes", [64, 128, 256, 512, 1024]),
    "dqn_batch_size": ("dqn", "batch_size", [32, 128, 512, 1024, 4096]),
    "dqn_buffer_size": ("dqn", "buffer_size", [10_000, 100_000, 1_000_000]),
}
# Env steps per cell, at least: enough for a second or more of running at the smallest sizes. A
# cell runs at least MIN_ITERATIONS whole iterations (at 4096 envs one PPO iteration is 524,288
# steps).
MIN_STEPS = {"ppo": 2**16, "dqn": 2**15}
MIN_ITERATIONS = 4


def config_for(axis: str, value: int, smoke: bool = False) -> rl.TrainConfig:
    algo, setting, _ = AXES[axis]
    base = rl.TrainConfig(algo=algo, out=None, progress=False, profile="host")
    base = base.with_defaults(rl.algorithm.get(algo).defaults)
    hparams: dict = {}
    run: dict = {}
    if setting == "num_envs":
        run["num_envs"] = value
    elif setting == "hidden_sizes":
        hparams["hidden_sizes"] = (value, value)
    else:
        hparams[setting] = value
    num_envs = run.get("num_envs", base.num_envs)
    per_iteration = num_envs * base.rollout_len
    iterations = 2 if smoke else max(MIN_ITERATIONS, -(-MIN_STEPS[algo] // per_iteration))
    if algo == "dqn":
        hparams["learning_starts"] = per_iteration
    return base.replace(
        total_steps=iterations * per_iteration,
        log_every=iterations,  # one chunk: the whole run is one call of the scan program
        hparams=hparams,
        **run,
    )


def measure(config: rl.TrainConfig) -> dict:
    start = time.perf_counter()
    result = rl.train(config)
    summary = result.summary
    return {
        "steps_per_s": summary["steps_per_s"],
        "compile_s": summary["compile_s"],
        "run_s": summary["run_s"],
        "env_steps": summary["env_steps"],
        "wall_s": time.perf_counter() - start,
    }


def median_of(runs: list[dict]) -> dict:
    """Each figure's median over ``runs``, and the runs themselves."""
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]} | {"runs": runs}


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(AXES), figsize=(4.2 * len(AXES), 3.6))
    for ax, (axis, cells) in zip(axes, report["results"].items(), strict=True):
        algo, setting, _ = AXES[axis]
        xs = [c["value"] for c in cells]
        ys = [c["steps_per_s"] for c in cells]
        ax.plot(xs, ys, "o-", color="tab:blue")
        ax.set_xscale("log", base=2 if setting != "buffer_size" else 10)
        ax.set_yscale("log")
        ax.set_ylim(min(ys) / 2, max(ys) * 2)  # a flat curve looks flat
        ax.set_xlabel(setting if setting != "hidden_sizes" else "hidden width (2 layers)")
        ax.set_ylabel("env-steps/s", color="tab:blue")
        ax.set_title(f"{algo.upper()} scan")
        twin = ax.twinx()
        twin.plot(xs, [c["compile_s"] for c in cells], "s--", color="tab:orange")
        twin.set_ylabel("compile s (cold)", color="tab:orange")
        twin.set_ylim(bottom=0)
    fig.suptitle(f"cost as work grows ({report['machine']['device']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("smoke", "full"), default="full")
    parser.add_argument("--axes", default=",".join(AXES), help="comma-separated axes")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per cell, interleaved across cells (median)"
    )
    parser.add_argument("--out", default=str(RESULTS / "scaling.json"))
    args = parser.parse_args()
    axes = [a for a in args.axes.split(",") if a]
    unknown = sorted(set(axes) - set(AXES))
    if unknown:
        parser.error(f"unknown axes {unknown}; valid: {', '.join(AXES)}")
    jax.config.update("jax_enable_compilation_cache", False)

    smoke = args.size == "smoke"
    cells = [(axis, v) for axis in axes for v in (AXES[axis][2][:1] if smoke else AXES[axis][2])]
    runs: dict[tuple[str, int], list] = {cell: [] for cell in cells}
    for repeat in range(1 if smoke else args.repeats):
        for axis, value in cells:  # every cell once per round: slow drift hits all alike
            run = measure(config_for(axis, value, smoke))
            runs[axis, value].append(run)
            print(
                f"round {repeat + 1}  {axis:16s} {value:>9,}  {run['steps_per_s']:>12,.0f}"
                f" env-steps/s  compile {run['compile_s']:5.2f} s  run {run['run_s']:6.2f} s",
                flush=True,
            )
    results: dict[str, list] = {axis: [] for axis in axes}
    for axis, value in cells:
        results[axis].append({"value": value, **median_of(runs[axis, value])})
    device = jax.devices()[0]
    report = {
        "benchmark": "scaling",
        "config": {
            "size": args.size,
            "min_steps": MIN_STEPS,
            "min_iterations": MIN_ITERATIONS,
            "repeats": 1 if smoke else args.repeats,
            "cache": "off",
        },
        "machine": {
            "device": f"{device.platform}: {device.device_kind}",
            "cpu": platform.processor() or platform.machine(),
            "jax": jax.__version__,
        },
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    if len(results) == len(AXES):
        plot(report, out.with_suffix(".png"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

"""Cold compile seconds per program, for every algorithm and fusion mode, with no compilation cache.

    python benchmarks/compile_time.py                  # writes benchmarks/results/compile_time.json
    python benchmarks/compile_time.py --algos ppo --fusion scan

Each (algorithm, mode) runs in a fresh Python with JAX's persistent cache switched off, on the
algorithm's usual environment and sizes (``benchmarks/algorithms.py``), with evaluation on, so every
program a default run builds is compiled once: ``init``, the mode's programs, ``evaluate``.

Per program, ``compile_s`` is the runner's own figure (the ``compile:<program>`` scope: tracing,
lowering and XLA together). The process-wide split comes from JAX's monitoring events: ``trace_s``
(Python to jaxpr), ``lower_s`` (jaxpr to StableHLO) and ``backend_s`` (XLA). ``compile_wall_s`` is
the wall time from the start of ``train`` to the first chunk's dispatch, which is less than the sum
of the programs when they compile in parallel; ``run_s`` is the run's time without compiling.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from algorithms import SETTINGS, settings_for  # noqa: E402

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "backend_s",
}
MODES = ("scan", "iteration", "fragment", "step")


def child(algo: str, fusion: str, total_steps: int | None) -> None:
    """One run in this process, cache off; prints its compile figures as one JSON line."""
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    import jaxrl_fdg as rl

    seconds: dict[str, float] = defaultdict(float)

    def on_duration(event: str, duration: float, **_: object) -> None:
        if event in _EVENTS:
            seconds[_EVENTS[event]] += duration

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    setting = settings_for(algo)
    per_iteration = setting["num_envs"] * setting["rollout_len"]
    steps = total_steps or 8 * per_iteration
    config = rl.TrainConfig(
        algo=algo,
        fusion=fusion,
        total_steps=steps,
        eval_every=steps,
        eval_episodes=4,
        out=None,
        progress=False,
        compile_cache=False,
        **setting,
    )
    summary = rl.train(config).summary
    timing = summary["timing"]
    print(
        json.dumps(
            {
                "programs": {k: v["compile_s"] for k, v in timing["programs"].items()},
                "compile_s": summary["compile_s"],
                "compile_wall_s": timing.get("compile_wall_s", summary["compile_s"]),
                "run_s": summary["run_s"],
                "env_steps": summary["env_steps"],
                "jax_events": dict(seconds),
            }
        )
    )


def measure(algo: str, fusion: str, total_steps: int | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    command = [sys.executable, __file__, "--child", "--algos", algo, "--fusion", fusion]
    if total_steps:
        command += ["--total-steps", str(total_steps)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--algos", default=",".join(SETTINGS), help="comma-separated, or 'all': every registered"
    )
    parser.add_argument("--fusion", default=",".join(MODES), help="comma-separated fusion modes")
    parser.add_argument("--repeats", type=int, default=1, help="processes per cell (median)")
    parser.add_argument("--total-steps", type=int, default=None, help="default: 8 iterations")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "compile_time.json")
    )
    args = parser.parse_args()
    algos = [a for a in args.algos.split(",") if a]
    if algos == ["all"]:
        import jaxrl_fdg as rl

        algos = list(rl.algorithm.registered())
    modes = [m for m in args.fusion.split(",") if m]
    if args.child:
        child(algos[0], modes[0], args.total_steps)
        return

    from jaxrl_fdg.profiling import write_report

    results: dict[str, dict] = {}
    print("| algo | mode | init s | mode's programs s | evaluate s | compile wall s | XLA s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for algo in algos:
        for mode in modes:
            runs = [measure(algo, mode, args.total_steps) for _ in range(args.repeats)]
            programs = {
                name: statistics.median(r["programs"][name] for r in runs)
                for name in runs[0]["programs"]
            }
            cell = {
                "programs": programs,
                "compile_s": statistics.median(r["compile_s"] for r in runs),
                "compile_wall_s": statistics.median(r["compile_wall_s"] for r in runs),
                "backend_s": statistics.median(r["jax_events"].get("backend_s", 0) for r in runs),
                "trace_s": statistics.median(r["jax_events"].get("trace_s", 0) for r in runs),
                "lower_s": statistics.median(r["jax_events"].get("lower_s", 0) for r in runs),
                "runs": runs,
            }
            results[f"{algo}/{mode}"] = cell
            own = sum(v for k, v in programs.items() if k not in ("init", "evaluate"))
            print(
                f"| {algo} | {mode} | {programs.get('init', 0):.2f} | {own:.2f} "
                f"| {programs.get('evaluate', 0):.2f} | {cell['compile_wall_s']:.2f} "
                f"| {cell['backend_s']:.2f} |",
                flush=True,
            )
    write_report(
        args.out,
        "compile_time",
        {"algos": algos, "fusion": modes, "repeats": args.repeats, "cache": "off"},
        results,
        target="default train compiles in <= 3 s cold",
    )


if __name__ == "__main__":
    main()

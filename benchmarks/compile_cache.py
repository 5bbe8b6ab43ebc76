"""Compile seconds of the same run twice, each in a fresh process, sharing one fresh persistent
compilation cache: what ``jaxrl_fdg.run.compile_cache`` saves when a configuration runs again.

    python benchmarks/compile_cache.py     # writes benchmarks/results/compile_cache.json

Each mode is measured ``--repeats`` times (a fresh cache each time) and summarised by medians, since
compile seconds on a shared machine vary by tens of percent from one process to the next. Both
processes find the cache where a user's runs would: ``XDG_CACHE_HOME`` points at a fresh
temporary folder, so ``compile_cache.enable()`` takes its default path there. Each run's
``compile_s`` is the runner's own figure (``summary["compile_s"]``: the wall time of the
ahead-of-time ``compile:<program>`` scopes), per program in ``programs``.

``jax_events`` splits the process's compile work by JAX's own monitoring events: ``trace_s``
(Python to jaxpr) and ``lower_s`` (jaxpr to StableHLO) happen in every process, since the cache
key is computed from the lowered program; ``backend_s`` is XLA compilation on a miss and, on a
hit, reading the executable back (``cache_read_s`` of it). These sums are process-wide: besides
the compile scopes they hold the few tiny programs compiled outside them (the seed's key: a few
hundredths of a second) and, in ``trace_s`` only, the shape-only tracing the fusion plans do
before their compile scopes open (``jax.eval_shape``, which ``compile_s`` does not count).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "backend_s",
    "/jax/compilation_cache/cache_retrieval_time_sec": "cache_read_s",
}
_COUNTS = {
    "/jax/compilation_cache/cache_hits": "cache_hits",
    "/jax/compilation_cache/cache_misses": "cache_writes",
}


def child(fusion: str, total_steps: int) -> None:
    """One training run in this process; prints its compile figures as one JSON line."""
    import jax

    import jaxrl_fdg as rl

    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)

    def on_duration(event: str, duration: float, **_: object) -> None:
        if event in _EVENTS:
            seconds[_EVENTS[event]] += duration

    def on_event(event: str, **_: object) -> None:
        if event in _COUNTS:
            counts[_COUNTS[event]] += 1

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    config = rl.TrainConfig(fusion=fusion, total_steps=total_steps, out=None, progress=False)
    summary = rl.train(config).summary
    result = {
        "compile_s": summary["compile_s"],
        "programs": {k: v["compile_s"] for k, v in summary["timing"]["programs"].items()},
        "jax_events": {name: seconds[name] for name in _EVENTS.values()},
        **{name: counts[name] for name in _COUNTS.values()},
        "cache_dir": jax.config.jax_compilation_cache_dir,
        "final_return": summary["final_return"],
    }
    print(json.dumps(result))


def run_twice(fusion: str, total_steps: int) -> dict:
    """Two fresh processes, one fresh cache folder between them."""
    with tempfile.TemporaryDirectory(prefix="jaxrl-fdg-cache-") as home:
        env = {**os.environ, "XDG_CACHE_HOME": home}
        env.pop("JAX_COMPILATION_CACHE_DIR", None)  # a cache of the caller's would be kept
        runs = []
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--fusion", fusion]
                + ["--total-steps", str(total_steps)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(out.stdout.strip().splitlines()[-1])
            if not run["cache_dir"].startswith(home):
                raise SystemExit(f"the run used the cache {run['cache_dir']}, not one in {home}")
            runs.append(run)
        entries = sum(1 for _ in Path(home).rglob("*-cache"))
    first, second = runs
    return {
        "first": first,
        "second": second,
        "cache_entries": entries,
        "ratio": second["compile_s"] / first["compile_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--fusion", default="scan,iteration,fragment,step", help="comma-separated fusion modes"
    )
    parser.add_argument("--total-steps", type=int, default=51_200)
    parser.add_argument("--repeats", type=int, default=3, help="pairs of runs per mode (median)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--out",
        default=str(Path(__file__).parent / "results" / "compile_cache.json"),
        help="results file",
    )
    args = parser.parse_args()
    if args.child:
        child(args.fusion, args.total_steps)
        return

    from jaxrl_fdg.profiling import write_report
    from jaxrl_fdg.run.compile_cache import MIN_COMPILE_TIME_S

    modes = [m.strip() for m in args.fusion.split(",") if m.strip()]
    results = {}
    for mode in modes:
        pairs = [run_twice(mode, args.total_steps) for _ in range(args.repeats)]
        second = [p["second"] for p in pairs]
        results[mode] = {
            "first_compile_s": statistics.median(p["first"]["compile_s"] for p in pairs),
            "second_compile_s": statistics.median(r["compile_s"] for r in second),
            "ratio": statistics.median(p["ratio"] for p in pairs),
            "ratios": [p["ratio"] for p in pairs],
            "second_jax_events": {
                k: statistics.median(r["jax_events"][k] for r in second) for k in _EVENTS.values()
            },
            "pairs": pairs,
        }
    write_report(
        args.out,
        "compile_cache",
        {
            "algo": "ppo",
            "env": "CartPole-v1",
            "num_envs": 4,
            "rollout_len": 128,
            "total_steps": args.total_steps,
            "fusion": modes,
            "repeats": args.repeats,
            "min_compile_time_s": MIN_COMPILE_TIME_S,
        },
        results,
        target="second run's compile_s <= 0.2 x the first's",
    )
    print(
        "| mode | first compile s | second compile s | second / first (range) "
        "| second: lowering s | second: reading the cache s |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for mode, r in results.items():
        events = r["second_jax_events"]
        print(
            f"| {mode} | {r['first_compile_s']:.2f} | {r['second_compile_s']:.2f} "
            f"| {r['ratio']:.0%} ({min(r['ratios']):.0%}–{max(r['ratios']):.0%}) "
            f"| {events['lower_s']:.2f} | {events['cache_read_s']:.2f} |"
        )


if __name__ == "__main__":
    main()

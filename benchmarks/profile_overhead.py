"""Overhead of each timing mode on the default PPO run, measured in one run.

Each mode's run time (compilation excluded; for ``trace`` the profiler's own session start and
export excluded too, as the runner reports them apart) against ``--profile off``, interleaved,
medians of ``--repeats``. Also reported: the run time after the calibrated per-event cost is
subtracted, and its remaining bias against ``off``.

    python benchmarks/profile_overhead.py                 # default run: scan, 500k steps
    python benchmarks/profile_overhead.py --fusion step --total-steps 51200
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import jaxrl_fdg as rl
from jaxrl_fdg.profiling import write_report

MODES = ("off", "host", "sync", "trace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fusion", default="scan")
    parser.add_argument("--total-steps", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = args.out or str(
        Path(__file__).parent / "results" / f"profile_overhead_{args.fusion}.json"
    )

    base = rl.TrainConfig(
        fusion=args.fusion, total_steps=args.total_steps, out=None, progress=False
    )
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    for _ in range(args.repeats):
        for mode in MODES:
            timing = rl.train(base.replace(profile=mode)).summary["timing"]
            runs[mode].append(timing)

    off = statistics.median(t["run_s"] for t in runs["off"])
    results = {}
    for mode in MODES:
        run_s = statistics.median(t["run_s"] for t in runs[mode])
        corrected = statistics.median(t["corrected_run_s"] for t in runs[mode])
        results[mode] = {
            "run_s": run_s,
            "run_s_all": [t["run_s"] for t in runs[mode]],
            "overhead": run_s / off - 1.0,
            "corrected_run_s": corrected,
            "corrected_bias": corrected / off - 1.0,
            "scope_events": runs[mode][0]["scope_events"],
            "overhead_per_event_s": runs[mode][0]["overhead_per_event_s"],
            "profiler_session_s": statistics.median(
                t.get("profiler_session_s", 0.0) for t in runs[mode]
            ),
        }
    write_report(
        out,
        "profile_overhead",
        {
            "fusion": args.fusion,
            "total_steps": args.total_steps,
            "repeats": args.repeats,
            "algo": "ppo",
            "env": "CartPole-v1",
        },
        results,
        targets={"host": 0.02, "sync": 0.10, "trace": 0.10},
    )
    print("| mode | run s | overhead vs off | corrected run s | bias after correction | events |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode, r in results.items():
        print(
            f"| {mode} | {r['run_s']:.3f} | {100 * r['overhead']:+.1f}% | "
            f"{r['corrected_run_s']:.3f} | {100 * r['corrected_bias']:+.1f}% | "
            f"{r['scope_events']:,} |"
        )


if __name__ == "__main__":
    main()

"""Default runs started cold, this checkout against another install, in interleaved pairs.

    python benchmarks/cold_pairs.py --baseline /path/to/other/venv/bin/python --algos a2c,ppo

Each pair runs ``jaxrl-fdg train --algo X`` once with ``--baseline``'s interpreter (whatever
jaxrl-fdg it imports: an earlier release, another branch) and once with this one, each in a fresh
process with an empty compilation cache (``benchmarks/defaults.py``), alternating so that the
machine's drift falls on both. Reports per algorithm the medians of compile and run seconds on
each side, every pair's ratios, and each run's compile over its run time (issue 18 asks that no
default run compile for longer than it runs). Without ``--baseline`` both sides are this checkout,
which measures the noise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cli_args import comma_list  # noqa: E402
from defaults import run_default  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402


def pairs(algo: str, n: int, baseline: str, seed: int) -> dict:
    sides: dict[str, list[dict]] = {"baseline": [], "current": []}
    for _ in range(n):
        sides["baseline"].append(run_default(algo, seed, baseline))
        sides["current"].append(run_default(algo, seed))
    out: dict = {}
    for key in ("compile_s", "run_s"):
        before = [r[key] for r in sides["baseline"]]
        after = [r[key] for r in sides["current"]]
        ratios = [a / b for a, b in zip(after, before, strict=True)]
        out[key] = {
            "baseline": statistics.median(before),
            "current": statistics.median(after),
            "pair_ratios": ratios,
            "median_pair_ratio": statistics.median(ratios),
        }
    out["compile_over_run"] = {
        side: [r["compile_s"] / r["run_s"] for r in runs] for side, runs in sides.items()
    }
    out["runs"] = {
        side: [(r["compile_s"], r["run_s"], r["final_return"]) for r in runs]
        for side, runs in sides.items()
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default="a2c,ppo", help="comma-separated algorithms")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--baseline", default=sys.executable, help="the other interpreter")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "cold_pairs.json"))
    args = parser.parse_args()
    algos = comma_list(parser, "--algos", args.algos, rl.algorithm.registered())
    results = {}
    for algo in algos:
        r = results[algo] = pairs(algo, args.pairs, args.baseline, args.seed)
        c, t = r["compile_s"], r["run_s"]
        worst = max(r["compile_over_run"]["current"])
        print(
            f"{algo}: compile {c['baseline']:.2f} -> {c['current']:.2f} s "
            f"(pairs {c['median_pair_ratio']:.2f}), run {t['baseline']:.2f} -> {t['current']:.2f} s"
            f", compile/run at most {worst:.2f}",
            flush=True,
        )
    config = {"pairs": args.pairs, "baseline": args.baseline, "seed": args.seed, "cache": "empty"}
    write_report(args.out, "cold_pairs", config, results)


if __name__ == "__main__":
    main()

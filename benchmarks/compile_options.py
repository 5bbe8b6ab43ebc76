"""Cold compile seconds of a default run with ``init`` compiled under today's run-once options, and
under the earlier ones (LLVM optimisation off, MLIR fusion emitters on), in interleaved pairs.

    python benchmarks/compile_options.py               # PPO, 5 pairs
    python benchmarks/compile_options.py --algos ppo,a2c --pairs 8

Each run is ``jaxrl-fdg train --algo ALGO`` with its defaults in a fresh Python, the compilation
cache off; the two settings alternate (earlier, current, current, earlier, ...) so that the
machine's drift falls on both. ``init`` compiles on a worker thread beside the mode's program
(``Plan.start``), so what its compile saves shows in the compile wall of the whole run. Reported:
the medians and each pair's ratio current / earlier of the compile wall, ``init``'s and the
program's own compile seconds, and the run seconds (which must not move: the options change how
``init`` is compiled, not what the run computes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from jaxrl_fdg.policies.compiling import RUN_ONCE_OPTIONS

# The earlier run-once options: today's without the older emitters (the MLIR fusion emitters on).
EARLIER = {k: v for k, v in RUN_ONCE_OPTIONS.items() if k != "xla_cpu_use_fusion_emitters"}
SETTINGS = ("earlier", "current")


def child(algo: str, setting: str) -> None:
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    from jaxrl_fdg.policies import compiling

    if setting == "earlier":
        compiling.RUN_ONCE_OPTIONS = dict(EARLIER)
    import jaxrl_fdg as rl

    summary = rl.train(
        rl.TrainConfig(algo=algo, out=None, progress=False, compile_cache=False)
    ).summary
    programs = {k: v["compile_s"] for k, v in summary["timing"]["programs"].items()}
    row = {
        "compile_s": summary["compile_s"],
        "run_s": summary["run_s"],
        "programs": programs,
        "final_return": summary["final_return"],
    }
    print("RESULT " + json.dumps(row), flush=True)


def measure(algo: str, setting: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    command = [sys.executable, __file__, "--child", setting, "--algos", algo]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def _summary(runs: dict[str, list[dict]], pick) -> dict:
    earlier, current = ([pick(r) for r in runs[s]] for s in SETTINGS)
    ratios = [c / e for e, c in zip(earlier, current, strict=True)]
    return {
        "earlier": statistics.median(earlier),
        "current": statistics.median(current),
        "pair_ratios": ratios,
        "median_pair_ratio": statistics.median(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default="ppo", help="comma-separated")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs per algorithm")
    parser.add_argument("--child", choices=SETTINGS, help=argparse.SUPPRESS)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "compile_options.json")
    )
    args = parser.parse_args()
    algos = [a for a in args.algos.split(",") if a]
    if args.child:
        child(algos[0], args.child)
        return

    from jaxrl_fdg.profiling import write_report

    results = {}
    print("| algo | compile wall s (earlier → current) | init s | run s | pair ratios |")
    print("|---|---|---|---|---|")
    for algo in algos:
        runs: dict[str, list[dict]] = {s: [] for s in SETTINGS}
        for i in range(args.pairs):
            order = SETTINGS if i % 2 == 0 else SETTINGS[::-1]
            for setting in order:
                runs[setting].append(measure(algo, setting))
        cell = {
            "compile_s": _summary(runs, lambda r: r["compile_s"]),
            "init_s": _summary(runs, lambda r: r["programs"].get("init", 0.0)),
            "run_s": _summary(runs, lambda r: r["run_s"]),
            "runs": runs,
        }
        results[algo] = cell
        c, i, r = cell["compile_s"], cell["init_s"], cell["run_s"]
        print(
            f"| {algo} | {c['earlier']:.2f} → {c['current']:.2f} "
            f"| {i['earlier']:.2f} → {i['current']:.2f} | {r['earlier']:.2f} → {r['current']:.2f} "
            f"| {', '.join(f'{x:.2f}' for x in c['pair_ratios'])} |",
            flush=True,
        )
    write_report(
        args.out,
        "compile_options",
        {"algos": algos, "pairs": args.pairs, "cache": "off", "earlier": EARLIER},
        results,
        target="default train compiles in <= 3 s cold",
    )


if __name__ == "__main__":
    main()

"""Predicted against measured time per iteration: the bound analysis of ``--profile sync`` runs.

    python benchmarks/roofline.py                        # writes benchmarks/results/roofline.json
    python benchmarks/roofline.py --algos ppo --fusion scan,fragment --iterations 8

Each (algorithm, fusion mode) trains once with ``--profile sync`` on the algorithm's usual
environment and sizes (``benchmarks/algorithms.py``). Recorded per run: the measured seconds per
iteration (run time over iterations), the roofline prediction per iteration on this device's
roofs and on an H100 SXM's datasheet figures (``jaxrl_fdg.profiling.bound``), and each program's
FLOPs, bytes, achieved rates, fractions of peak and verdict. Run on an H100, the measured time and
the H100 prediction stand side by side; the accelerator suite (``benchmarks/accelerator.py``)
copies them to the top of its report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import cli_args  # noqa: E402
from algorithms import SETTINGS, config_for  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402

MODES = ("scan", "iteration", "fragment", "step")


def measure(algo: str, fusion: str, iterations: int) -> dict:
    """One ``--profile sync`` run; its per-iteration figures and its bound analysis."""
    config = config_for(algo, iterations, fusion, seed=0).replace(profile="sync")
    timing = rl.train(config).summary["timing"]
    analysis = timing["bound"]
    return {
        "measured_iteration_s": analysis["iteration_s"],
        "predicted_here_iteration_s": analysis["roofline_iteration_s"],
        "predicted_h100_iteration_s": analysis["h100_iteration_s"],
        "peak": analysis["peak"],
        "h100": analysis["h100"],
        "programs": analysis["programs"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default="ppo,dqn", help="comma-separated algorithms, or all")
    parser.add_argument("--fusion", default="scan,fragment", help="comma-separated modes")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "roofline.json"))
    args = parser.parse_args()
    known = sorted({*SETTINGS, *rl.algorithm.registered()})
    algos = (
        known if args.algos == "all" else cli_args.comma_list(parser, "--algos", args.algos, known)
    )
    modes = cli_args.comma_list(parser, "--fusion", args.fusion, MODES)
    results = {}
    for algo in algos:
        for fusion in modes:
            entry = results[f"{algo}/{fusion}"] = measure(algo, fusion, args.iterations)
            predicted = entry["predicted_h100_iteration_s"]
            print(
                f"{algo}/{fusion}: {entry['measured_iteration_s'] * 1e3:.3f} ms an iteration "
                f"measured; H100 roofline {predicted * 1e3:.4f} ms",
                flush=True,
            )
    config = {"algos": algos, "fusion": modes, "iterations": args.iterations}
    write_report(args.out, "roofline", config, results)


if __name__ == "__main__":
    main()

"""Predicted against measured time per iteration, and where an iteration's time goes.

    python benchmarks/roofline.py                        # writes benchmarks/results/roofline.json
    python benchmarks/roofline.py --algos ppo --fusion scan,fragment --iterations 8

Each (algorithm, fusion mode) trains twice on the algorithm's usual environment and sizes
(``benchmarks/algorithms.py``): once with ``--profile sync`` (each program's device time) and once
with ``--profile trace`` (the operations the window executed, by class). Recorded per run: the
measured seconds per iteration; the roofline per iteration on this device's roofs and on an H100
SXM's datasheet figures; the prediction that adds the device's fixed costs to the roofline, here
(measured) and on an H100 (assumed; ``jaxrl_fdg.profiling.overheads``); the trace's breakdown of
an iteration by operation class; and each program's FLOPs, bytes, operations, achieved rates,
fractions of peak and verdict.

``--h100-record FILE`` reads an accelerator suite's record made on an H100
(``results/accelerator-*.json``) and sets its measured time per iteration beside the H100
prediction made here for the same configuration: the one check of the GPU model this machine
can make. Run on an H100, the measured time and the H100 prediction stand side by side; the
accelerator suite (``benchmarks/accelerator.py``) copies them to the top of its report.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import cli_args  # noqa: E402
from algorithms import SETTINGS, config_for  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402

MODES = ("scan", "iteration", "fragment", "step")
# Iterations per run by default: on this CPU, a few seconds of each algorithm's steady state.
ITERATIONS = {"ppo": 400, "a2c": 1000, "dqn": 1000, "pqn": 200}
H100_RECORD = Path(__file__).parent / "results" / "accelerator-nvidia-h100-80gb-hbm3.json"


def measure(algo: str, fusion: str, iterations: int) -> dict:
    """A ``--profile sync`` run's per-iteration figures and bound analysis, and a ``--profile
    trace`` run's breakdown of an iteration by operation class."""
    config = config_for(algo, iterations, fusion, seed=0)
    analysis = rl.train(config.replace(profile="sync")).summary["timing"]["bound"]
    traced = rl.train(config.replace(profile="trace")).summary["timing"]["bound"]
    return {
        "measured_iteration_s": analysis["iteration_s"],
        "roofline_here_iteration_s": analysis["roofline_iteration_s"],
        "roofline_h100_iteration_s": analysis["h100_iteration_s"],
        "predicted_here_iteration_s": traced["predicted_iteration_s"],
        "predicted_h100_iteration_s": traced["h100_predicted_iteration_s"],
        "ops_per_iteration": traced["ops_per_iteration"],
        "breakdown": traced.get("breakdown"),
        "traced_iteration_s": traced["iteration_s"],
        "peak": analysis["peak"],
        "h100": analysis["h100"],
        "overheads": traced["overheads"],
        "h100_overheads": traced["h100_overheads"],
        "programs": analysis["programs"],
    }


def h100_check(results: dict, record: Path) -> dict | None:
    """The H100 record's measured seconds per iteration beside this run's H100 prediction, for
    the runs both have (``None`` without the record)."""
    try:
        report = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    section = report.get("results", {}).get("roofline", {}).get("report") or {}
    measured = {k: v["measured_iteration_s"] for k, v in section.get("results", {}).items()}
    rows = {}
    for run, entry in results.items():
        if run in measured and entry["predicted_h100_iteration_s"]:
            rows[run] = {
                "measured_s": measured[run],
                "predicted_s": entry["predicted_h100_iteration_s"],
                "roofline_s": entry["roofline_h100_iteration_s"],
                "measured_over_predicted": measured[run] / entry["predicted_h100_iteration_s"],
            }
    recorded = report.get("recorded", {})
    return {"record": record.name, "date": recorded.get("date"), "runs": rows} if rows else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default="ppo,dqn", help="comma-separated algorithms, or all")
    parser.add_argument("--fusion", default="scan,fragment", help="comma-separated modes")
    parser.add_argument(
        "--iterations",
        type=int,
        help="iterations per run (default: per algorithm, ITERATIONS, else 40): enough that the "
        "run's start and its host boundaries weigh little in the time per iteration",
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "roofline.json"))
    parser.add_argument(
        "--h100-record",
        default=str(H100_RECORD),
        help="an accelerator suite's record made on an H100, for the check of the GPU model",
    )
    args = parser.parse_args()
    known = sorted({*SETTINGS, *rl.algorithm.registered()})
    algos = (
        known if args.algos == "all" else cli_args.comma_list(parser, "--algos", args.algos, known)
    )
    modes = cli_args.comma_list(parser, "--fusion", args.fusion, MODES)
    results = {}
    for algo in algos:
        for fusion in modes:
            n = args.iterations or ITERATIONS.get(algo, 40)
            entry = results[f"{algo}/{fusion}"] = measure(algo, fusion, n)
            print(
                f"{algo}/{fusion}: {entry['measured_iteration_s'] * 1e3:.3f} ms an iteration "
                f"measured; predicted {_ms(entry['predicted_here_iteration_s'])} ms here "
                f"(roofline {_ms(entry['roofline_here_iteration_s'])}); predicted on H100 "
                f"{_ms(entry['predicted_h100_iteration_s'])} ms (assumed costs)",
                flush=True,
            )
    iterations = {a: args.iterations or ITERATIONS.get(a, 40) for a in algos}
    config = {"algos": algos, "fusion": modes, "iterations": iterations}
    check = h100_check(results, Path(args.h100_record))
    write_report(args.out, "roofline", config, results, h100_check=check)


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3g}"


if __name__ == "__main__":
    main()

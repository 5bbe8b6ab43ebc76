"""Every algorithm's default run, as a new user starts it: ``jaxrl-fdg train --algo X`` and no
other flag, in a fresh process with an empty compilation cache. Records the final return against
the algorithm's threshold, the wall time of the whole command, run and compile seconds apart (and
compile over run: issue 18 asks that no default run compile for longer than it runs), and
env-steps/s. The docs site's benchmark pages draw the table (``benchmarks/pages.py``).

    python benchmarks/defaults.py                  # every registered algorithm
    python benchmarks/defaults.py --algos sac,td3  # a subset (the results file keeps the rest)
    python benchmarks/defaults.py --algos a2c --repeats 5  # medians of 5 cold runs

Thresholds: CartPole-v1 is solved at 475 (gymnasium's reward threshold); the bar here is 400 of
500. Pendulum-v1 has no threshold; −250 (SAC, TD3) and −300 (DDPG)
are well above a policy that does not swing up (about −1,200) and below the −150 these reach.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jaxrl_fdg as rl
from jaxrl_fdg.profiling import write_report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "defaults.json"
# The return each default run must reach within 3 minutes of run time (issue 15), by env.
THRESHOLDS = {"CartPole-v1": 400.0, "Pendulum-v1": -250.0}
ALGO_THRESHOLDS = {"ddpg": -300.0}
RUN_LIMIT_S = 180.0


def run_default(algo: str, seed: int, python: str = sys.executable) -> dict:
    """``jaxrl-fdg train --algo ALGO`` in a fresh process of ``python`` whose compilation cache
    starts empty; its summary and the command's wall."""
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as cache:
        command = [python, "-m", "jaxrl_fdg", "train", "--algo", algo]
        flags = ["--out", out, "--run-name", "run", "--no-progress", "--seed", str(seed)]
        environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
        environ["XDG_CACHE_HOME"] = cache  # the run's cache: $XDG_CACHE_HOME/jaxrl_fdg/xla
        start = time.perf_counter()
        # cwd: not the repository, whose jaxrl_fdg/ folder `-m` would import before the install
        done = subprocess.run(command + flags, capture_output=True, text=True, env=environ, cwd=out)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"{algo}: exit {done.returncode}\n{done.stderr[-2000:]}")
        summary = json.loads((Path(out) / "run" / "summary.json").read_text())
    env = summary["env"]
    threshold = ALGO_THRESHOLDS.get(algo, THRESHOLDS.get(env))
    return {
        "command": f"jaxrl-fdg train --algo {algo}",
        "env": env,
        "env_steps": summary["env_steps"],
        "final_return": summary["final_return"],
        "threshold": threshold,
        "reached": threshold is not None and summary["final_return"] >= threshold,
        "within_limit": summary["run_s"] <= RUN_LIMIT_S,
        "wall_s": wall,
        "run_s": summary["run_s"],
        "compile_s": summary["compile_s"],
        "steps_per_s": summary["steps_per_s"],
        "compile_over_run": summary["compile_s"] / summary["run_s"],
    }


def repeated(algo: str, seed: int, repeats: int) -> dict:
    """:func:`run_default` ``repeats`` times: the first run's record with the medians of the
    timed figures, and every run's (compile s, run s)."""
    runs = [run_default(algo, seed) for _ in range(repeats)]
    result = dict(runs[0])
    for key in ("wall_s", "run_s", "compile_s", "steps_per_s", "compile_over_run"):
        result[key] = statistics.median(r[key] for r in runs)
    result["runs"] = [(r["compile_s"], r["run_s"]) for r in runs]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default=",".join(rl.algorithm.registered()))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="cold runs per algorithm (medians)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    previous = json.loads(Path(args.out).read_text())["results"] if Path(args.out).exists() else {}
    results = dict(previous)
    for algo in args.algos.split(","):
        r = results[algo] = repeated(algo, args.seed, args.repeats)
        print(
            f"{algo:<6} {r['env']:<12} return {r['final_return']:8.1f} (≥ {r['threshold']:g}: "
            f"{'yes' if r['reached'] else 'NO'})  wall {r['wall_s']:.1f} s  run {r['run_s']:.1f} s"
            f"  compile {r['compile_s']:.2f} s ({r['compile_over_run']:.2f} of run)"
            f"  {r['steps_per_s']:,.0f} steps/s",
            flush=True,
        )
    config = {"seed": args.seed, "run_limit_s": RUN_LIMIT_S, "cache": "empty per run"}
    write_report(args.out, "defaults", {**config, "repeats": args.repeats}, results)


if __name__ == "__main__":
    main()

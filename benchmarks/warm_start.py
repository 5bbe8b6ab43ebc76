"""Launch to the first iteration of ``jaxrl-fdg train`` (default PPO on CartPole-v1), in fresh
processes, by what the caches hold: nothing (``cold``), JAX's compilation cache only (the
executable cache off: what every run met before it existed), and both (``executable-cache``).

    python benchmarks/warm_start.py               # writes benchmarks/results/warm_start.json
    python benchmarks/warm_start.py --repeats 2   # a quick look
    python benchmarks/warm_start.py --baseline /tmp/base-venv/bin/python   # before and after

**What is measured.** Each run is ``python -m jaxrl_fdg train --total-steps N --out DIR
--no-progress`` in a fresh process, its caches in a fresh ``XDG_CACHE_HOME``; a warm state is
made by one run of the same command before, to its end. Python writes and reads bytecode, as by
default (``time_to_result._environ``). ``start_s``: launch until the training loop started, as
``benchmarks/time_to_result.py`` measures it (the first metrics row's time, as this process sees
it appear, looked for every 5 ms, less the row's own ``wall_s``). ``compile_s``: the run's own
figure (``summary.json``), the wall time it waited for its programs. ``import_s``: a fresh
process that imports what ``train`` imports before it starts (``jaxrl_fdg.cli.common``, the
runner), less a fresh process that imports nothing. The states take turns in each repeat
(cold, JAX's cache, both), so a slower minute of the machine is shared; medians over repeats.
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

from time_to_result import Tail, _environ, watch

RESULTS = Path(__file__).parent / "results"
STATES = ("cold", "jax-cache", "executable-cache")
BASELINE = "baseline"  # --baseline: the rows of the other install
# How often the first row is looked for: a start under a second is measured to 5 ms (the time
# to a result's 50 ms would be a twentieth of it).
POLL_S = 0.005
TOTAL_STEPS = 40_960  # two metrics rows of the default PPO; the first comes after 20,480 steps


def once(state: str, budget_s: float, python: str = sys.executable) -> dict:
    """One measured run in ``state`` by ``python``'s install, after the run that fills its
    caches (none when cold)."""
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as cache:
        out = Path(out)
        env = _environ(Path(cache))
        env["JAXRL_FDG_EXECUTABLE_CACHE"] = "0" if state == "jax-cache" else "1"
        command = [python, "-m", "jaxrl_fdg", "train", "--total-steps", str(TOTAL_STEPS)]
        command += ["--out", str(out), "--no-progress", "--run-name"]
        if state != "cold":
            subprocess.run([*command, "prime"], cwd=out, env=env, check=True, capture_output=True)
        tail, seen = Tail(out / "run" / "metrics.jsonl"), {}

        def first_row(elapsed: float) -> dict | None:
            for line in tail.lines():
                seen.setdefault("first", (elapsed, json.loads(line)))
            return None  # the run goes on to its end, for its summary

        # cwd: not the repository, whose jaxrl_fdg/ folder `-m` would import before the install
        watched = watch(
            [*command, "run"], cwd=out, env=env, budget_s=budget_s, check=first_row, poll_s=POLL_S
        )
        summary = json.loads((out / "run" / "summary.json").read_text())
    elapsed, row = seen["first"]
    return {
        "start_s": elapsed - row["wall_s"],
        "compile_s": summary["compile_s"],
        "executables": summary.get("executables"),
        "stop": watched.stop,
    }


def _commit(python: str) -> str | None:
    """The commit of the repository ``python``'s install of jaxrl_fdg was made from."""
    where = subprocess.run(
        [python, "-c", "import jaxrl_fdg, os; print(os.path.dirname(jaxrl_fdg.__file__))"],
        capture_output=True, text=True, cwd=tempfile.gettempdir(), env=_environ(),
    )  # fmt: skip
    found = subprocess.run(
        ["git", "-C", where.stdout.strip(), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return found.stdout.strip() or None


def import_seconds() -> float:
    """A fresh process importing what ``train`` imports before it starts, less an empty one."""

    def wall(code: str) -> float:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code], check=True, cwd=tempfile.gettempdir(), env=_environ()
        )
        return time.perf_counter() - start

    both = [
        (wall("import jaxrl_fdg.cli.common, jaxrl_fdg.run.runner, jaxrl_fdg.cli.train"), wall(""))
        for _ in range(3)
    ]
    return statistics.median(a - b for a, b in both)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--out", default=str(RESULTS / "warm_start.json"))
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="another install's Python (an earlier commit's, say): each state is measured on "
        "it too, in the same repeats, as the rows 'baseline <state>'",
    )
    args = parser.parse_args()

    from jaxrl_fdg.profiling import write_report

    states = {state: (state, sys.executable) for state in STATES}
    for state in STATES if args.baseline else ():
        states[f"{BASELINE} {state}"] = (state, args.baseline)
    runs: dict[str, list[dict]] = {state: [] for state in states}
    imports = []
    for repeat in range(args.repeats):
        for name, (state, python) in states.items():
            runs[name].append(once(state, args.budget_s, python))
            print(f"repeat {repeat} {name}: {runs[name][-1]}", flush=True)
        imports.append(import_seconds())
    results = {
        state: {
            "start_s": statistics.median(r["start_s"] for r in measured),
            "compile_s": statistics.median(r["compile_s"] for r in measured),
            "executables": sorted({str(r["executables"]) for r in measured}),
            "runs": measured,
        }
        for state, measured in runs.items()
    }
    results["import_s"] = {"median": statistics.median(imports), "runs": imports}
    baseline = args.baseline and {"python": args.baseline, "commit": _commit(args.baseline)}
    write_report(
        args.out,
        "warm_start",
        {
            "algo": "ppo",
            "env": "CartPole-v1",
            "total_steps": TOTAL_STEPS,
            "repeats": args.repeats,
            "python": sys.executable,
            "baseline": baseline,
            "cpus": os.cpu_count(),
        },
        results,
        target="executable-cache start_s <= 1.0 s",
    )
    print("| caches | launch to first iteration s | compile s |")
    print("|---|---:|---:|")
    for state in states:
        r = results[state]
        print(f"| {state} | {r['start_s']:.2f} | {r['compile_s']:.2f} |")
    print(f"importing what train imports: {results['import_s']['median']:.2f} s")


if __name__ == "__main__":
    main()

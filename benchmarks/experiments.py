"""A shipped suite run as a user runs it (``jaxrl-fdg experiment``), its report committed.

The experiment runs in ``--work`` (run folders and checkpoints stay there); the report
(``report.md``, ``report.html``, ``report.json``, ``figures/``) and the experiment file used are
copied to ``results/experiments/<suite>/``, where the docs' Experiments page shows them. Its
wall time is added to ``report.json`` under ``"wall_s"``. Run again on a finished ``--work``
folder, it runs nothing (every cell is done) and writes the report again, keeping the wall
time the run recorded.

    python benchmarks/experiments.py --suite classic --work /tmp/classic
    python benchmarks/experiments.py --suite minatar --total-steps 500000 --work /tmp/minatar
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import tomli_w

from jaxrl_fdg.experiment import report, runner

RESULTS = Path(__file__).parent / "results" / "experiments"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", required=True)
    parser.add_argument("--work", required=True, help="the experiment's folder")
    parser.add_argument("--total-steps", type=int, help="every env's budget (default: suite's)")
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--algos", nargs="+")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()

    data: dict = {"suite": args.suite}
    if args.total_steps:
        data["total_steps"] = args.total_steps
    if args.seeds:
        data["seeds"] = args.seeds
    if args.algos:
        data["algos"] = args.algos
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    file = work.parent / f"{work.name}.toml"
    file.write_text(tomli_w.dumps(data))
    start = time.perf_counter()
    outcome = runner.run(file, work, runner.Options(jobs=args.jobs))
    wall = time.perf_counter() - start
    if not outcome.complete:
        raise SystemExit(f"not every cell finished: {outcome.states}")
    result = report.report([work])
    out = RESULTS / args.suite
    command = f"python benchmarks/experiments.py {' '.join(_argv(args))}"
    if not outcome.ran:  # every cell was done: only the report is new; keep the run's wall time
        before = json.loads((out / "report.json").read_text())
        if before.get("command") != command:
            raise SystemExit(f"{out} holds another command's results: {before.get('command')}")
        wall = before["wall_s"]
    shutil.rmtree(out, ignore_errors=True)
    (out / "figures").mkdir(parents=True)
    for name in ("report.md", "report.html"):
        shutil.copy(work / name, out / name)
    for figure in (work / "figures").iterdir():
        shutil.copy(figure, out / "figures" / figure.name)
    result["wall_s"] = wall
    result["command"] = command
    (out / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    shutil.copy(file, out / "experiment.toml")
    print(f"wrote {out} ({wall / 60:.1f} min)")


def _argv(args: argparse.Namespace) -> list[str]:
    out = ["--suite", args.suite, "--work", "DIR"]
    for flag in ("total_steps", "seeds", "jobs"):
        if getattr(args, flag):
            out += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if args.algos:
        out += ["--algos", *args.algos]
    return out


if __name__ == "__main__":
    main()

"""``jaxrl-fdg experiment FILE --out DIR``: run a grid of algorithms × environments × seeds;
``jaxrl-fdg experiment status DIR``: where each of its cells stands; and ``jaxrl-fdg report``:
the statistics of an experiment or of any run folders."""

from __future__ import annotations

import argparse

from jaxrl_fdg.errors import ConfigError


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """``experiment`` and ``report`` on the command's subparsers."""
    add_arguments(
        sub.add_parser(
            "experiment",
            help="run a grid of algorithms × environments × seeds, resumably; or `experiment "
            "status DIR`",
            description="Run an experiment: every (algorithm, environment, setting) cell of "
            "FILE's grid is one run folder in DIR/cells with its seeds trained as lanes of one "
            "program. Running the same command again skips the cells done, resumes the ones "
            "with a checkpoint and starts the rest. `jaxrl-fdg experiment status DIR` shows "
            "each cell's state. Exits 0 when every cell is done, 1 when one failed, 2 for a "
            "bad file or value (before anything runs).",
            allow_abbrev=False,
        )
    )
    add_report_arguments(
        sub.add_parser(
            "report",
            help="an experiment's (or run folders') statistics: normalised IQM, profiles, "
            "probability of improvement, curves",
            description="Write report.md, report.html, report.json and figures/: per-"
            "environment normalised scores, IQM, mean, median and optimality gap with "
            "stratified bootstrap intervals, performance profiles, probability of improvement "
            "between algorithms, sample-efficiency and per-environment curves.",
            allow_abbrev=False,
        )
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from jaxrl_fdg.experiment import runner, suites

    parser.add_argument(
        "file",
        metavar="FILE",
        help=f"the experiment file (TOML), or a suite's name ({', '.join(suites.SUITES)}: "
        "`jaxrl-fdg list` describes them); or `status DIR`",
    )
    parser.add_argument("folder", nargs="?", metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument(
        "--out", metavar="DIR", help="the experiment's folder (the same DIR again resumes it)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="cells run at once (default: one per GPU, else 1; with slurm: the job array's "
        "parallelism, default all)",
    )
    parser.add_argument(
        "--executor",
        default="local",
        help=f"where cells run: {' | '.join(runner.EXECUTORS)} (submitit ones need the slurm "
        "extra; default local)",
    )
    parser.add_argument(
        "--devices",
        metavar="LIST",
        help="local: GPU ids the cells share, one per running cell (default: "
        "CUDA_VISIBLE_DEVICES, else every GPU the driver lists; none on a CPU)",
    )
    parser.add_argument(
        "--new",
        action="store_true",
        help="cells whose definition changed since DIR ran them start over (their folders "
        "move to DIR/replaced/); without it such a change is refused",
    )
    parser.add_argument("--slurm-partition", metavar="NAME", help="slurm: the partition")
    parser.add_argument(
        "--slurm-time", type=int, metavar="MIN", help="slurm: each cell's time limit in minutes"
    )
    parser.add_argument("--slurm-gpus", type=int, metavar="N", help="slurm: GPUs per cell")
    parser.add_argument("--slurm-cpus", type=int, metavar="N", help="slurm: CPUs per cell")
    parser.add_argument(
        "--slurm-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="slurm: any other sbatch option (e.g. account=mylab, qos=high); repeatable",
    )


def run(args: argparse.Namespace) -> int:
    from jaxrl_fdg.experiment import runner

    if args.file == "status":
        if not args.folder:
            raise ConfigError("experiment status takes the experiment's folder: status DIR")
        print(status_table(runner.status(args.folder)))
        return 0
    if args.folder:
        raise ConfigError(f"unexpected argument {args.folder!r} (the folder is --out DIR)")
    if not args.out:
        raise ConfigError("experiment needs --out DIR: the folder its cells and report go in")
    slurm = {
        "partition": args.slurm_partition,
        "time": args.slurm_time,
        "gpus_per_node": args.slurm_gpus,
        "cpus_per_task": args.slurm_cpus,
        "additional": _pairs(args.slurm_option),
    }
    given = [k for k, v in slurm.items() if v]
    if given and args.executor != "slurm":
        raise ConfigError(f"--slurm-* options are for --executor slurm, not {args.executor}")
    devices = None
    if args.devices is not None:
        devices = tuple(d.strip() for d in args.devices.split(",") if d.strip())
    options = runner.Options(
        jobs=args.jobs, executor=args.executor, devices=devices, new=args.new, slurm=slurm
    )
    outcome = runner.run(args.file, args.out, options)
    if not outcome.complete:
        return 1
    print(f"all {len(outcome.states)} cells done; the report: jaxrl-fdg report {outcome.folder}")
    return 0


def _pairs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--slurm-option takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def status_table(rows: list[dict]) -> str:
    from rich.table import Table

    table = Table(title_justify="left")
    for column in ("cell", "state", "env steps", "seeds", "final return", "run s"):
        table.add_column(column, justify="left" if column in ("cell", "state") else "right")
    for row in rows:
        final = row["final_return"]
        table.add_row(
            row["cell"],
            row["state"],
            f"{row['env_steps'] or 0:,} / {row['total_steps']:,}",
            str(row["seeds"]),
            "—" if final is None else f"{final:.4g}",
            "—" if row["run_s"] is None else f"{row['run_s']:.0f}",
        )
    from collections import Counter

    from jaxrl_fdg.compare import as_text

    counts = Counter(row["state"] for row in rows)
    return as_text(table) + "\n" + ", ".join(f"{n} {state}" for state, n in counts.items())


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="PATH",
        help="an experiment folder, or run folders and folders of them",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where report.md, report.html, report.json and figures/ go (default: the "
        "experiment's folder; needed for run folders)",
    )
    parser.add_argument(
        "--metric",
        help="metrics column scored (default: eval_return where every run evaluated, else "
        "episode_return)",
    )
    parser.add_argument(
        "--normalize",
        action="append",
        default=[],
        metavar="ENV=RANDOM:REF",
        help="an environment's random and reference scores (over the suites' table and the "
        "experiment file's); repeatable",
    )


def report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from jaxrl_fdg.experiment import report as reports
    from jaxrl_fdg.experiment import report_text

    result = reports.report(
        args.runs, args.out, metric=args.metric, normalize=reports.parse_normalize(args.normalize)
    )
    out = Path(args.out or args.runs[0])
    for heading, _, header, rows in report_text.tables(result)[:1]:
        print(heading)
        print("  " + " | ".join(header))
        for row in rows:
            print("  " + " | ".join(row))
    print(f"report: {out / 'report.md'} (and report.html, report.json, figures/)")
    return 0

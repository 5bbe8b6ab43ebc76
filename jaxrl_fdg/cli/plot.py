"""``jaxrl-fdg plot``: learning curves of run folders, with a band over seeds and a panel per
environment; or, with
``--lineage``, one population-based training run's lanes."""

from __future__ import annotations

import argparse

from jaxrl_fdg import lineage, plots
from jaxrl_fdg.errors import ConfigError


def add_arguments(plot: argparse.ArgumentParser) -> None:
    plot.add_argument("runs", nargs="+", metavar="RUN", help="a run folder, or a folder of them")
    plot.add_argument(
        "--metric", default="episode_return", help="metrics column (default: episode_return)"
    )
    plot.add_argument("--x", default="step", help="column of the x axis (default: step)")
    plot.add_argument(
        "--ci",
        default="std",
        help="band over seeds: std (mean ± 1 std) | iqm (IQM, 95%% bootstrap interval)",
    )
    plot.add_argument(
        "--out",
        "--output",  # its first name, still accepted
        dest="output",
        metavar="FILE",
        help=f"image file (default: {plots.DEFAULT_OUTPUT} in the folder the runs given share: "
        "the run folder of one run, runs/ for `plot runs`)",
    )
    plot.add_argument(
        "--lineage",
        action="store_true",
        help="one population-based training run (--pbt-every): each lane's metric and "
        "hyperparameters over the run, and each copy between lanes "
        f"(default file: {lineage.DEFAULT_OUTPUT} in the run folder)",
    )


def run(args: argparse.Namespace) -> int:
    if args.lineage:
        if len(args.runs) != 1:
            raise ConfigError(f"--lineage draws one run, got {len(args.runs)}")
        path = lineage.plot_lineage(args.runs[0], args.metric, args.output)
        print(f"lineage: {path}")
        return 0
    path = plots.plot_runs(args.runs, args.metric, args.x, args.output, args.ci)
    print(f"learning curve: {path}")
    return 0

"""``jaxrl-fdg train``: train an agent, or resume a run from its folder.

Settings are layered: the algorithm's defaults, then ``--config FILE``, then the flags given. The
flags depend on the algorithm (its hyperparameters), so the parser is built once the algorithm is
known: from ``--algo``, else from the config file, else the default.
"""

from __future__ import annotations

import argparse
import math
import signal
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl_fdg import config as cfg
from jaxrl_fdg.cli import common
from jaxrl_fdg.core import algorithm as algorithms
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import signals, train
from jaxrl_fdg.run.metrics import format_summary


def parser(algo: str) -> argparse.ArgumentParser:
    """The parser of ``train`` with ``algo``'s hyperparameters."""
    spec = algorithms.get(algo)
    cfg.check_spec(spec)  # its hyperparameters' flags must not clash with the run's
    parser = argparse.ArgumentParser(
        prog="jaxrl-fdg train", description="Train an agent.", allow_abbrev=False
    )
    common.add_config_flag(parser)
    parser.add_argument(
        "--resume",
        metavar="RUN",
        help="continue the run in this folder from its latest checkpoint, with its own config; "
        "with --total-steps, to that budget (an extension: its schedules keep the horizon they "
        "ran under)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print where the time went at the end (per program, the host's shares; shown "
        "anyway with --profile sync or trace)",
    )
    common.add_run_flags(parser, spec)
    common.add_hparam_flags(parser, spec)
    return parser


def run(argv: list[str]) -> int:
    """``jaxrl-fdg train ARGV``; returns the exit status."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config")
    pre.add_argument("--algo")
    pre.add_argument("--resume")
    known, _ = pre.parse_known_args(argv)
    data: dict[str, Any] = {}
    algo = cfg.TrainConfig.algo
    if known.resume:
        if known.config:
            raise ConfigError("--resume takes the run's own config; --config cannot be given")
        known.config = str(Path(known.resume) / "config.toml")
        if not Path(known.config).is_file():
            raise ConfigError(f"{known.resume!r} is not a run folder (it has no config.toml)")
    if known.config:
        data, algo = common.read_config(known.config)
        _check_algo_flag(known, algo, data)
    args = parser(known.algo or algo).parse_args(argv)
    if args.resume and (args.out is not None or args.run_name is not None):
        raise ConfigError(
            f"--resume goes on in {args.resume!r}; --out and --run-name name a new run's folder "
            "(leave them out, or start a new run)"
        )
    verbose = args.verbose
    config = common.config_from(args, data, skip=("config", "resume", "verbose"))

    result = train(config, resume=args.resume)
    detail = verbose or config.profile in ("sync", "trace")
    print(format_summary(result.summary, detail))
    if result.run_dir is not None:
        for line in lane_lines(result.run_dir):
            print(line)
        print(f"run folder: {result.run_dir}")
    if result.summary["status"] == "interrupted":  # stopped by a signal, at a safe point
        return signals.exit_code(signal.Signals[result.summary.get("signal", "SIGINT")])
    return 0


def lane_lines(run_dir: Path) -> list[str]:
    """For a run of several lanes (seeds, a sweep, a population): each lane's final return
    summed up (the summary's is their mean), and the best lane's hyperparameters at the end
    where a population changed them."""
    from jaxrl_fdg import plots

    try:
        runs = plots.find_runs([run_dir])
    except ConfigError:
        return []
    if len(runs) < 2:
        return []
    finals = []
    for run in runs:
        values = [r.get("episode_return") for r in run.rows]
        values = [v for v in values if plots.is_number(v) and math.isfinite(v)]
        if values:
            finals.append((values[-1], run))
    if not finals:
        return []
    finals.sort(key=lambda pair: -pair[0])
    (best, best_run), (worst, worst_run) = finals[0], finals[-1]
    median = float(np.median([v for v, _ in finals]))
    lines = [
        f"final return over {len(runs)} lanes (the line above is their mean): best "
        f"{best:.1f} ({best_run.path.name}), median {median:.1f}, worst {worst:.1f} "
        f"({worst_run.path.name})"
    ]
    last = best_run.rows[-1] if best_run.rows else {}
    own = {"parent", "copied_at", "score", "seed", "started_at"}
    moved = {
        k.split("/", 1)[1]: v
        for k, v in last.items()
        if k.startswith(("pbt/", "halving/")) and k.split("/", 1)[1] not in own
    }
    if moved:
        shown = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in moved.items()
        )
        lines.append(f"the best lane's hyperparameters at the end: {shown}")
    return lines


def _check_algo_flag(known: argparse.Namespace, algo: str, data: dict[str, Any]) -> None:
    """``--algo`` beside a config that names another algorithm: a resumed run keeps its own,
    and a config's hyperparameters belong to the algorithm it names."""
    if not known.algo or known.algo == algo:
        return
    if known.resume:
        raise ConfigError(
            f"{known.resume!r} was trained with --algo {algo}; a resumed run keeps its "
            f"algorithm (leave out --algo {known.algo}, or start a new run with it)"
        )
    if data.get("hparams"):
        raise ConfigError(
            f"{known.config}: its hparams are {algo}'s, and --algo {known.algo} takes its own "
            f"(leave out --algo, or the file's hparams table)"
        )

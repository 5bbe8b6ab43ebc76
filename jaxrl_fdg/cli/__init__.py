"""The ``jaxrl-fdg`` command: ``train``, ``evaluate``, ``list``, ``graph``, ``profile``, ``plot``,
``compare``, ``check-env``, ``experiment``, ``report``.

Where a command writes is its ``--out``: the parent folder of run folders for ``train`` and
``profile``, the image file for ``plot`` and ``compare``.

Settings are layered: defaults, then ``--config FILE``, then flags given on the command line.
Bad input of any kind exits with status 2 and a one-line message, never a traceback.

This module assembles the command's parser and dispatches; each command is a module of this
package (``compare``'s is :mod:`jaxrl_fdg.compare`), and :mod:`jaxrl_fdg.cli.common` holds what
several share. ``train`` and ``graph`` build their own parsers: their flags depend on the
algorithm.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from jaxrl_fdg.run import signals

__all__ = ["main", "_RUN_FLAGS", "_env_options", "_flag"]

# Names this module exported before its commands were modules of their own; loaded on use, as
# importing them here would import JAX before the command's stop handler is in place.
_FROM_COMMON = {"_RUN_FLAGS": "RUN_FLAGS", "_env_options": "env_options", "_flag": "flag"}


def __getattr__(name: str):
    if name not in _FROM_COMMON:
        raise AttributeError(f"module 'jaxrl_fdg.cli' has no attribute {name!r}")
    from jaxrl_fdg.cli import common

    return getattr(common, _FROM_COMMON[name])


def main(argv: Sequence[str] | None = None) -> int:
    """The command, on ``argv`` (default: this process's arguments); returns the exit status.

    Run as the command itself (``argv`` not given), a command that a signal stopped at once
    (a second Ctrl-C, a signal while compiling) ends the process there, once its files are
    written: exiting normally would wait for the device work or the compiles it abandoned.

    The stop signals' handler is in place before the commands' modules (JAX and the rest) are
    imported, so that a signal in the second that takes ends the command, once they are loaded,
    as any other does: one line, ``128 + signal``."""
    as_command = argv is None
    args = list(sys.argv[1:] if argv is None else argv)
    show_traceback = "--traceback" in args
    args = [a for a in args if a != "--traceback"]
    try:
        with signals.Signals() as stop:
            signals.tie_to_parent()
            # A signal waits for the imports' end: raised inside one, numpy or a C extension
            # turns it into an ImportError, or aborts the process.
            with stop.critical():
                from jaxrl_fdg.cli.common import exit_status

            return exit_status(lambda: _dispatch(args), as_command, show_traceback)
    except KeyboardInterrupt as e:  # while the modules were imported: nothing had started
        return signals.interrupted(e, as_command)


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["train"]:  # the command that starts most: it imports no other command's
        from jaxrl_fdg.cli import train

        return train.run(argv[1:])
    if argv[:1] == ["graph"]:
        from jaxrl_fdg.cli import graph

        return graph.run(argv[1:])
    from jaxrl_fdg import compare
    from jaxrl_fdg.cli import check_env, evaluate, experiment, listing, plot, profile

    args = _parser().parse_args(argv)
    commands = {
        "list": lambda: listing.run(),
        "profile": lambda: profile.run(args),
        "plot": lambda: plot.run(args),
        "evaluate": lambda: evaluate.run(args),
        "compare": lambda: compare.run(args),
        "check-env": lambda: check_env.run(args),
        "experiment": lambda: experiment.run(args),
        "report": lambda: experiment.report(args),
    }
    return commands[args.command]()


def _parser() -> argparse.ArgumentParser:
    from jaxrl_fdg import compare
    from jaxrl_fdg.cli import check_env, evaluate, experiment, plot, profile

    parser = argparse.ArgumentParser(
        prog="jaxrl-fdg",
        description="Reinforcement learning in JAX as fragmented dataflow graphs.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="an error raised in your own algorithm or environment code shows its whole "
        "traceback (by default: one line naming the file, line and function; any command)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # train and graph parse their own arguments (jaxrl_fdg.cli.train, jaxrl_fdg.cli.graph).
    sub.add_parser("train", help="train an agent", add_help=False)
    sub.add_parser("list", help="list algorithms, environments, placements and fusion modes")
    profile.add_arguments(
        sub.add_parser("profile", help="where the time goes, under several fusion modes")
    )
    sub.add_parser(
        "graph",
        help="print an algorithm's dataflow graph, its schedule and how often each node runs",
        add_help=False,
    )
    plot.add_arguments(
        sub.add_parser(
            "plot",
            help="learning curves of run folders, with a band over seeds",
            allow_abbrev=False,
        )
    )
    compare.add_arguments(
        sub.add_parser(
            "compare",
            help="groups of runs side by side: IQM, mean, median with bootstrap intervals",
            allow_abbrev=False,
        )
    )
    evaluate.add_arguments(
        sub.add_parser("evaluate", help="evaluate a run's checkpoint with its deterministic policy")
    )
    check_env.add_arguments(
        sub.add_parser(
            "check-env",
            help="check an environment against the framework's contracts",
            description="Step an environment through the framework's contracts: observations "
            "against their space, rewards and flags, NaNs, determinism, jit and vmap, the "
            "auto-reset and time limit, the action mask and info. Exits 0 where every check "
            "passes, 1 where a contract is broken, 2 for a bad name or value.",
            allow_abbrev=False,
        )
    )
    experiment.add_parsers(sub)
    return parser

"""The command line's help, as the parser prints it: ``jaxrl-fdg <command> --help``.

The docs build puts each command's help into the CLI reference page, so the page is the parser's
own text and cannot drift from it; a quick command's output (``jaxrl-fdg graph ppo``) goes into a
page the same way (:func:`output`).
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex

COMMANDS = ("train", "evaluate", "list", "graph", "profile", "plot", "compare", "check-env")
WIDTH = 100


def help_text(*argv: str) -> str:
    """What ``jaxrl-fdg *argv`` prints (argparse's help, at a fixed width)."""
    from jaxrl_fdg import cli

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            try:
                code = cli.main(list(argv))
            except SystemExit as e:  # argparse's --help exits 0
                code = e.code
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    if code not in (0, None):
        raise RuntimeError(f"jaxrl-fdg {' '.join(argv)} exited {code}")
    return out.getvalue().rstrip()


def output(args: str) -> str:
    """What ``jaxrl-fdg ARGS`` prints, in a text block that shows the command."""
    argv = shlex.split(args)
    return f"```text\n$ {shlex.join(['jaxrl-fdg', *argv])}\n{help_text(*argv)}\n```"


def section(command: str) -> str:
    argv = ("--help",) if command == "" else (command, "--help")
    shown = " ".join(("jaxrl-fdg", *argv))
    return f"```text\n$ {shown}\n{help_text(*argv)}\n```"

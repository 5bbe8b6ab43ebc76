"""Exceptions the library raises on purpose, and its one-line warnings."""

import sys


class ConfigError(ValueError):
    """A configuration value is invalid. Raised before anything is compiled.

    The message names the offending value and, where there is a finite set, the valid choices.
    The CLI turns it into a one-line error and exit status 2.
    """


class GraphError(ConfigError):
    """Fragments that do not form a graph the loop can run: a bad declaration, an input edge
    nothing feeds, a cycle, an order the edges leave ambiguous. Raised when the graph is built,
    before anything is traced; the message names the fragments and edges involved."""


class SpaceMismatch(ConfigError):
    """An algorithm that cannot act in an environment's action space (DQN on a Box, SAC on a
    Discrete): the pair does not fit, whatever the other settings. An experiment's grid leaves
    such a cell out and says so, where any other :class:`ConfigError` stops it."""


class OutOfMemory(RuntimeError):
    """A device ran out of memory while a run trained; the message names the settings to
    reduce. (Where it can be predicted, before the run trains, it is a :class:`ConfigError`.)"""


def warn(message: str) -> None:
    """One line on stderr, ``jaxrl-fdg: warning: <message>``: something the user should know
    that does not stop the command."""
    print(f"jaxrl-fdg: warning: {one_line(message)}", file=sys.stderr, flush=True)


def one_line(text: str) -> str:
    """``text`` as one printable line: characters that are not printable (a newline, a record
    separator in a name read from a file) written as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def error_line(error: BaseException) -> str:
    """``ValueError: <its first line, at most 200 characters>``, or the type alone for an error
    without a message: an error from a library said in one line."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:200]}" if lines else type(error).__name__

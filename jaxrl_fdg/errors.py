"""Exceptions the library raises on purpose."""


class ConfigError(ValueError):
    """A configuration value is invalid. Raised before anything is compiled.

    The message names the offending value and, where there is a finite set, the valid choices.
    The CLI turns it into a one-line error and exit status 2.
    """


class GraphError(ConfigError):
    """Fragments that do not form a graph the loop can run: a bad declaration, an input edge
    nothing feeds, a cycle, an order the edges leave ambiguous. Raised when the graph is built,
    before anything is traced; the message names the fragments and edges involved."""

"""Exceptions the library raises on purpose."""


class ConfigError(ValueError):
    """A configuration value is invalid. Raised before anything is compiled.

    The message names the offending value and, where there is a finite set, the valid choices.
    The CLI turns it into a one-line error and exit status 2.
    """

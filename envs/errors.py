"""The errors ``envs.make`` raises for a name it cannot build; both are ``ValueError``s.

Callers that only want to report a bad ``env`` setting catch ``ValueError``; the two subclasses
tell a misspelt name (:class:`UnknownEnvironmentError`) from a missing optional package
(:class:`MissingDependencyError`). Every message is one line.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UnknownEnvironmentError(ValueError):
    """An environment name that is not registered, or an id an adapter does not know."""


class MissingDependencyError(ValueError):
    """An environment needs an optional package that is not installed (or does not import)."""


def unknown(what: str, name: str, choices: Iterable[str], listed: str = "choose one of") -> str:
    """One-line message for an unknown ``name``: close matches first, then every choice.

    >>> unknown("gymnax environment", "CartPol-v1", ["CartPole-v1", "Acrobot-v1"])
    "unknown gymnax environment 'CartPol-v1'; did you mean 'CartPole-v1'? (choose one of ...)"
    """
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return f"unknown {what} {name!r}{hint} ({listed}: {', '.join(choices)})"


class EnvironmentContractError(ValueError):
    """An environment breaks what it declares: an observation unlike its observation space, an
    info of changing shape. The message names the part and what was expected, in one line."""

"""Argument helpers shared by the benchmark scripts."""

from __future__ import annotations

import argparse
from collections.abc import Iterable


def comma_list(
    parser: argparse.ArgumentParser, flag: str, value: str, choices: Iterable[str]
) -> list[str]:
    """The names in the comma-separated ``value`` of ``flag``, in order; a name outside
    ``choices`` ends the script through ``parser.error`` (exit 2), naming the valid ones."""
    choices = list(choices)
    names = [name for name in value.split(",") if name]
    unknown = sorted(set(names) - set(choices))
    if unknown:
        parser.error(f"{flag}: unknown {', '.join(unknown)}; choose from {', '.join(choices)}")
    return names

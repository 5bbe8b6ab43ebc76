"""What orbax and tensorstore print on a failure the run reports once itself: their loggers'
tracebacks of each failing file, and the reports their threads make to an event loop that
orbax has closed already."""

from __future__ import annotations

import contextlib
import logging
import sys


def drop_closed_loop_reports() -> None:
    """Once per process: tensorstore's threads finish the I/O of a checkpoint write that failed
    (a full disk) after orbax closed the asyncio loop they report to, and each report fails with
    ``RuntimeError: Event loop is closed``, which C++ prints through ``sys.excepthook`` or
    ``sys.unraisablehook``, up to
    dozens of tracebacks after the one line that says the disk is full. Those, and only those,
    are dropped."""
    previous = sys.excepthook
    if getattr(previous, "_drops_closed_loop", False):
        return

    def hook(kind, value, traceback_):
        if kind is RuntimeError and str(value) == "Event loop is closed":
            return
        previous(kind, value, traceback_)

    hook._drops_closed_loop = True  # type: ignore[attr-defined]
    sys.excepthook = hook
    unraisable = sys.unraisablehook

    def unraisable_hook(report):
        if report.exc_type is RuntimeError and str(report.exc_value) == "Event loop is closed":
            return
        unraisable(report)

    sys.unraisablehook = unraisable_hook


@contextlib.contextmanager
def orbax_logs():
    """orbax logs (through absl and asyncio) each file it fails to read or write, with a
    traceback; the caller reports the failure once."""
    loggers = [logging.getLogger(name) for name in ("absl", "asyncio")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)

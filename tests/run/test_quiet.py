"""``jaxrl_fdg.run.quiet``: the closed-loop reports of tensorstore's threads are dropped, and
nothing else; orbax's loggers are quiet inside ``orbax_logs`` and as they were after it."""

import logging
import sys
import types

from jaxrl_fdg.run import quiet


def test_only_the_closed_loop_reports_are_dropped(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, value, tb: seen.append(("hook", value)))
    monkeypatch.setattr(sys, "unraisablehook", lambda report: seen.append(("raw", report)))
    quiet.drop_closed_loop_reports()
    quiet.drop_closed_loop_reports()  # once per process: a second call wraps nothing again
    closed, other = RuntimeError("Event loop is closed"), RuntimeError("disk on fire")
    sys.excepthook(RuntimeError, closed, None)
    sys.excepthook(RuntimeError, other, None)
    report = types.SimpleNamespace(exc_type=RuntimeError, exc_value=closed)
    sys.unraisablehook(report)
    kept = types.SimpleNamespace(exc_type=ValueError, exc_value=ValueError("x"))
    sys.unraisablehook(kept)
    assert seen == [("hook", other), ("raw", kept)]


def test_orbax_logs_are_quiet_inside_and_restored_after():
    absl = logging.getLogger("absl")
    before = absl.level
    with quiet.orbax_logs():
        assert absl.level == logging.CRITICAL
    assert absl.level == before

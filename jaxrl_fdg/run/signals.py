"""Stop signals: SIGINT (Ctrl-C), SIGTERM (a scheduler, ``kill``) and SIGHUP (a closed terminal).

While a run starts (resolving, making its folder, compiling) there is nothing to save, so a stop
signal raises at once: :class:`KeyboardInterrupt` for SIGINT, :class:`Interrupted` for the
others, which the run turns into a summary that says ``interrupted``. Once it trains, the first
signal asks it to stop at the next safe point, within seconds (``Session``), with a checkpoint;
a second one raises at once. Either way the exit status is ``128 + signal``, as a shell reports
a process a signal ended.

A signal is also remembered: one raised where Python can only print and drop it (a garbage
collector callback, a finalizer) still stops the run, at :meth:`Signals.check`.

Python runs a signal's handler only in the main thread and only between bytecodes, so every
wait of the run's main thread for the device is one that a signal can cut short
(``profiling.timers.block_until_ready``); what ``critical`` guards (a metrics row, the summary)
finishes first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []  # every stop signal a handler here saw, in order


def received() -> int:
    """How many stop signals the handlers here have seen so far: a mark for
    :func:`received_since`."""
    return len(_received)


def received_since(mark: int) -> int | None:
    """The first stop signal seen since ``mark`` (:func:`received`), or ``None``. A command that
    runs several runs asks this after each one: a signal a run absorbed (it arrived while the
    run wrote its summary, so the run completed) still means the user asked to stop."""
    return _received[mark] if len(_received) > mark else None


class Interrupted(KeyboardInterrupt):
    """A stop signal other than SIGINT, raised where the run stops at once."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(signum: int) -> int:
    """What a shell reports for a process that ``signum`` ended: ``128 + signum``."""
    return 128 + signum


def interrupted(error: KeyboardInterrupt, as_command: bool) -> int:
    """Say that a stop signal ended the command, in one line; its exit status. Run as the
    command itself (``as_command``), end the process here, once its output is out: exiting
    normally would wait for the device work or the compiles the command abandoned."""
    signum = signal_of(error)
    print(f"jaxrl-fdg: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
    if as_command:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code(signum))
    return exit_code(signum)


def raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signum)


def signal_of(error: BaseException) -> int:
    """The signal a :class:`KeyboardInterrupt` stands for."""
    return getattr(error, "signum", signal.SIGINT)


class Signals:
    """The stop signals' handler while a run is active; restores the previous handlers on exit.

    At first a signal raises at once (start-up: nothing to save). Inside :meth:`requesting`, the
    first one sets :attr:`requested` and calls ``on_request``, and a second raises. Inside
    :meth:`absorbing` (the run's last writes) signals are only noted: the run is ending anyway.
    Inside :meth:`critical` a signal that would raise does so at the section's end."""

    def __init__(self):
        self.requested = False
        self.on_request: Any = None
        self._mode = "raise"
        self._critical = 0
        self._deferred: int | None = None
        self._raised: int | None = None  # a signal raised for, which something may swallow
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, kind, *exc) -> bool:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
        if kind is None:
            self.check()
        return False

    def _handle(self, signum: int, frame: Any) -> None:
        del frame
        _received.append(signum)
        if self._mode == "absorb":
            return
        if self._mode == "request" and not self.requested:
            self.requested = True
            if self.on_request is not None:
                self.on_request(signum)
            return
        if self._critical:  # raised when the section is done
            self._deferred = signum
            return
        self._raised = signum
        raise_for(signum)

    def check(self) -> None:
        """Raise again for a signal raised for before (which something may have swallowed)."""
        if self._raised is not None:
            raise_for(self._raised)

    @contextlib.contextmanager
    def requesting(self, on_request: Any = None):
        """From here on, the first signal is a request to stop at the next safe point."""
        self.check()
        yield from self._in("request", on_request)

    @contextlib.contextmanager
    def absorbing(self):
        """A run's last writes (its summary): a signal changes nothing, as the run is ending."""
        yield from self._in("absorb", self.on_request)

    def _in(self, mode: str, on_request: Any):
        before = self._mode, self.on_request
        self._mode, self.on_request = mode, on_request
        try:
            yield self
        finally:
            self._mode, self.on_request = before

    @contextlib.contextmanager
    def critical(self):
        """A section that a signal does not cut short: one that arrives raises at its end."""
        self._critical += 1
        try:
            yield
        finally:
            self._critical -= 1
            if not self._critical and self._deferred is not None:
                signum, self._deferred = self._deferred, None
                self._raised = signum
                raise_for(signum)


PARENT_VARIABLE = "JAXRL_FDG_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def tie_to_parent() -> None:
    """Where ``JAXRL_FDG_PARENT_PID`` names this process's parent (an experiment's cell, Linux
    only): receive SIGTERM when that parent dies, even by ``kill -9``, and so stop at the next
    safe point with a checkpoint. A parent already gone by now ends this process at once."""
    parent = os.environ.pop(PARENT_VARIABLE, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if str(os.getppid()) != parent:
        raise_for(signal.SIGTERM)


def stop_message(signum: int) -> None:
    name = signal.Signals(signum).name
    print(
        f"\njaxrl-fdg: {name}: stopping within seconds, at the next safe point, with a "
        f"checkpoint ({name} again to stop now)",
        file=sys.stderr,
        flush=True,
    )

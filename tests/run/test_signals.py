"""Stop signals (``jaxrl_fdg.run.signals``), sent to this process: at start-up a signal raises
at once; while training the first one is a request and a second raises; the run's last writes
absorb them; a critical section finishes first; a signal something swallowed still stops the
run; the handlers found are put back. (Signals at every stage of a whole run:
tests/faults/test_signals.py.)"""

import os
import signal

import pytest

from jaxrl_fdg.run.signals import (
    Interrupted,
    Signals,
    exit_code,
    raise_for,
    signal_of,
    stop_message,
)


def _send(signum: int) -> None:
    os.kill(os.getpid(), signum)  # Python runs the handler before the next bytecode


def test_each_signal_raises_what_stands_for_it_and_exits_with_128_plus_it():
    with pytest.raises(KeyboardInterrupt) as sigint:
        raise_for(signal.SIGINT)
    assert type(sigint.value) is KeyboardInterrupt and signal_of(sigint.value) == signal.SIGINT
    with pytest.raises(Interrupted, match="SIGTERM") as sigterm:
        raise_for(signal.SIGTERM)
    assert signal_of(sigterm.value) == signal.SIGTERM
    assert exit_code(signal.SIGTERM) == 128 + 15


def test_at_start_up_a_signal_raises_at_once_and_the_handlers_are_put_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted), Signals():
        _send(signal.SIGTERM)
        pytest.fail("the signal did not raise")
    assert signal.getsignal(signal.SIGTERM) is before


def test_while_requesting_the_first_signal_asks_and_a_second_raises():
    asked = []
    with pytest.raises(Interrupted, match="SIGHUP"), Signals() as signals:
        with signals.requesting(asked.append):
            _send(signal.SIGHUP)
            assert signals.requested and asked == [signal.SIGHUP]
            _send(signal.SIGHUP)
            pytest.fail("the second signal did not raise")
    assert asked == [signal.SIGHUP]


def test_the_last_writes_absorb_signals():
    with Signals() as signals, signals.absorbing():
        _send(signal.SIGTERM)
        _send(signal.SIGTERM)
    assert not signals.requested


def test_a_critical_section_finishes_before_its_signal_raises():
    done = []
    with pytest.raises(Interrupted), Signals() as signals:
        with signals.critical():
            _send(signal.SIGTERM)
            done.append("row written")
    assert done == ["row written"]


def test_a_swallowed_signal_still_stops_the_run():
    with pytest.raises(KeyboardInterrupt), Signals() as signals:
        try:
            _send(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # as a garbage-collector callback would: printed and dropped
        with pytest.raises(KeyboardInterrupt):
            signals.check()
        with pytest.raises(KeyboardInterrupt), signals.requesting():
            pass
        # ...and leaving the block without an error checks once more (the outer raises).


def test_the_stop_message_names_the_signal(capsys):
    stop_message(signal.SIGTERM)
    assert capsys.readouterr().err == (
        "\njaxrl-fdg: SIGTERM: stopping within seconds, at the next safe point, with a checkpoint "
        "(SIGTERM again to stop now)\n"
    )

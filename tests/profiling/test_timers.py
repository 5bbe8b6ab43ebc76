"""Known answers for the host timers, the compile listener, sync mode and overhead correction."""

import time

import jax
import jax.numpy as jnp
import pytest

from jaxrl_fdg import profiling
from jaxrl_fdg.profiling import Timings


def test_host_callback_that_sleeps_20ms_lands_in_host_time():
    @profiling.scope("callback")
    def host_callback():
        time.sleep(0.020)

    timings = Timings("host")
    with timings.scope("outer"):
        host_callback()
    stats = timings.scopes["callback"]
    # time.sleep guarantees at least the requested time; 18 ms leaves 2 ms for clock granularity.
    assert stats.host >= 0.018
    assert stats.wait == 0.0 and stats.compile == 0.0
    outer = timings.scopes["outer"]
    assert outer.wall >= stats.wall and outer.exclusive < 0.002  # nested time is not exclusive


def test_compile_lands_in_compile_time_not_host_or_device():
    timings = Timings("host")

    @jax.jit
    def fresh(x):
        return jnp.sin(x) * 3.0 + jnp.cos(x)  # a program this process has never compiled

    x = jnp.arange(17.0)
    with timings.scope("first"):
        timings.wait(fresh(x))
    with timings.scope("second"):
        timings.wait(fresh(x))
    first, second = timings.scopes["first"], timings.scopes["second"]
    assert first.compiles == 1 and first.compile > 0.0
    assert first.compile <= first.wall
    assert first.host <= first.wall - first.compile + 1e-9  # compile is not counted as host
    assert second.compiles == 0 and second.compile == 0.0


def test_sync_mode_charges_device_time_to_the_scope():
    timings = Timings("sync")
    big = jnp.ones((768, 768)) * 1e-3

    @jax.jit
    def work(x):
        for _ in range(8):
            x = jnp.tanh(x @ x)
        return x

    timings.wait(work(big))  # compile outside any scope
    with timings.scope("work"):
        out = work(big)
        timings.wait(out)
    stats = timings.scopes["work"]
    # Dispatch returns at once; the 8 matmuls of 768² (~7 GFLOP) are spent waiting.
    assert stats.wait > 5 * stats.host


def test_off_mode_records_nothing_but_always_scopes():
    timings = Timings("off")
    with timings.scope("program"):
        pass
    with timings.scope("compile:program", always=True):
        pass
    assert list(timings.scopes) == ["compile:program"]


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown profile mode 'fast'.*off, host, sync, trace"):
        Timings("fast")


def _empty_scopes(n: int) -> Timings:
    """Timings of one ``outer`` scope that did nothing but open and close ``n`` empty ones."""
    timings = Timings("host")
    with timings.scope("outer"):
        for _ in range(n):
            with timings.scope("inner"):
                pass
    return timings


def test_correction_takes_the_calibrated_cost_of_each_nested_event_out():
    timings = _empty_scopes(10)
    outer = timings.scopes["outer"]
    assert outer.events == 10 and timings.scopes["inner"].events == 0
    assert profiling.corrected(outer, 0.0) == outer.wall
    assert profiling.corrected(outer, outer.wall / 20) == pytest.approx(outer.wall / 2)
    assert profiling.corrected(outer, outer.wall) == 0.0  # never negative
    per_event = profiling.scope_overhead("host", samples=200)
    assert 0.0 < per_event < 50e-6  # a scope is a few microseconds of Python, not more

"""Compiling every program at once from the initial state's shapes (``Plan.start``) builds the
same programs as compiling them one by one for the computed state, and the run's compile time
counts overlapping compiles once."""

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.policies import compiling
from jaxrl_fdg.profiling import Timings, summarize
from jaxrl_fdg.profiling.timers import COMPILE_WAIT
from jaxrl_fdg.run.evaluation import evaluation_function


@pytest.fixture
def config(tiny):
    """The suite's tiny run, with evaluation: a program beside the plan's own."""
    return tiny.replace(eval_every=16, eval_episodes=2)


def _plan(config, mode: str):
    resolved = resolve(config.replace(fusion=mode))
    loop = rl.build_loop(resolved)
    run, keys = evaluation_function(resolved, loop)
    extra = {"evaluate": (run, lambda state: (state.fragments, keys(0)))}
    return rl.make_plan(mode, loop, Timings("host"), chunk=2), extra, keys


def _advance(plan, state, keys):
    state, pending = plan.advance(state, 2)
    metrics = plan.collect(pending)
    evaluation = jax.device_get(plan.call("evaluate", state.fragments, keys(2)))
    return jax.device_get(state.fragments), metrics, evaluation


@pytest.mark.parametrize("mode", ["scan", "step"])
def test_compiled_together_equals_compiled_one_by_one(config, mode):
    together, extra, keys = _plan(config, mode)
    state = together.start(jax.random.key(3), extra)
    one_by_one, extra, _ = _plan(config, mode)
    reference = one_by_one.init(jax.random.key(3))
    one_by_one.compile(reference, extra)
    a, b = _advance(together, state, keys), _advance(one_by_one, reference, keys)
    testing.assert_same_bits(a, b)
    assert set(together.compiled) == set(one_by_one.compiled) >= {"init", "evaluate"}
    # Each program's own compile time is kept; the run's compile time is what it waited.
    scopes = together.timings.scopes
    programs = {name for name in scopes if name.startswith("compile:")}
    assert programs == {f"compile:{name}" for name in together.compiled}
    assert set(scopes["compile"].children) == programs
    summary = summarize(together.timings, 1.0)
    waited = scopes[COMPILE_WAIT].wall if COMPILE_WAIT in scopes else 0.0
    assert summary["compile_s"] == pytest.approx(scopes["compile"].wall + waited)
    assert summary["programs"]["init"]["compile_s"] > 0
    assert not {"compile", COMPILE_WAIT} & set(summary["programs"])


def test_train_compiles_at_once_and_still_reports_every_program(config):
    timing = rl.train(config).summary["timing"]
    assert {"init", "scan", "evaluate"} <= set(timing["programs"])
    assert all(timing["programs"][p]["compile_s"] > 0 for p in ("init", "scan", "evaluate"))
    assert timing["compile_s"] > 0


def test_record_charges_time_measured_elsewhere_to_a_scope():
    timings = Timings("off")  # compile records are kept in every mode
    with timings.scope("compile", always=True):
        timings.record("compile:a", 2.0)  # part of the open scope
    timings.record("compile:b", 3.0, within="compile")  # part of a named one
    assert timings.scopes["compile:a"].wall == 2.0 and timings.scopes["compile:b"].calls == 1
    assert timings.scopes["compile"].children == {"compile:a": 1, "compile:b": 1}
    assert timings.scopes["compile"].exclusive == timings.scopes["compile"].wall
    summary = summarize(timings, 1.0)
    assert summary["compile_s"] == timings.scopes["compile"].wall  # a, b overlapped it
    assert summary["programs"]["b"]["compile_s"] == 3.0


def test_compile_options_this_jaxlib_does_not_know_are_left_out(monkeypatch):
    # XLA adds and retires debug options between releases: RUN_ONCE_OPTIONS must not stop a
    # newer or older jaxlib from compiling init.
    monkeypatch.setattr(compiling, "_unknown_options", set())
    lowered = jax.jit(lambda x: x * 2.0).lower(np.ones(3, np.float32))
    options = {**compiling.RUN_ONCE_OPTIONS, "xla_option_of_no_release": True}
    compiled = compiling.compile_with(lowered, options)
    np.testing.assert_array_equal(compiled(np.ones(3, np.float32)), [2.0, 2.0, 2.0])
    assert compiling._unknown_options == {"xla_option_of_no_release"}
    # A known option with a bad value is the caller's error, not left out.
    with pytest.raises(jax.errors.JaxRuntimeError, match="xla_backend_optimization_level"):
        compiling.compile_with(lowered, {"xla_backend_optimization_level": "fast"})

"""Operations by class, counted from a program's text and from a trace; the overhead model and
the breakdown of an iteration built on them."""

# ruff: noqa: E501  (HLO text keeps its long lines)

import jax
import jax.numpy as jnp
import pytest

from jaxrl_fdg.profiling import bound, ops, overheads, trace

HLO = """HloModule jit_f, entry_computation_layout={()->f32[]}

%fused_dot (p0: f32[4,4], p1: f32[4,4]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  %p1 = f32[4,4]{1,0} parameter(1)
  %d = f32[4,4]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = f32[4,4]{1,0} tanh(%d)
}

%fused_move (p0: f32[4,4]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  ROOT %tr = f32[4,4]{1,0} transpose(%p0), dimensions={1,0}
}

%body (p: (s32[], f32[4,4])) -> (s32[], f32[4,4]) {
  %m = f32[4,4]{1,0} fusion(%x, %x), kind=kCustom, calls=%fused_dot
  %u = u32[4]{0} xor(%k, %k), metadata={op_name="jit(f)/while/body/jit(random_bits)/xor"}
  %s = f32[4,4]{1,0} dynamic-update-slice(%b, %m, %i, %i)
  ROOT %t = (s32[], f32[4,4]{1,0}) tuple(%i, %m)
}

%cond (p: (s32[], f32[4,4])) -> pred[] {
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%reset (p: f32[4,4]) -> f32[4,4] {
  %r = f32[4,4]{1,0} reduce(%p, %z), dimensions={0}, to_apply=%add
  ROOT %e = f32[4,4]{1,0} exponential(%r)
}

%keep (p: f32[4,4]) -> f32[4,4] {
  ROOT %c = f32[4,4]{1,0} copy(%p)
}

ENTRY %main () -> f32[] {
  %w = (s32[], f32[4,4]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"5"}}
  %k = f32[4,4]{1,0} conditional(%pred, %a, %a), branch_computations={%reset, %keep}
  %l = f32[4,4]{1,0} fusion(%a), kind=kLoop, calls=%fused_move
  %g = f32[4,4]{1,0} get-tuple-element(%w), index=1
  ROOT %o = f32[4,4]{1,0} add(%l, %g)
}
"""


def test_each_instruction_falls_in_its_class():
    _, found = trace.index_program(HLO)
    classes = {name: found[name].op_class for name in ("m", "u", "s", "r", "c", "l", "o", "lt")}
    assert classes == {
        "m": "matmul",  # a fusion holding a dot
        "u": "rng",  # integer arithmetic traced under random_bits
        "s": "buffer read/write",
        "r": "reduce/sort",
        "c": "copy/layout",
        "l": "copy/layout",  # a fusion of nothing but a transpose
        "o": "elementwise",
        "lt": "elementwise",
    }
    assert found["w"].op_class is None and found["k"].op_class is None  # control flow
    assert found["g"].op_class is None  # no work


def test_executed_counts_loop_bodies_by_trip_count_and_the_larger_branch():
    counts = ops.executed(HLO)
    # The loop: 5 trips of (matmul, rng, buffer write) and of its condition's compare; the
    # conditional's larger branch (reduce, exponential); the entry's fusion and add.
    assert counts == {
        "matmul": 5,
        "rng": 5,
        "buffer read/write": 5,
        "elementwise": 5 + 1 + 1,
        "reduce/sort": 1,
        "copy/layout": 1,
    }


def test_the_count_from_the_text_is_what_a_trace_sees_executed():
    """The loop's operations, from the text and from the trace."""

    def program(x):
        return jax.lax.fori_loop(0, 7, lambda _, h: jnp.tanh(jnp.sort(h) @ h), x)

    compiled = jax.jit(program).lower(jnp.ones((8, 8))).compile()
    compiled(jnp.ones((8, 8))).block_until_ready()
    with trace.capture() as events:
        compiled(jnp.ones((8, 8))).block_until_ready()
    result, _ = trace.attribute(events, [compiled.as_text()], [])
    counted = ops.executed(compiled.as_text())
    assert counted["matmul"] == result.class_ops["matmul"] == 7  # one a trip
    assert counted["copy/layout"] == result.class_ops["copy/layout"]  # the carry's, once
    assert counted["reduce/sort"] == 7  # XLA:CPU's trace shows each sort as two events


def test_the_model_adds_floors_and_launches_to_the_roofline():
    costs = overheads.Overheads("dev", launch_s=10e-6, op_s=1e-6, tracer_s=0.0, source="test")
    assert overheads.predicted_s(1e-3, 500, costs) == pytest.approx(1e-3 + 500e-6 + 10e-6)
    assert overheads.predicted_s(0.0, 0, costs, launches=0.25) == pytest.approx(2.5e-6)


def test_a_devices_overheads_are_measured_once_and_cached(tmp_path, monkeypatch):
    calls = []

    def measure(device):
        calls.append(device.platform)
        return {"launch_s": 5e-6, "op_s": 5e-8, "tracer_s": 2e-7}

    monkeypatch.setattr(overheads, "measure", measure)
    first = overheads.device_overheads(cache=tmp_path / "overheads.json")
    second = overheads.device_overheads(cache=tmp_path / "overheads.json")
    assert calls == ["cpu"] and first == second
    assert first.op_s == 5e-8 and first.source.startswith("measured ")


def test_inside_a_profiler_session_of_the_callers_the_tracer_cost_waits_for_later(monkeypatch):
    def busy():  # what jax.profiler says when a session is open already
        raise RuntimeError("Only one profile may be run at a time.")

    monkeypatch.setattr(trace, "capture", busy)
    measured = overheads.measure()
    assert "tracer_s" not in measured and measured["op_s"] > 0


def test_the_measured_overheads_are_positive_and_small():
    measured = overheads.measure()
    assert 0 < measured["launch_s"] < 1e-2
    assert 0 < measured["op_s"] < 1e-4
    assert measured["tracer_s"] >= 0


def test_the_breakdown_shares_the_measured_iteration_among_classes():
    window = trace.Attribution(
        classes={"matmul": 3e-3, "elementwise": 1e-3},
        class_ops={"matmul": 200, "elementwise": 600},
    )
    costs = overheads.Overheads("dev", launch_s=0.0, op_s=1e-6, tracer_s=0.0, source="test")
    rows = bound.breakdown(window, 2, iteration_s=2e-3, dispatch_s=0.1e-3, overheads=costs)
    # 400 operations an iteration cost 0.4 ms of floors; 1.5 ms of work is shared 3 : 1.
    assert rows["operation floors"] == {"s": pytest.approx(0.4e-3), "ops": 400}
    assert rows["matmul"]["s"] == pytest.approx(1.125e-3) and rows["matmul"]["ops"] == 100
    assert rows["elementwise"]["s"] == pytest.approx(0.375e-3)
    assert rows["host dispatch"]["s"] == pytest.approx(0.1e-3)
    assert sum(row["s"] for row in rows.values()) == pytest.approx(2e-3)

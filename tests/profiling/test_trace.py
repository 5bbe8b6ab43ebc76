"""Device time inside one compiled program, split by named scope through a profiler trace."""

import jax
import jax.numpy as jnp
import pytest

from jaxrl_fdg.profiling import trace

HLO = """HloModule jit_f, entry_computation_layout={()->f32[]}

%body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %a = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %x), metadata={op_name="jit(f)/while/body/learner/add"}
  ROOT %t = (s32[], f32[4]{0}) tuple(s32[] %i, f32[4]{0} %a)
}

ENTRY %main () -> f32[] {
  %w = (s32[], f32[4]{0}) while((s32[], f32[4]{0}) %init), condition=%cond, body=%body
  %m = f32[4]{0} multiply(f32[4]{0} %y, f32[4]{0} %y), metadata={op_name="jit(f)/actor/mul"}
  %c = f32[4]{0} copy(f32[4]{0} %m)
}
"""


def test_index_program_reads_opcodes_and_scopes():
    module, ops = trace.index_program(HLO)
    assert module == "jit_f"
    assert ops["w"].opcode == "while"  # a tuple-shaped result does not confuse the parser
    assert ops["a"].op_name == "jit(f)/while/body/learner/add"
    assert ops["c"].op_name == ""


def test_attribute_counts_each_op_once_and_skips_control_flow():
    def event(op, ts, dur):
        return {"ph": "X", "ts": ts, "dur": dur, "args": {"hlo_module": "jit_f", "hlo_op": op}}

    events = [event("w", 0, 100), event("a", 10, 30), event("m", 50, 20), event("c", 60, 40)]
    result, annotated = trace.attribute(events, [HLO], ["learner", "actor"])
    assert result.exclusive == pytest.approx({"learner": 30e-6, "actor": 20e-6, "loop": 40e-6})
    assert result.ops == 3  # the while op spans the others and is not counted
    assert result.busy_s == pytest.approx(80e-6)  # [10, 40] ∪ [50, 100]
    assert result.window_s == pytest.approx(100e-6)
    assert annotated[1]["args"]["scope"] == "learner"


def test_a_scope_wrapped_by_a_transformation_keeps_its_name():
    # jax.grad traces the forward under jvp(NAME) and the backward pass under transpose(NAME)
    hlo = HLO.replace("while/body/learner/add", "while/body/transpose(learner)/jvp(Dense_0)/add")
    event = {"ph": "X", "ts": 0, "dur": 30, "args": {"hlo_module": "jit_f", "hlo_op": "a"}}
    result, _ = trace.attribute([event], [hlo], ["learner", "actor"])
    assert result.exclusive == pytest.approx({"learner": 30e-6})
    assert trace._scope_names("a/transpose(jvp(Net))/vmap(learner)/b") == [
        "a",
        "Net",
        "learner",
        "b",
    ]


def _small_then_big(x):
    # Two scopes on one dependent chain, so they cannot run concurrently: "big" does four times
    # the matmul+tanh work of "small".
    with jax.named_scope("small"):
        a = jnp.tanh(x @ x)
    with jax.named_scope("big"):
        for _ in range(4):
            a = jnp.tanh(a @ x)
    return a


def _traced_fastest_ops(executions):
    """Trace ``executions`` calls of the compiled program; each op's fastest event."""
    x = jnp.ones((512, 512)) * 1e-3
    compiled = jax.jit(_small_then_big).lower(x).compile()
    compiled(x).block_until_ready()
    with trace.capture() as events:
        for _ in range(executions):
            compiled(x).block_until_ready()
    fastest = {}
    for event in events:
        op = (event.get("args") or {}).get("hlo_op")
        if event.get("ph") == "X" and op and event["dur"] < fastest.get(op, {"dur": 1e30})["dur"]:
            fastest[op] = event
    return compiled, list(fastest.values())


def test_fused_program_ops_land_in_their_scopes():
    # What the profiler reports is the device's own record; which scope each op lands in is not
    # a timing question, so it is checked exactly: four times as many ops under "big", none lost.
    compiled, ops = _traced_fastest_ops(executions=1)
    result, annotated = trace.attribute(ops, [compiled.as_text()], ["small", "big"])
    per_scope = {}
    for event in annotated:
        scope = event["args"].get("scope")
        if scope is not None:
            per_scope[scope] = per_scope.get(scope, 0) + 1
    assert per_scope.get("small", 0) >= 1
    assert per_scope["big"] == 4 * per_scope["small"]
    assert per_scope.get("loop", 0) <= 1  # at most the program's output copy
    assert result.ops == sum(per_scope.values())

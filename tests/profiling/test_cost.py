"""XLA's cost of a compiled program: known FLOP counts, loop trip counts, every answer's shape."""

import jax
import jax.numpy as jnp
import pytest

from jaxrl_fdg.profiling import cost

M, K, N = 48, 64, 40
T = 6


@pytest.fixture(scope="module")
def operands():
    return jnp.ones((M, K)), jnp.ones((K, N)), jnp.ones((N, N))


def test_a_matmul_costs_two_m_n_k_flops(operands):
    a, b, _ = operands
    compiled = jax.jit(lambda x, y: x @ y).lower(a, b).compile()
    got = cost.program_cost(compiled)
    # Each of the m·n outputs is k multiplies and k adds: 2·48·40·64 = 245,760.
    assert got.flops == 2 * M * N * K
    # Reads a (48·64) and b (64·40), writes the 48·40 result, float32: 4·(3072+2560+1920).
    assert got.bytes == 4 * (M * K + K * N + M * N)
    assert got.loops == "none"


def test_a_loop_body_is_counted_its_trip_count_times(operands):
    a, b, c = operands

    def chained(x, y, z):  # each matmul needs the last: XLA cannot hoist it out of the loop
        return jax.lax.scan(lambda h, _: (jnp.tanh(h @ z), None), x @ y, None, length=T)[0]

    got = cost.program_cost(jax.jit(chained).lower(a, b, c).compile())
    # One 48×64 @ 64×40 matmul, then T of 48×40 @ 40×40; tanh and loop counters are not FLOPs
    # by XLA's count beyond a few: 245,760 + 6·153,600 = 1,167,360.
    expected = 2 * M * N * K + T * 2 * M * N * N
    assert got.loops == "trip counts"
    assert expected <= got.flops < expected * 1.01
    raw = cost.cost_analysis(jax.jit(chained).lower(a, b, c).compile())
    assert raw["flops"] < got.flops / 2  # XLA's own count charges the body once


def test_a_loop_under_a_conditional_is_counted_its_trip_count_times(operands):
    a, b, c = operands

    def learner(x, y, z, ready):  # gradient steps under lax.cond, as after learning_starts
        def learn(h):
            return jax.lax.scan(lambda g, _: (jnp.tanh(g @ z), None), h, None, length=T)[0]

        return jax.lax.cond(ready, learn, lambda h: h, x @ y)

    compiled = jax.jit(learner).lower(a, b, c, True).compile()
    got = cost.program_cost(compiled)
    expected = 2 * M * N * K + T * 2 * M * N * N  # the branch that loops counts as running
    assert got.loops == "trip counts"
    assert expected <= got.flops < expected * 1.01


def test_a_loop_of_run_time_length_is_counted_once(operands):
    a, _, c = operands

    def chunk(x, z, n):
        return jax.lax.fori_loop(0, n, lambda _, h: jnp.tanh(h @ z), x)

    got = cost.program_cost(jax.jit(chunk).lower(a[:, :N], c, 5).compile())
    assert 2 * M * N * N <= got.flops < 2 * M * N * N * 1.01  # one pass: the plan's iteration


@pytest.mark.parametrize(
    "answer, expected",
    [
        (None, None),
        ({}, None),
        ({"flops": 10.0, "bytes accessed": 4.0, "utilization0{}": 1.0}, (10.0, 4.0)),
        ([{"flops": 10.0, "bytes accessed": 4.0}, {"flops": 2.0}], (12.0, 4.0)),
        ([], None),
    ],
)
def test_every_shape_of_answer_is_read(answer, expected):
    class Compiled:
        def cost_analysis(self):
            return answer

        def as_text(self):
            return "HloModule m\n\nENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n"

    got = cost.program_cost(Compiled())
    assert (got if got is None else (got.flops, got.bytes)) == expected


def test_a_backend_without_cost_analysis_gives_none():
    class Compiled:
        def cost_analysis(self):
            raise NotImplementedError("no cost model here")

    assert cost.program_cost(Compiled()) is None


def test_without_the_private_bindings_the_raw_count_is_kept(operands, monkeypatch):
    a, _, c = operands

    def gone(text):
        raise AttributeError("no jaxlib binding 'hlo_module_cost_analysis'")

    monkeypatch.setattr(cost, "_costed", gone)
    fn = jax.jit(lambda x, z: jax.lax.scan(lambda h, _: (h @ z, None), x, None, length=T)[0])
    got = cost.program_cost(fn.lower(a[:, :N], c).compile())
    assert got.loops == "once" and got.flops >= 2 * M * N * N

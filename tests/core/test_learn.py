"""The learn body (``jaxrl_fdg.core.learn``): after the rollout, the every-iteration node once,
``rounds(k)`` k times with its metrics averaged, ``every(n)`` at the end of iterations n, 2n, …;
a condition skips a node (zeros, no updates, no run counted); another fragment's metrics are
prefixed with its name. On the toy loop of ``conftest.py`` (4 envs × 3 steps: 12 env steps per
iteration) with counting fragments beside its learner."""

import jax
import jax.numpy as jnp

import jaxrl_fdg as rl
from jaxrl_fdg.core.names import ENV_STEPS, ITERATION, METRICS, TRAJECTORY


def counter(name: str, cadence, inputs=(TRAJECTORY,)) -> rl.Fragment:
    """Counts its calls; its metric ``count`` is the count after the call, and ``seen`` the
    first loop edge it reads, as a float."""

    def apply(count, edges, key):
        del key
        seen = edges[inputs[0]] if inputs[0] != TRAJECTORY else 0
        return count + 1, {METRICS: {"count": (count + 1) * 1.0, "seen": seen * 1.0}}

    return rl.fragment(
        name,
        "transform",
        apply,
        init=lambda key: jnp.zeros((), jnp.int32),
        inputs=inputs,
        outputs=(METRICS,),
        cadence=cadence,
    )


def _run(loop, iterations: int):
    state, rows = loop.init(jax.random.key(0)), []
    for _ in range(iterations):
        state, metrics = loop.iteration(state)
        rows.append({k: float(v) for k, v in metrics.items()})
    return state, rows


def test_rounds_run_k_times_per_iteration_and_average_their_metrics(toy):
    loop = toy(extra=(counter("rounder", rl.rounds(3)),))
    state, rows = _run(loop, 2)
    assert int(state.fragments["rounder"]) == 2 * 3
    # Iteration 1 counts 1, 2, 3 (mean 2); iteration 2 counts 4, 5, 6 (mean 5).
    assert [r["rounder/count"] for r in rows] == [2.0, 5.0]
    assert [r["rounder/updates"] for r in rows] == [3.0, 3.0]  # named after its owner
    assert "mean_reward" in rows[0]  # the primary learner's metrics, unprefixed


def test_a_condition_skips_the_rounds_with_zeros_and_no_updates(toy):
    warm = rl.condition(lambda e: e[ENV_STEPS] >= 24, (ENV_STEPS,), "two iterations in")
    loop = toy(extra=(counter("rounder", rl.rounds(2, when=warm)),))
    state, rows = _run(loop, 3)
    # env_steps is 12, 24, 36 at iterations 1, 2, 3: skipped once, then 2 rounds each.
    assert [r["rounder/updates"] for r in rows] == [0.0, 2.0, 2.0]
    assert [r["rounder/count"] for r in rows] == [0.0, 1.5, 3.5]
    assert int(state.fragments["rounder"]) == 4


def test_every_n_runs_at_the_end_of_iterations_n_2n_and_counts_its_runs(toy):
    loop = toy(extra=(counter("periodic", rl.every(2), inputs=(ITERATION,)),))
    state, rows = _run(loop, 5)
    assert [r["periodic/runs"] for r in rows] == [0.0, 1.0, 0.0, 1.0, 0.0]
    # Where it ran, it saw the iteration being run (from 1); where it did not, zeros.
    assert [r["periodic/seen"] for r in rows] == [0.0, 2.0, 0.0, 4.0, 0.0]
    assert [r["periodic/count"] for r in rows] == [0.0, 1.0, 0.0, 2.0, 0.0]
    assert int(state.fragments["periodic"]) == 2


def test_every_n_with_a_condition_runs_where_both_hold(toy):
    late = rl.condition(lambda e: e[ENV_STEPS] >= 36, (ENV_STEPS,), "three iterations in")
    loop = toy(extra=(counter("periodic", rl.every(2, when=late), inputs=(ITERATION,)),))
    _, rows = _run(loop, 4)
    assert [r["periodic/runs"] for r in rows] == [0.0, 0.0, 0.0, 1.0]  # iteration 2: 24 < 36


def test_an_every_iteration_node_sees_the_loop_edges(toy):
    loop = toy(extra=(counter("each", rl.ITERATION, inputs=(ENV_STEPS,)),))
    _, rows = _run(loop, 2)
    assert [r["each/seen"] for r in rows] == [12.0, 24.0]  # this rollout's steps included
    assert [r["each/count"] for r in rows] == [1.0, 2.0]

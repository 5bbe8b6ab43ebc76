"""Cadences place calls in the schedule tree; every edge a call reads orders it, published ones
included after the rollout; what the edges leave unresolved is a one-line GraphError."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve

TINY = rl.TrainConfig(
    total_steps=2 * 4 * 6,
    num_envs=2,
    rollout_len=4,
    out=None,
    progress=False,
    profile="off",
    log_every=3,
    hparams={"num_minibatches": 1, "update_epochs": 1, "hidden_sizes": (8,)},
)


@pytest.fixture(scope="module")
def ppo():
    resolved = resolve(TINY)
    return resolved.spec.build(resolved.context), rl.build_loop(resolved).info.env


def _loop(ppo, *extra, learner=None):
    algorithm, env = ppo
    if learner is not None:
        algorithm = algorithm._replace(learner=learner)
    return rl.make_loop(env, algorithm.with_fragments(*extra), TINY.rollout_len)


def _counter(name, role="transform", cadence=None, inputs=(), publish=None, outputs=("metrics",)):
    """A fragment that counts its calls and reports the count as a metric."""

    def apply(state, inputs, key):
        out = {"metrics": {"calls": state + 1.0}} if "metrics" in outputs else {}
        out.update({e: inputs[e] for e in outputs if e != "metrics"})
        return state + 1.0, out

    return rl.fragment(
        name,
        role,
        apply,
        init=lambda key: jnp.zeros((), jnp.float32),
        inputs=inputs,
        outputs=outputs,
        publish=(lambda s: {publish: s}) if publish else (lambda s: {}),
        published=(publish,) if publish else (),
        cadence=cadence,
    )


def _nodes(loop):
    return [(str(n.cadence), tuple(c.label for c in n.calls)) for n in loop.info.schedule.after]


def test_a_reader_of_a_published_edge_runs_after_its_publisher_whatever_the_declaration(ppo):
    # "second" reads what "first" publishes; declared before it, it still runs after it.
    first = _counter("first", "learner", publish="first_count")
    second = _counter("second", "learner", inputs=("first_count",))
    loop = _loop(ppo, second, first)
    assert _nodes(loop) == [("every iteration", ("learner", "first", "second"))]
    edges = {(e.source, e.target, e.kind) for e in loop.graph.edges}
    assert ("first.first_count", "second.first_count", "published") in edges


def test_it_reads_the_publishers_state_of_this_iteration(ppo):
    seen = []

    def read(state, inputs, key):
        seen.append(inputs["first_count"])
        return state, {"metrics": {"seen": inputs["first_count"]}}

    first = _counter("first", "learner", publish="first_count")
    second = rl.fragment("second", "learner", read, inputs=("first_count",), outputs=("metrics",))
    loop = _loop(ppo, second, first)
    state = loop.init(jax.random.key(0))
    for _ in range(2):
        state, metrics = jax.jit(loop.iteration)(state)
    # After iteration i (from 1) "first" has counted i calls: "second" saw i, not i - 1.
    assert float(metrics["second/seen"]) == 2.0 and float(metrics["first/calls"]) == 2.0


def test_a_published_cycle_names_the_fragments_and_edges(ppo):
    a = _counter("a", "learner", inputs=("b_count",), publish="a_count")
    b = _counter("b", "learner", inputs=("a_count",), publish="b_count")
    with pytest.raises(rl.ConfigError, match=r"a cycle: 'a' reads 'b_count' \(published\) from"):
        _loop(ppo, a, b)


def test_ambiguous_writers_and_publishers_are_refused(ppo):
    one = _counter("one", inputs=("trajectory",), outputs=("bonus",))
    two = _counter("two", inputs=("trajectory",), outputs=("bonus",))
    with pytest.raises(rl.ConfigError, match="'bonus' is written by both 'one' and 'two'"):
        _loop(ppo, one, two)
    p = _counter("p", "learner", publish="params")
    with pytest.raises(rl.ConfigError, match="'params' is published by both 'learner' and 'p'"):
        _loop(ppo, p)


def test_periodic_and_round_nodes_after_the_rollout(ppo):
    periodic = _counter("every3", cadence=rl.every(3), inputs=("trajectory",))
    twice = _counter("twice", cadence=rl.rounds(2))
    loop = _loop(ppo, periodic, twice)
    assert _nodes(loop) == [
        ("every iteration", ("learner",)),
        ("every 3 iterations", ("every3",)),
        ("2 rounds per iteration", ("twice",)),
    ]
    state = jax.jit(loop.init)(jax.random.key(0))
    runs, calls = [], []
    iteration = jax.jit(loop.iteration)
    for _ in range(6):
        state, metrics = iteration(state)
        runs.append(float(metrics["every3/runs"]))
        calls.append(float(metrics["every3/calls"]))
    assert runs == [0, 0, 1, 0, 0, 1]  # at the end of iterations 3 and 6
    assert calls == [0, 0, 1, 0, 0, 2]  # zeros where it did not run
    assert float(state.fragments["every3"]) == 2.0
    assert float(state.fragments["twice"]) == 12.0  # 2 rounds × 6 iterations
    assert float(metrics["twice/updates"]) == 2.0


def test_a_periodic_node_with_a_condition_runs_only_where_it_holds(ppo):
    # Due at the end of iterations 2, 4 and 6; the condition holds from the 4th iteration on
    # (env_steps counts this rollout's: 8 env steps an iteration): it runs at 4 and 6 only,
    # and iteration 2, where it was due but did not run, counts no run and logs no call.
    late = rl.condition(lambda edges: edges["env_steps"] >= 4 * 8, ("env_steps",), "late")
    gated = _counter("gated", cadence=rl.every(2, when=late), inputs=("trajectory",))
    loop = _loop(ppo, gated)
    assert ("every 2 iterations, when late", ("gated",)) in _nodes(loop)
    state = jax.jit(loop.init)(jax.random.key(0))
    runs, calls = [], []
    iteration = jax.jit(loop.iteration)
    for _ in range(6):
        state, metrics = iteration(state)
        runs.append(float(metrics["gated/runs"]))
        calls.append(float(metrics["gated/calls"]))
    assert runs == [0, 0, 0, 1, 0, 1]
    assert calls == [0, 0, 0, 1, 0, 2]
    assert float(state.fragments["gated"]) == 2.0
    edges = {(e.source, e.target) for e in loop.graph.edges}
    assert ("loop.env_steps", "gated.when:env_steps") in edges


def test_periodic_metrics_are_averaged_over_the_iterations_that_ran(tmp_path):
    from jaxrl_fdg.run import metrics as rows

    config = TINY.with_defaults()
    chunk = {
        "every3/runs": np.array([0.0, 0.0, 1.0]),
        "every3/calls": np.array([0.0, 0.0, 5.0]),
        "loss": np.array([1.0, 2.0, 3.0]),
    }
    row = rows.row(chunk, 3, config, 1.0, 1.0)
    assert row["every3/runs"] == 1 and row["every3/calls"] == 5.0 and row["loss"] == 2.0
    quiet = {k: v[:2] for k, v in chunk.items()}
    assert rows.row(quiet, 2, config, 1.0, 1.0)["every3/calls"] is None


def test_outputs_of_rounds_stay_inside_them(ppo):
    inside = _counter("inside", cadence=rl.rounds(2), outputs=("token",), inputs=("env_steps",))
    reader = _counter("reader", "learner", inputs=("token",))
    with pytest.raises(rl.ConfigError, match="'reader' reads 'token', which is written inside"):
        _loop(ppo, inside, reader)


def test_a_transform_runs_where_what_it_reads_is_made(ppo):
    # Reads an edge written in rounds: joins them; reads the trajectory: after the rollout;
    # reads nothing made after it: at every step.
    maker = _counter("maker", cadence=rl.rounds(3), inputs=("env_steps",), outputs=("token",))
    user = _counter("user", inputs=("token",))
    stepper = _counter("stepper", inputs=("observation",), outputs=())
    loop = _loop(ppo, maker, user, stepper)
    assert loop.info.schedule.step == ("actor", "env", "stepper")
    assert ("3 rounds per iteration", ("maker", "user")) in _nodes(loop)


def test_bad_cadences_are_refused():
    with pytest.raises(rl.ConfigError, match="every\\(\\) takes a positive integer, got 0"):
        rl.every(0)
    with pytest.raises(rl.ConfigError, match="cadence must be one of STEP, ITERATION"):
        rl.fragment("f", "learner", lambda s, i, k: (s, {}), cadence="sometimes")
    with pytest.raises(rl.ConfigError, match="a condition reads at least one named edge"):
        rl.condition(lambda edges: True, ())
    with pytest.raises(rl.ConfigError, match="every\\(when=...\\) takes a Condition"):
        rl.every(2, when=lambda edges: True)


def test_the_schedule_tree_is_printed(ppo):
    text = _loop(ppo, _counter("every3", cadence=rl.every(3), inputs=("trajectory",))).graph
    lines = text.describe().splitlines()
    tree = lines[lines.index("schedule:") :]
    assert tree == [
        "schedule:",
        "  iteration",
        "  ├─ rollout × 4 steps",
        "  │  ├─ actor",
        "  │  └─ env",
        "  └─ after the rollout",
        "     ├─ every iteration",
        "     │  └─ learner",
        "     └─ every 3 iterations",
        "        └─ every3",
    ]

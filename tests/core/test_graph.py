"""Fragments declare their edges; the graph resolves them and refuses what does not fit."""

import jax
import jax.numpy as jnp
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.policies.fusion import PROGRAMS


def _ppo_loop(**changes):
    return rl.build_loop(resolve(rl.TrainConfig(out=None, **changes)))


def test_ppo_graph_edges():
    graph = _ppo_loop().graph
    edges = {(e.source, e.target, e.kind) for e in graph.edges}
    assert edges == {
        ("actor.action", "env.action", "step"),
        ("env.observation", "actor.observation", "state"),
        ("learner.params", "actor.params", "state"),
        ("rollout.trajectory", "learner.trajectory", "rollout"),
    }


def test_missing_edge_is_named():
    loop = _ppo_loop()
    needy = loop.info.actor._replace(inputs=("observation", "params", "goal"))
    algo = rl.Algorithm("needy", needy, loop.info.learner)
    with pytest.raises(ValueError, match="input edge 'goal' of fragment 'actor' has no producer"):
        rl.make_loop(loop.info.env, algo, 8)


def test_roles_are_checked():
    loop = _ppo_loop()
    with pytest.raises(ValueError, match="role learner, expected actor"):
        rl.make_loop(loop.info.env, rl.Algorithm("x", loop.info.learner, loop.info.learner), 8)


def test_graph_state_mirrors_graph():
    loop = _ppo_loop(num_envs=2, rollout_len=4)
    state = jax.jit(loop.init)(jax.random.key(0))
    assert sorted(state.fragments) == ["actor", "env", "learner"]
    loop.graph.check_state(state.fragments)
    with pytest.raises(ValueError, match="do not match the fragments"):
        loop.graph.check_state({"env": 0, "learner": 0})


def test_describe_lists_nodes_edges_and_programs():
    text = _ppo_loop().graph.describe(PROGRAMS)
    for needle in ("actor", "learner", "env.observation", "rollout.trajectory", *rl.FUSION_MODES):
        assert needle in text


def test_loop_transition_shapes():
    loop = _ppo_loop(num_envs=3, rollout_len=4)
    state = loop.init(jax.random.key(0))
    _, trajectory, _ = jax.jit(loop.rollout)(state)
    assert trajectory.observation.shape == (4, 3, 4)
    assert trajectory.action.shape == (4, 3)
    assert set(trajectory.extras) == {"log_prob", "value"}
    assert set(trajectory.info) == {"episode_return", "episode_length"}
    assert trajectory.terminated.dtype == jnp.bool_


def _labels(node):
    return tuple(c.label for c in node.calls)


def test_schedules_follow_the_edges():
    ppo = _ppo_loop().graph.schedule
    assert ppo.step == ("actor", "env")
    assert [(type(n.cadence).__name__, _labels(n)) for n in ppo.after] == [
        ("Iteration", ("learner",))
    ]
    dqn = rl.build_loop(resolve(rl.TrainConfig(algo="dqn", out=None))).graph
    store, updates = dqn.schedule.after
    assert _labels(store) == ("replay",)  # stores the trajectory, every iteration
    # The learner's rounds: the replay's methods join them by the edges batch and td_error.
    assert isinstance(updates.cadence, rl.core.Rounds)
    assert _labels(updates) == ("replay.sample", "learner", "replay.update")
    edges = {(e.source, e.target, e.kind) for e in dqn.edges}
    assert ("replay.batch", "learner.batch", "round") in edges
    assert ("learner.td_error", "replay.update:td_error", "round") in edges
    assert ("loop.env_steps", "replay.sample:env_steps", "loop") in edges
    assert {e[:2] for e in edges if ".when:" in e[1]} == {
        ("loop.env_steps", "learner.when:env_steps"),
        ("replay.replay_ready", "learner.when:replay_ready"),
    }


def _scale(name, edge):
    def apply(state, inputs, key):
        return state, {edge: inputs[edge] * 2}

    return rl.fragment(name, "transform", apply, inputs=(edge,), outputs=(edge,))


def test_a_rewriting_fragment_runs_after_the_producer_and_before_the_readers():
    loop = _ppo_loop(num_envs=2, rollout_len=4)
    # Declared first, yet scheduled by its edges: the env publishes the observation, the
    # transform rewrites it at every step, the actor acts on the rewritten one.
    algo = rl.Algorithm(
        "x", loop.info.actor, loop.info.learner, extra=(_scale("double_obs", "observation"),)
    )
    graph = rl.make_loop(loop.info.env, algo, 4).graph
    assert graph.schedule.step == ("double_obs", "actor", "env")
    edges = {(e.source, e.target) for e in graph.edges}
    assert ("env.observation", "double_obs.observation") in edges
    assert ("double_obs.observation", "actor.observation") in edges
    # After the rollout: a trajectory rewriter runs before the learner.
    algo = algo.with_fragments(_scale("double_traj", "trajectory"))
    graph = rl.make_loop(loop.info.env, algo, 4).graph
    (learn,) = graph.schedule.after
    assert _labels(learn) == ("double_traj", "learner")
    edges = {(e.source, e.target, e.kind) for e in graph.edges}
    assert ("rollout.trajectory", "double_traj.trajectory", "rollout") in edges
    assert ("double_traj.trajectory", "learner.trajectory", "learn") in edges


def test_the_trajectory_records_what_the_actor_saw():
    loop = _ppo_loop(num_envs=2, rollout_len=4)
    algo = rl.Algorithm(
        "x", loop.info.actor, loop.info.learner, extra=(_scale("double_obs", "observation"),)
    )
    looped = rl.make_loop(loop.info.env, algo, 4)
    state = looped.init(jax.random.key(0))
    _, trajectory, _ = jax.jit(looped.rollout)(state)
    first = state.fragments["env"].observation
    assert jnp.array_equal(trajectory.observation[0], 2 * first)


def test_cycles_and_unfed_batches_are_refused():
    def echo(state, inputs, key):
        return state, {"b": inputs["a"]}

    def back(state, inputs, key):
        return state, {"a": inputs["b"]}

    loop = _ppo_loop()
    one = rl.fragment("one", "transform", echo, inputs=("a",), outputs=("b",))
    two = rl.fragment("two", "transform", back, inputs=("b",), outputs=("a",))
    with pytest.raises(rl.ConfigError, match="a cycle: 'one' reads 'a' from 'two'"):
        rl.make_loop(
            loop.info.env,
            rl.Algorithm("x", loop.info.actor, loop.info.learner, extra=(one, two)),
            4,
        )
    hungry = loop.info.learner._replace(inputs=("batch",))
    with pytest.raises(ValueError, match="input edge 'batch' of fragment 'learner'"):
        rl.make_loop(loop.info.env, rl.Algorithm("x", loop.info.actor, hungry), 4)

"""The edge and metric names of jaxrl_fdg.core.names: distinct, and the ones the built-in fragments,
the env fragment, the evaluator and the loop actually use."""

import jax
import jax.numpy as jnp
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core import env_fragment, evaluation, graph, names
from jaxrl_fdg.core.loop import Transition, episode_metrics
from jaxrl_fdg.envs import CartPole

CONSTANTS = {name: getattr(names, name) for name in names.__all__}

ENV_OUTPUTS = (
    names.REWARD,
    names.TERMINATED,
    names.TRUNCATED,
    names.NEXT_OBSERVATION,
    names.EPISODE_RETURN,
    names.EPISODE_LENGTH,
)


def test_every_constant_is_a_distinct_lowercase_identifier_named_after_its_value():
    assert CONSTANTS, "names.__all__ is empty"
    for name, value in CONSTANTS.items():
        assert isinstance(value, str) and value.isidentifier() and value == value.lower(), name
        assert name == value.upper(), f"{name} = {value!r}"
    assert len(set(CONSTANTS.values())) == len(CONSTANTS)


def test_all_lists_every_public_constant():
    public = {n for n in vars(names) if n.isupper() and not n.startswith("_")}
    assert public == set(names.__all__)
    assert len(names.__all__) == len(set(names.__all__))


def test_exported_from_core():
    import jaxrl_fdg.core
    from jaxrl_fdg.core import names as exported

    assert exported is names is jaxrl_fdg.core.names
    assert "names" in jaxrl_fdg.core.__all__


def test_loop_edges_are_the_graphs():
    assert names.TRAJECTORY == graph.TRAJECTORY
    assert names.ENV_STEPS == graph.ENV_STEPS
    assert names.ITERATION == graph.ITERATION_EDGE
    assert names.METRICS == graph.METRICS
    assert set(graph.LOOP_EDGES) == {names.TRAJECTORY, names.ENV_STEPS, names.ITERATION}


def test_env_fragment_declares_the_environment_edges():
    env = CartPole()
    frag = env_fragment.env_fragment(env, env.default_params, num_envs=3)
    assert frag.inputs == (names.ACTION,)
    assert frag.outputs == env_fragment.ENV_OUTPUTS == ENV_OUTPUTS
    assert frag.published == env_fragment.PUBLISHED == (names.OBSERVATION, names.EPISODE_STEP)

    state = frag.init(jax.random.key(0))
    assert set(frag.publish(state)) == {names.OBSERVATION, names.EPISODE_STEP}
    action = jnp.zeros((3,), jnp.int32)
    _, outputs = frag.apply(state, {names.ACTION: action}, jax.random.key(1))
    assert tuple(outputs) == ENV_OUTPUTS


def test_evaluators_declare_the_evaluation_names():
    env = CartPole()
    play = evaluation.evaluator(env, env.default_params, lambda p, o: o[:, 0] > 0, episodes=2)
    assert play.inputs == (names.PARAMS,)
    assert play.outputs == (names.EVAL_RETURN, names.EVAL_RETURN_STD, names.EVAL_LENGTH)

    ctx = resolve(rl.TrainConfig(total_steps=64, num_envs=2, rollout_len=8, out=None)).context
    algorithm = rl.algorithm.get("ppo").build(ctx)
    frag = evaluation.in_graph_evaluator(ctx, algorithm, every=2, episodes=2)
    assert (frag.inputs, frag.outputs) == ((names.PARAMS,), (names.METRICS,))


def test_episode_metrics_use_the_episode_metric_names():
    T, B = 2, 3
    zeros = jnp.zeros((T, B))
    done = jnp.zeros((T, B), bool).at[1, 0].set(True)
    info = {names.EPISODE_RETURN: zeros + 1.0, names.EPISODE_LENGTH: zeros.astype(jnp.int32) + 4}
    traj = Transition(zeros, zeros, zeros, done, done, zeros, extras={}, info=info)
    metrics = episode_metrics(traj)
    assert set(metrics) == {names.EPISODES, names.EPISODE_RETURN_SUM, names.EPISODE_LENGTH_SUM}
    assert float(metrics[names.EPISODES]) == 1.0
    assert float(metrics[names.EPISODE_LENGTH_SUM]) == 4.0


DISCRETE = dict(env="CartPole-v1", total_steps=64, num_envs=2, rollout_len=8)
CONTINUOUS = dict(env="Pendulum-v1", total_steps=64, num_envs=2, rollout_len=8)
OFF_POLICY = {"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125}
BUILT_IN = [
    pytest.param("ppo", DISCRETE, {}, id="ppo"),
    pytest.param("ppo", CONTINUOUS, {"memory": "gru", "num_minibatches": 2}, id="ppo-box-gru"),
    pytest.param("a2c", DISCRETE, {}, id="a2c"),
    pytest.param("impala", DISCRETE, {}, id="impala"),
    pytest.param("pqn", DISCRETE, {"num_minibatches": 2}, id="pqn"),
    pytest.param("dqn", DISCRETE, {**OFF_POLICY, "replay": "prioritized"}, id="dqn-prioritized"),
    pytest.param("c51", DISCRETE, OFF_POLICY, id="c51"),
    pytest.param(
        "sac", CONTINUOUS, {**OFF_POLICY, "normalize_observations": True}, id="sac-normalized"
    ),
    pytest.param("td3", CONTINUOUS, OFF_POLICY, id="td3"),
    pytest.param("ddpg", CONTINUOUS, OFF_POLICY, id="ddpg"),
]


def _edges(frag):
    """Every edge ``frag`` declares: read, written or published, by any of its methods, or read
    by its cadence's condition."""
    edges = {*frag.inputs, *frag.outputs, *frag.published}
    for method in frag.methods:
        edges |= {*method.inputs, *method.outputs}
    when = getattr(frag.cadence, "when", None)
    if when is not None:
        edges |= set(when.reads)
    return edges


@pytest.mark.parametrize(("algo", "run", "hparams"), BUILT_IN)
def test_built_in_fragments_use_only_shared_names(algo, run, hparams):
    config = rl.TrainConfig(algo=algo, out=None, progress=False, hparams=hparams, **run)
    ctx = resolve(config).context
    algorithm = rl.algorithm.get(algo).build(ctx)
    shared = set(CONSTANTS.values())
    for frag in algorithm.fragments:
        assert _edges(frag) <= shared, (frag.name, sorted(_edges(frag) - shared))
    assert names.PARAMS in algorithm.learner.published
    assert names.ACTION in algorithm.actor.outputs
    assert {names.OBSERVATION, names.PARAMS} <= set(algorithm.actor.inputs)

"""The evaluation fragment (``jaxrl_fdg.core.evaluation``): the deterministic policy played for
whole episodes on environments of its own; in the graph every ``n`` iterations, on a key drawn
apart from training's so that adding it changes nothing training computes; its key at an
iteration a stream of its own."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.evaluation import evaluation_key, evaluator, in_graph_evaluator
from jaxrl_fdg.core.names import METRICS, PARAMS
from jaxrl_fdg.errors import GraphError


def test_evaluator_plays_whole_episodes_of_a_fixed_policy():
    env, params = envs.make("CartPole-v1")
    frag = evaluator(env, params, lambda p, obs: jnp.zeros(obs.shape[0], jnp.int32), episodes=6)
    _, out = frag.apply(rl.EmptyState(), {"params": None}, jax.random.key(0))
    # Always pushing left ends a CartPole episode within a dozen steps; reward 1 per step.
    assert 5 <= float(out["eval_length"]) <= 15
    np.testing.assert_allclose(out["eval_return"], out["eval_length"])
    # Each episode is played to its end and counted once.
    pendulum, p_params = envs.make("Pendulum-v1")
    frag = evaluator(pendulum, p_params, lambda p, obs: jnp.zeros((obs.shape[0], 1)), episodes=3)
    _, out = frag.apply(rl.EmptyState(), {"params": None}, jax.random.key(0))
    assert float(out["eval_length"]) == 200  # Pendulum is only ever truncated, at 200 steps


def test_an_in_graph_evaluator_runs_every_n_iterations_and_needs_a_policy_and_a_jax_env():
    resolved = resolve(testing.tiny("ppo"))
    ctx, algorithm = resolved.context, resolved.spec.build(resolved.context)
    frag = in_graph_evaluator(ctx, algorithm, every=3, episodes=2)
    assert (frag.role, frag.cadence, frag.inputs, frag.outputs) == (
        rl.Role.EVALUATOR,
        rl.every(3),
        (PARAMS,),
        (METRICS,),
    )
    with pytest.raises(GraphError, match="defines no policy to evaluate"):
        in_graph_evaluator(ctx, algorithm._replace(policy=None), every=3, episodes=2)


def test_adding_an_evaluator_node_changes_nothing_training_computes(toy):
    def look(state, inputs, key):
        return state, {METRICS: {"draw": jax.random.uniform(key)}}

    watcher = rl.fragment(
        "watcher", "evaluator", look, inputs=(PARAMS,), outputs=(METRICS,), cadence=rl.every(1)
    )
    plain, watched = toy(), toy(extra=(watcher,))
    key = jax.random.key(5)
    a, b = plain.init(key), watched.init(key)
    for _ in range(2):
        (a, ma), (b, mb) = plain.iteration(a), watched.iteration(b)
        assert set(mb) - set(ma) == {"watcher/draw", "watcher/runs"}
        testing.assert_same_bits(ma, {k: mb[k] for k in ma})  # the learner's key untouched
    testing.assert_same_bits(
        a.fragments, {k: v for k, v in b.fragments.items() if k in a.fragments}
    )


def test_the_evaluation_key_is_a_stream_of_its_own_per_iteration():
    key = evaluation_key(seed=3, iteration=4)
    by_hand = jax.random.fold_in(jax.random.fold_in(jax.random.key(3), 0x4556414C), 4)
    testing.assert_same_bits(key, by_hand)
    assert testing.differences(key, evaluation_key(3, 5))  # another iteration, another key
    assert testing.differences(key, jax.random.key(3))  # not training's key

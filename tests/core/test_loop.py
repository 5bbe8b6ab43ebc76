"""The loop of a graph (``jaxrl_fdg.core.loop``): its state and keys, a rollout that is the
step body driven ``rollout_len`` times, learning after it, the completed-episode metrics, and
the env batch in halves. On the toy loop of ``conftest.py`` (run op by op)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import rng, testing
from jaxrl_fdg.core.loop import episode_metrics, iterations_done, stack
from jaxrl_fdg.core.step import Driver
from jaxrl_fdg.core.types import Transition
from jaxrl_fdg.errors import GraphError


def test_init_gives_each_fragment_a_key_of_its_own(toy):
    loop = toy()
    key = jax.random.key(0)
    state = loop.init(key)
    assert list(state.fragments) == [f.name for f in loop.graph.fragments]
    assert int(state.iteration) == 0 and state.pending is None and state.population is None
    # The loop keeps the first of 1 + 3 keys (one per fragment) and carries on from it.
    testing.assert_same_bits(state.key, rng.split(key, 4)[0])
    halved = toy(halves=2).init(key)
    assert isinstance(halved.fragments["env"], tuple) and len(halved.fragments["env"]) == 2


def test_begin_splits_the_iterations_keys_and_one_per_half(toy):
    loop, halved = toy(), toy(halves=2)
    state = loop.init(jax.random.key(1))
    after, k_rollout, k_learn = loop.begin(state)
    testing.assert_same_bits((after.key, k_rollout, k_learn), tuple(rng.split(state.key, 3)))
    _, halves, _ = halved.begin(state)
    testing.assert_same_bits(halves, tuple(rng.split(k_rollout, 2)))


def test_a_rollout_is_the_step_body_driven_rollout_len_times(toy):
    loop = toy()
    state = loop.init(jax.random.key(2))
    after, trajectory, k_learn = loop.rollout(state)
    # By hand: begin, then three steps of the driver from the rollout key, stacked.
    begun, k_rollout, k_learn_by_hand = loop.begin(state)
    driver = Driver(loop.info, lambda i, *a: loop.calls[i](*a))
    carry, steps = loop.carry(begun.fragments, k_rollout), []
    for _ in range(3):
        carry, step = driver.step(loop.fixed_edges(begun.fragments), carry)
        steps.append(step)
    testing.assert_same_bits(trajectory, stack(steps))
    testing.assert_same_bits(after.fragments, loop.end_rollout(begun.fragments, carry))
    testing.assert_same_bits(k_learn, k_learn_by_hand)
    assert trajectory.reward.shape == (3, 4)  # [T, B]
    assert int(after.iteration) == 0  # learning counts the iteration


def test_an_iteration_is_a_rollout_then_learning(toy):
    loop = toy()
    state = loop.init(jax.random.key(3))
    done, metrics = loop.iteration(state)
    after, trajectory, k_learn = loop.rollout(state)
    learned, by_hand = loop.learn(after, trajectory, k_learn)
    testing.assert_same_bits((done, metrics), (learned, by_hand))
    assert iterations_done(done) == 1
    # The toy learner: params 1 + 0.1 × the rollout's mean reward.
    mean = float(np.mean(trajectory.reward))
    assert float(metrics["mean_reward"]) == pytest.approx(mean)
    assert float(done.fragments["learner"]) == pytest.approx(1 + 0.1 * mean)
    assert sorted(metrics) == ["draw", "episodes", "mean_reward"]  # no episode statistics
    # The one node after the rollout takes the learn key itself.
    testing.assert_same_bits(metrics["draw"], jax.random.uniform(k_learn))


def test_episode_metrics_sum_over_the_episodes_that_ended():
    done = jnp.array([[False, True], [True, False], [False, True]])  # [T=3, B=2]
    trajectory = Transition(
        observation=jnp.zeros((3, 2)),
        action=jnp.zeros((3, 2)),
        reward=jnp.zeros((3, 2)),
        terminated=done.at[2, 1].set(False),  # ...truncated there instead
        truncated=jnp.zeros((3, 2), bool).at[2, 1].set(True),
        next_observation=jnp.zeros((3, 2)),
        extras={},
        info={
            "episode_return": jnp.array([[9.0, 1.0], [2.0, 9.0], [9.0, 4.0]]),
            "episode_length": jnp.array([[9, 10], [20, 9], [9, 40]]),
        },
    )
    metrics = episode_metrics(trajectory)
    assert float(metrics["episodes"]) == 3
    assert float(metrics["episode_return_sum"]) == 1 + 2 + 4
    assert float(metrics["episode_length_sum"]) == 10 + 20 + 40
    assert sorted(episode_metrics(trajectory._replace(info={}))) == ["episodes"]


def test_episode_metrics_of_a_game_count_games():
    # 2 games of 2 agents (rows game-major); game 1 ends at step 0, game 0 at step 1.
    done = jnp.array([[False, False, True, True], [True, True, False, False]])
    returns = jnp.array([[0.0, 0.0, 3.0, 5.0], [2.0, 6.0, 0.0, 0.0]])
    trajectory = Transition(
        observation=jnp.zeros((2, 4)),
        action=jnp.zeros((2, 4)),
        reward=jnp.zeros((2, 4)),
        terminated=done,
        truncated=jnp.zeros((2, 4), bool),
        next_observation=jnp.zeros((2, 4)),
        extras={},
        info={
            "episode_return": returns,
            "episode_length": jnp.where(done, jnp.array([[0, 0, 7, 7], [9, 9, 0, 0]]), 0),
            "won": jnp.where(done, jnp.array([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0, 0]]), 0),
        },
    )
    metrics = episode_metrics(trajectory, ("won",), agents=2)
    assert float(metrics["episodes"]) == 2  # games, not the 4 agents' episodes
    assert float(metrics["episode_return_sum"]) == (3 + 5) / 2 + (2 + 6) / 2  # agents' means
    assert float(metrics["episode_length_sum"]) == 7 + 9
    assert float(metrics["info_sum/won"]) == 1  # one game of the two won
    # Each agent's returns, which the division by the games makes its mean.
    assert float(metrics["info_sum/episode_return_agent_0"]) == 3 + 2
    assert float(metrics["info_sum/episode_return_agent_1"]) == 5 + 6


def test_iterations_done_reads_one_count_for_every_lane():
    state = rl.LoopState({}, jax.random.key(0), jnp.array([4, 4, 4], jnp.int32))
    assert iterations_done(state) == 4


def test_halves_step_each_half_and_join_them_half_zero_first(toy):
    loop = toy(halves=2)
    state, trajectory, _ = loop.rollout(loop.init(jax.random.key(4)))
    assert int(state.fragments["actor"]) == 2 * 3  # once per half per step
    assert state.fragments["env"][0].position.shape == (2,)
    # The actor's count at each call: step t is its calls 2t + 1 (half 0) and 2t + 2 (half 1),
    # and the trajectory holds the whole batch, half 0's two environments first.
    np.testing.assert_array_equal(
        trajectory.extras["calls"], [[1, 1, 2, 2], [3, 3, 4, 4], [5, 5, 6, 6]]
    )


def test_an_algorithm_may_not_bring_its_own_environment(toy_parts):
    env = toy_parts.walker(4)
    with pytest.raises(GraphError, match="declares env fragment.*comes from --env"):
        rl.make_loop(env, toy_parts.algorithm(env._replace(name="other_env")), 3)

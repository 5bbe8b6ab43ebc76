"""A loop one iteration behind (``jaxrl_fdg.core.lagged``): ``init`` collects the first rollout,
each iteration learns from the rollout collected before it while collecting the next with the
parameters it had, and reports the lag. On the toy loop of ``conftest.py``."""

import jax
import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.core.lagged import LaggedLoop, lagged
from jaxrl_fdg.core.types import Pending


def test_lagged_says_so_and_adds_the_learner_step_on_a_pending_rollout(toy):
    loop = toy()
    late = lagged(loop)
    assert late.info.lagged and not loop.info.lagged
    assert loop.learn_pending is None and late.learn_pending is not None
    assert late.calls is loop.calls and late.rollout is loop.rollout  # the rest is the loop's


def test_init_collects_the_first_rollout(toy):
    loop, key = toy(), jax.random.key(0)
    state = lagged(loop).init(key)
    after, trajectory, k_learn = loop.rollout(loop.init(key))
    testing.assert_same_bits(state.pending, Pending(trajectory, k_learn, after.iteration))
    testing.assert_same_bits(state.fragments, after.fragments)
    assert int(state.pending.version) == 0


def test_each_iteration_learns_the_rollout_before_it_collected_with_the_old_parameters(toy):
    loop, key = toy(), jax.random.key(1)
    late = lagged(loop)
    state = late.init(key)
    first = state.pending
    state, metrics = late.iteration(state)
    # By hand: the rollout after init's, collected with the parameters init had (1.0), then the
    # learner's step on init's rollout.
    by_hand, second, k_second = loop.rollout(lagged(loop).init(key))
    learned, expected = loop.learn(by_hand, first.trajectory, first.key)
    testing.assert_same_bits(state.fragments, learned.fragments)
    testing.assert_same_bits(state.pending, Pending(second, k_second, by_hand.iteration))
    assert float(metrics.pop("policy_lag")) == 0.0
    testing.assert_same_bits(metrics, expected)
    # From the second on, the learner trails the actors by one iteration's updates.
    lags = []
    for _ in range(3):
        state, metrics = late.iteration(state)
        lags.append(float(metrics["policy_lag"]))
    assert lags == [1.0, 1.0, 1.0]


def test_lagged_loop_is_the_deprecated_name(toy):
    loop = toy()
    with pytest.warns(DeprecationWarning, match=r"LaggedLoop\(loop\) is deprecated"):
        late = LaggedLoop(loop)
    assert late.info.lagged

"""Building one lane's loop (``jaxrl_fdg.core.builder``): the algorithm built with the lane's
swept values, on the env fragment given (half the batch's, with two halves), lagged where the
builder says. On the toy algorithm of ``conftest.py``."""

import jax

from jaxrl_fdg import testing
from jaxrl_fdg.core.builder import LoopBuilder
from jaxrl_fdg.core.loop import make_loop


def test_the_builder_passes_the_swept_values_and_builds_the_loop(toy_parts):
    asked = []

    def algorithm(swept):
        asked.append(dict(swept))
        return toy_parts.algorithm()

    build = LoopBuilder(algorithm, rollout_len=3)
    loop = build(toy_parts.walker(4), {"lr": 0.1})
    assert asked == [{"lr": 0.1}]
    assert (loop.info.rollout_len, loop.info.halves, loop.info.lagged) == (3, 1, False)
    by_hand = make_loop(toy_parts.walker(4), toy_parts.algorithm(), 3)
    key = jax.random.key(0)
    testing.assert_same_bits(loop.iteration(loop.init(key)), by_hand.iteration(by_hand.init(key)))


def test_halves_and_lag_are_the_builders_variants(toy_parts):
    build = LoopBuilder(lambda swept: toy_parts.algorithm(), rollout_len=2, lagged=True)
    loop = build(toy_parts.walker(2), {}, halves=2)
    assert loop.info.lagged and loop.info.halves == 2
    state = loop.init(jax.random.key(1))
    assert len(state.fragments["env"]) == 2  # one state per half
    assert state.pending.trajectory.reward.shape == (2, 4)  # [T, both halves' envs]

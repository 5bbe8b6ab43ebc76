"""Extending a fragment: more state beside its own and methods over both, its own entry points
kept, its own state starting from the same bits."""

import jax
import jax.numpy as jnp
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.core import call, published
from jaxrl_fdg.core.extend import Extended, extend


def _counter():
    def apply(state, inputs, key):
        return state + inputs["x"], {"y": state}

    return rl.fragment(
        "counter",
        "learner",
        apply,
        init=lambda key: jax.random.uniform(key),
        inputs=("x",),
        outputs=("y",),
        publish=lambda s: {"count": s},
        published=("count",),
        methods=(rl.Method("double", lambda s, i, k: (2 * s, {}), inputs=()),),
    )


def _bump(state: Extended, inputs, key):
    return state._replace(extra=state.extra + 1), {"bumped": state.extra}


def test_its_own_entry_points_see_its_own_state_from_the_same_bits():
    base = _counter()
    grown = extend(base, rl.Method("bump", _bump, outputs=("bumped",)), init=lambda k: 10.0)
    key = jax.random.key(3)
    state = grown.init(key)
    assert isinstance(state, Extended) and state.base == base.init(key) and state.extra == 10.0
    after, out = call(grown, state, {"x": 2.0}, key)
    assert out == {"y": state.base} and after == Extended(state.base + 2.0, 10.0)
    assert published(grown, after) == {"count": state.base + 2.0}
    doubled, _ = call(grown, after, {}, key, "double")
    assert doubled.base == 2 * after.base and doubled.extra == 10.0
    bumped, out = call(grown, after, {}, key, "bump")
    assert bumped.extra == 11.0 and out == {"bumped": 10.0}
    assert [m.name for m in grown.methods] == ["double", "bump"]


def test_without_state_it_only_adds_methods():
    grown = extend(_counter(), rl.Method("triple", lambda s, i, k: (3 * s, {})))
    assert grown.init(jax.random.key(0)) == _counter().init(jax.random.key(0))
    assert [m.name for m in grown.methods] == ["double", "triple"]
    with pytest.raises(rl.ConfigError, match="method names must be unique"):
        extend(grown, rl.Method("double", lambda s, i, k: (s, {})))


def test_an_extended_learner_trains_in_the_loop():
    resolved = rl.resolve(testing.tiny("ppo"))
    algorithm = resolved.spec.build(resolved.context)

    def count(state, inputs, key):
        return state._replace(extra=state.extra + 1), {}

    every2 = rl.Method("tally", count, inputs=("trajectory",), cadence=rl.every(2))
    learner = extend(algorithm.fragment("learner"), every2, init=lambda k: jnp.int32(0))
    algorithm = algorithm.replace_fragment(learner)
    env = rl.build_loop(resolved).info.env
    loop = rl.make_loop(env, algorithm, resolved.config.rollout_len)
    state = jax.jit(loop.init)(jax.random.key(0))
    iteration = jax.jit(loop.iteration)
    for _ in range(4):
        state, _ = iteration(state)
    assert int(state.fragments["learner"].extra) == 2
    plain = rl.build_loop(resolved).init(jax.random.key(0)).fragments["learner"]
    start = jax.jit(loop.init)(jax.random.key(0)).fragments["learner"].base
    testing.assert_same_bits(start, plain, "the learner's own state starts from the same bits")

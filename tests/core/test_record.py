"""The loop as a record (``jaxrl_fdg.core.record``): what :class:`LoopInfo` says the loop is, a
variant made by replacing pieces, and the deprecated ways in (``Loop(env, algorithm,
rollout_len)`` and the old class's attributes), each warning and giving what its replacement
gives. On the toy loop of ``conftest.py``."""

import jax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.core.record import Loop, LoopInfo


def test_info_names_the_step_fragments_the_learner_side_and_where_calls_run(toy):
    info = toy().info
    assert isinstance(info, LoopInfo)
    assert [f.name for f in info.step_fragments] == ["actor", "env"]  # order of first call
    assert info.learner_side == ("learner",)
    assert info.on_host == (False, False)
    assert (info.rollout_len, info.halves, info.lagged) == (3, 1, False)
    assert info.schedule is info.graph.schedule
    assert (info.env.name, info.actor.name, info.learner.name) == ("env", "actor", "learner")


def test_a_variant_replaces_the_pieces_it_changes_and_keeps_the_others(toy):
    loop = toy()

    def iteration(state, _=None):
        state, metrics = loop.iteration(state)
        return state, {**metrics, "seen": state.iteration}

    variant = loop._replace(iteration=iteration)
    assert isinstance(variant, Loop)
    assert variant.init is loop.init and variant.learn is loop.learn
    _, metrics = variant.iteration(loop.init(jax.random.key(0)))
    assert int(metrics["seen"]) == 1
    assert variant.call_args(None) == () and variant.learn_pending is None  # the defaults


def test_the_deprecated_constructor_warns_and_builds_what_make_loop_builds(toy_parts):
    env, algorithm = toy_parts.walker(4), toy_parts.algorithm()
    with pytest.warns(DeprecationWarning, match=r"Loop\(env, algorithm, rollout_len\) is dep"):
        old = Loop(env, algorithm, 3)
    new = rl.make_loop(env, algorithm, 3)
    assert isinstance(old, Loop)
    assert old.info.schedule == new.info.schedule
    key = jax.random.key(2)
    testing.assert_same_bits(old.iteration(old.init(key)), new.iteration(new.init(key)))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("env_frag", "info.env"),
        ("actor", "info.actor"),
        ("learner", "info.learner"),
        ("policy", "info.policy"),
        ("schedule", "info.schedule"),
    ],
)
def test_the_deprecated_attributes_warn_and_give_their_replacement(toy, old, new):
    loop = toy()
    with pytest.warns(DeprecationWarning, match=rf"Loop\.{old} is deprecated; use Loop\.{new}"):
        value = getattr(loop, old)
    assert value is getattr(loop.info, new.split(".")[1])


def test_step_fn_is_deprecated_for_calls(toy):
    loop = toy()
    with pytest.warns(DeprecationWarning, match=r"Loop\.step_fn\(i\) is deprecated"):
        assert loop.step_fn(1) is loop.calls[1]

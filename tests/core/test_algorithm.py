"""An algorithm names its fragments and parts, and an extension puts a fragment back by name."""

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing


@pytest.fixture(scope="module")
def dqn():
    resolved = rl.resolve(testing.tiny("dqn"))
    return resolved.spec.build(resolved.context)


def test_fragments_are_reached_by_name(dqn):
    assert [f.name for f in dqn.fragments] == ["actor", "learner", "replay"]
    assert dqn.fragment("replay") is dqn.extra[0]
    with pytest.raises(rl.ConfigError, match="no fragment 'critic' \\(valid: actor, learner"):
        dqn.fragment("critic")


def test_a_fragment_is_replaced_by_name_wherever_it_is(dqn):
    renamed = dqn.fragment("replay")._replace(published=())
    assert dqn.replace_fragment(renamed).extra == (renamed,)
    learner = dqn.learner._replace(inputs=())
    assert dqn.replace_fragment(learner).learner is learner
    assert dqn.replace_fragment(dqn.actor).actor is dqn.actor
    with pytest.raises(rl.ConfigError, match="no fragment 'other'"):
        dqn.replace_fragment(dqn.actor._replace(name="other"))


def test_parts_are_reached_by_name(dqn):
    assert {"network", "features", "q_values", "optimizer", "update"} <= set(dqn.parts)
    with pytest.raises(rl.ConfigError, match="names no part 'torso' \\(valid: network"):
        dqn.part("torso")

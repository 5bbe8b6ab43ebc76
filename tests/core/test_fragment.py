"""The fragment (``jaxrl_fdg.core.fragment``): a declaration checked once, naming what is wrong;
a call that passes an entry point its declared inputs only and checks its outputs; published
edges checked against the declaration; methods as further entry points over the same state."""

import jax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.core.fragment import Method, call, published
from jaxrl_fdg.errors import GraphError


def _identity(state, inputs, key):
    return state, {"y": inputs["x"]}


def _count(state, inputs, key):
    return state + inputs["n"], {"total": state + inputs["n"]}


def test_fragment_rejects_bad_declarations():
    with pytest.raises(ValueError, match="identifier"):
        rl.fragment("not a name", "actor", _identity)
    with pytest.raises(ValueError, match="unknown fragment role 'critic'.*actor"):
        rl.fragment("f", "critic", _identity)
    with pytest.raises(ValueError, match="duplicate inputs"):
        rl.fragment("f", "actor", _identity, inputs=("x", "x"))
    with pytest.raises(ValueError, match="unknown site 'gpu'; valid: device, host"):
        rl.fragment("f", "actor", _identity, site="gpu")
    assert rl.fragment("f", "env", _identity, site="host").site is rl.Site.HOST
    with pytest.warns(DeprecationWarning, match="use site="):
        old = rl.fragment("f", "env", _identity, placement="host")
    with pytest.warns(DeprecationWarning, match="Fragment.site"):
        assert old.placement == "host"


def test_call_checks_inputs_and_outputs():
    frag = rl.fragment("f", "actor", _identity, inputs=("x",), outputs=("y",))
    _, out = call(frag, (), {"x": 1, "unused": 2}, jax.random.key(0))
    assert out == {"y": 1}
    with pytest.raises(ValueError, match=r"needs input edge\(s\) \['x'\]"):
        call(frag, (), {}, jax.random.key(0))
    liar = rl.fragment("g", "actor", _identity, inputs=("x",), outputs=("z",))
    with pytest.raises(ValueError, match="declared outputs \\['z'\\] but produced \\['y'\\]"):
        call(liar, (), {"x": 1}, jax.random.key(0))
    silent = rl.fragment("h", "learner", _identity, publish=lambda s: {"p": s}, published=("q",))
    with pytest.raises(ValueError, match="published"):
        published(silent, 0)


def test_a_fragment_is_stateless_and_publishes_nothing_by_default():
    frag = rl.fragment("f", "transform", _identity, inputs=("x",), outputs=("y",))
    assert frag.init(jax.random.key(0)) == rl.EmptyState()
    assert published(frag, frag.init(None)) == {}
    assert (frag.role, frag.site, frag.cadence) == (rl.Role.TRANSFORM, rl.Site.DEVICE, None)


def test_methods_are_entry_points_over_the_same_state():
    frag = rl.fragment(
        "counter",
        "replay",
        _identity,
        init=lambda key: 10,
        inputs=("x",),
        outputs=("y",),
        methods=(Method("add", _count, inputs=("n",), outputs=("total",)),),
    )
    assert [m.name for m in frag.entry_points] == ["apply", "add"]
    state, out = call(frag, 10, {"n": 5, "x": 0}, jax.random.key(0), method="add")
    assert (state, out) == (15, {"total": 15})
    with pytest.raises(GraphError, match=r"has no method 'drain' \(valid: apply, add\)"):
        frag.method("drain")
    more = frag.with_methods(Method("again", _count, inputs=("n",), outputs=("total",)))
    assert [m.name for m in more.entry_points] == ["apply", "add", "again"]
    assert more.init is frag.init and more.apply is frag.apply
    with pytest.raises(GraphError, match="method names must be unique"):
        frag.with_methods(Method("add", _count))


def test_a_cadence_must_be_one_of_the_core_cadences():
    assert rl.fragment("f", "learner", _identity, cadence=rl.every(2)).cadence == rl.every(2)
    with pytest.raises(GraphError, match=r"\(apply\): cadence must be one of STEP"):
        rl.fragment("f", "learner", _identity, cadence="every 2")
    with pytest.raises(GraphError, match="host_apply is for site 'host' only"):
        rl.fragment("f", "env", _identity, host_apply=_identity)

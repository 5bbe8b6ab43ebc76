"""Placement ``single`` (``jaxrl_fdg.policies.single``): the default, every fragment on one
device, every fusion mode, a lag of one iteration and several lanes allowed; its programs are
compiled from shapes unless the environment is a host simulator, whose state exists only once
``init`` has run."""

import jax

import jaxrl_fdg as rl
from jaxrl_fdg import policies, testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.policies.single import SINGLE, Single


def test_single_is_the_registered_default():
    assert policies.get("single") is SINGLE and isinstance(SINGLE, Single)
    resolved = resolve(testing.tiny("ppo"))
    assert resolved.placement is SINGLE
    assert SINGLE.fusion_modes == ("eager", "step", "fragment", "iteration", "scan")
    assert SINGLE.supports.policy_lags == (0, 1) and SINGLE.supports.lanes


def test_single_compiles_from_shapes_but_for_host_simulators():
    request = resolve(testing.tiny("ppo")).request
    assert SINGLE.compiles_from_shapes(request)
    assert not SINGLE.compiles_from_shapes(request._replace(env_on_host=True))


def test_its_key_is_the_seeds_and_its_loop_the_algorithms_own():
    resolved = resolve(testing.tiny("ppo", seed=7))
    testing.assert_same_bits(SINGLE.initial_key(resolved.request), jax.random.key(7))
    loop = rl.build_loop(resolved)
    assert (loop.info.halves, loop.info.lagged) == (1, False)
    assert [f.name for f in loop.graph.fragments] == ["env", "actor", "learner"]

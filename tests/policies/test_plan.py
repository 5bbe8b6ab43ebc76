"""The plan (``jaxrl_fdg.policies.plan``): programs compiled ahead of time, one by one or all at
once beside ``init``, each charged to its ``compile:<name>`` scope; a first ``advance`` compiles
what was not; metrics read back per iteration; a large state donated to the programs that
replace it. On a plan of the smallest kind: one program that counts."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.policies import plan as plans
from jaxrl_fdg.profiling import Timings


def _count(state: LoopState):
    """One iteration: every fragment's counter up by 1; metric ``total``, their sum before."""
    fragments = {k: v + 1 for k, v in state.fragments.items()}
    total = sum(v.sum() for v in state.fragments.values())
    return state._replace(fragments=fragments, iteration=state.iteration + 1), {"total": total}


class Counting(plans.Plan):
    mode = "counting"
    donating = frozenset({"count"})

    def _signatures(self, state):
        return {"count": (_count, (state,))}

    def _advance(self, state, n):
        rows = []
        for _ in range(n):
            state, metrics = self._call("count", state)
            rows.append(metrics)
        return state, rows


@pytest.fixture(scope="module")
def loop():
    """A loop record whose ``init`` gives each of the tiny PPO graph's fragments a counter
    ``[2]`` (the graph checks the state's fragments)."""
    info = rl.build_loop(resolve(testing.tiny("ppo"))).info

    def init(key):
        del key
        counters = {f.name: jnp.zeros(2, jnp.int32) for f in info.graph.fragments}
        return LoopState(counters, jax.random.key(0), jnp.zeros((), jnp.int32))

    return SimpleNamespace(init=init, info=info)


def test_init_is_a_compiled_program_and_advance_compiles_the_rest(loop):
    plan = Counting(loop, Timings("host"))
    state = plan.init(jax.random.key(0))
    assert set(plan.compiled) == {"init"} and "compile:init" in plan.timings.scopes
    state, pending = plan.advance(state, 3)  # compiles "count" first
    assert set(plan.compiled) == {"init", "count"} and "compile:count" in plan.timings.scopes
    # Counters of 3 fragments × 2 entries: sums 0, 6, 12 before each of the 3 iterations.
    np.testing.assert_array_equal(plan.collect(pending)["total"], [0, 6, 12])
    assert int(state.iteration) == 3


def test_a_state_that_is_not_the_graphs_is_refused(loop):
    plan = Counting(loop)
    state = loop.init(None)
    with pytest.raises(rl.ConfigError, match="stray"):
        plan.checked(state._replace(fragments={**state.fragments, "stray": jnp.zeros(2)}))


def test_start_compiles_every_program_at_once_and_extra_ones_behind(loop):
    plan, seen = Counting(loop, Timings("host")), []
    extra = {"double": (lambda x: x * 2, lambda state: (state.fragments["learner"],))}
    state = plan.start(jax.random.key(0), extra, before_init=lambda p: seen.append(set(p)))
    assert {"init", "count"} <= seen[0]
    assert set(plan.compiled) == {"init", "count", "double"}
    np.testing.assert_array_equal(plan.call("double", state.fragments["learner"] + 3), [6, 6])
    assert "double" in plan.timings.scopes  # a call is timed under its program's name
    by_hand = Counting(loop)
    reference = by_hand.init(jax.random.key(0))
    by_hand.compile(reference)
    testing.assert_same_bits(plan.advance(state, 2)[0], by_hand.advance(reference, 2)[0])


def test_a_state_is_donated_to_the_programs_that_replace_it_once_large(loop, monkeypatch):
    plan = Counting(loop)
    state = loop.init(None)
    assert not plan.donates("count", (state,))  # tens of bytes, not 256 MiB
    monkeypatch.setattr(plans, "DONATE_BYTES", 24)  # the counters alone: 3 × 2 int32
    assert plan.donates("count", (state,))
    assert not plan.donates("init", (state,))  # init replaces no state
    with jax.debug_nans(True):  # a re-run needs its inputs
        assert not plan.donates("count", (state,))


def test_programs_a_mode_runs_as_python_are_not_compiled(loop):
    class HostCounting(Counting):
        def _uncompiled(self):
            return {"count"}

    plan = HostCounting(loop)
    state = plan.init(jax.random.key(0))
    plan.compile(state)
    assert set(plan.compiled) == {"init"}
    _, pending = plan.advance(state, 1)
    np.testing.assert_array_equal(plan.collect(pending)["total"], [0])

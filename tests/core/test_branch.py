"""``branch.cond`` stays a branch in lanes: where no lane's predicate holds, no lane runs the
taken-when-true side (a vmapped ``lax.cond`` runs both for every lane), and each lane computes
what it computes alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import branch
from jaxrl_fdg.config import resolve
from jaxrl_fdg.policies.replication import replicated


def _counted(calls: list):
    def double(x):
        jax.debug.callback(lambda: calls.append(1))
        return 2.0 * x

    def f(x, pred):
        return branch.cond(pred, double, lambda x: x, x)

    return f


def test_outside_lanes_it_is_lax_cond():
    calls = []
    f = jax.jit(_counted(calls))
    assert float(f(3.0, True)) == 6.0 and float(f(3.0, False)) == 3.0
    jax.effects_barrier()
    assert len(calls) == 1


@pytest.mark.parametrize(
    "preds, ran", [((False, False, False), 0), ((False, True, False), 1), ((True,) * 3, 1)]
)
def test_in_lanes_the_branch_runs_only_where_a_lane_needs_it(preds, ran):
    calls = []
    f = jax.jit(branch.vmap(_counted(calls)))
    x = jnp.arange(1.0, 4.0)
    out = f(x, jnp.asarray(preds))
    jax.effects_barrier()
    assert len(calls) == ran  # a vmapped lax.cond would have run it in every case
    np.testing.assert_array_equal(out, np.where(preds, 2.0 * np.arange(1.0, 4.0), x))


def _conds(jaxpr) -> list[tuple[tuple[int, ...], bool]]:
    """Every cond in ``jaxpr``, nested ones included: (its predicate's shape, whether a branch
    holds a matrix product)."""
    found = []
    for eqn in jaxpr.eqns:
        inner = [
            sub
            for param in eqn.params.values()
            for sub in (param if isinstance(param, tuple | list) else (param,))
            if isinstance(sub, jax.extend.core.ClosedJaxpr | jax.extend.core.Jaxpr)
        ]
        inner = [getattr(sub, "jaxpr", sub) for sub in inner]
        if eqn.primitive.name == "cond":
            dots = any(_has_dot(sub) for sub in inner)
            found.append((tuple(eqn.invars[0].aval.shape), dots))
        for sub in inner:
            found += _conds(sub)
    return found


def _has_dot(jaxpr) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            return True
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr) and _has_dot(sub.jaxpr):
                    return True
    return False


def test_seeds_of_an_off_policy_learner_skip_its_warm_up_updates():
    # SAC's learner waits out its warm-up in a branch; three seeds in lanes keep that branch,
    # its updates inside it, on a predicate the lanes share (shape ()).
    config = rl.TrainConfig(algo="sac", env="Pendulum-v1", total_steps=64, out=None)
    config = config.replace(hparams={"learning_starts": 32, "batch_size": 8, "buffer_size": 64})
    loop = replicated(rl.build_loop(resolve(config)), 3)
    # Traced from shapes alone: nothing is computed.
    state = jax.eval_shape(loop.init, jax.eval_shape(jax.vmap(jax.random.key), jnp.arange(3)))
    state, trajectory, key = jax.eval_shape(loop.rollout, state)
    conds = _conds(jax.make_jaxpr(loop.learn)(state, trajectory, key).jaxpr)
    assert ((), True) in conds, conds

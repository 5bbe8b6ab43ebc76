"""V-trace (losses.vtrace) by hand and against GAE on policy; IMPALA without lag is A2C's
on-policy limit; with lag it runs every fusion mode alike and learns."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.fragments import losses


def _col(*values, dtype=jnp.float32):
    return jnp.asarray(values, dtype)[:, None]  # [T, B = 1]


def test_vtrace_by_hand():
    # T = 3, γ = 0.5, ρ = c = 1; step 1 terminates. Values are zero except V(s'_t).
    #   δ = [1 + 0.5·0, 2 + 0·9, 1 + 0.5·4] = [1, 2, 3]
    #   v_2 = 3; v_1 = 2 (the episode ends: no trace from step 2); v_0 = 1 + 0.5·v_1 = 2
    #   A_0 = 1 + 0.5·v_1 = 2; A_1 = 2 (terminal); A_2 = 1 + 0.5·V(s'_2) = 3
    args = (_col(0, 0, 0), _col(0, 9, 4), _col(1, 2, 1))
    terminated, truncated = _col(0, 1, 0, dtype=bool), _col(0, 0, 0, dtype=bool)
    targets, advantages = losses.vtrace(*args, terminated, truncated, _col(0, 0, 0), 0.5)
    np.testing.assert_allclose(targets[:, 0], [2.0, 2.0, 3.0])
    np.testing.assert_allclose(advantages[:, 0], [2.0, 2.0, 3.0])
    # Truncated instead of terminated at step 1: it bootstraps from V(s'_1) = 9 and still
    # stops the trace: v_1 = 2 + 0.5·9 = 6.5, v_0 = 1 + 0.5·6.5 = 4.25.
    targets, _ = losses.vtrace(*args, truncated, terminated, _col(0, 0, 0), 0.5)
    np.testing.assert_allclose(targets[:, 0], [4.25, 6.5, 3.0])
    # π/μ = 0.5 at step 0: ρ_0 = c_0 = 0.5, so δ_0 = 0.5 and v_0 = 0.5 + 0.5·0.5·v_1 = 1;
    # π/μ = 4 at step 2 is truncated to ρ̄ = 1.
    log_rho = jnp.log(_col(0.5, 1.0, 4.0))
    targets, advantages = losses.vtrace(*args, terminated, truncated, log_rho, 0.5)
    np.testing.assert_allclose(targets[:, 0], [1.0, 2.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(advantages[:, 0], [0.5 * (1 + 0.5 * 2), 2.0, 3.0], rtol=1e-6)


def test_vtrace_on_policy_is_gae_with_lambda_one():
    keys = jax.random.split(jax.random.key(0), 5)
    shape = (16, 3)
    r, v, v_final = (jax.random.normal(k, shape) for k in keys[:3])
    terminated = jax.random.uniform(keys[3], shape) < 0.1
    truncated = jax.random.uniform(keys[4], shape) < 0.1
    # V(s'_t) is V(s_{t+1}) where the episode goes on (the same state), another value where it
    # ended (its last state) and at the window's end.
    goes_on = ~(terminated | truncated)
    v_next = jnp.where(goes_on, jnp.concatenate([v[1:], v_final[-1:]]), v_final)
    v_next = v_next.at[-1].set(v_final[-1])
    gae_adv, gae_returns = losses.generalized_advantage_estimation(
        r, v, v_next, terminated, truncated, 0.9, 1.0
    )
    targets, advantages = losses.vtrace(v, v_next, r, terminated, truncated, jnp.zeros(shape), 0.9)
    np.testing.assert_allclose(targets, gae_returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(advantages, gae_adv, rtol=1e-5, atol=1e-5)


TINY = rl.TrainConfig(total_steps=8 * 5 * 4, out=None, progress=False, profile="off", log_every=2)


def test_without_lag_impala_is_a2c_with_n_step_returns():
    # The same actor, network, optimizer and weights; A2C's GAE with λ = 1 is V-trace with
    # every ratio 1. The two compute their targets with different operations: equal to rounding.
    same = {"ent_coef": 0.01, "max_grad_norm": 40.0, "gae_lambda": 1.0, "hidden_sizes": (16,)}
    impala = rl.train(TINY.replace(algo="impala", hparams={"hidden_sizes": (16,)}))
    a2c = rl.train(TINY.replace(algo="a2c", hparams=same))
    np.testing.assert_array_equal(impala.metrics["ratio_mean"], 1.0)  # the actor's own π
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        impala.state.fragments["learner"].params,
        a2c.state.fragments["learner"].params,
    )


def test_memory_is_refused():
    with pytest.raises(rl.ConfigError, match="impala supports feed-forward policies only"):
        rl.resolve(TINY.replace(algo="impala", hparams={"memory": "gru"}))


@pytest.mark.slow
def test_lagged_impala_is_the_same_under_every_fusion_mode():
    config = TINY.replace(algo="impala", policy_lag=1, hparams={"hidden_sizes": (16,)})
    runs = {mode: rl.train(config.replace(fusion=mode)) for mode in ("step", "fragment", "scan")}
    assert not np.all(runs["scan"].metrics["ratio_mean"] == 1.0)  # the lag is there to correct
    for mode in ("step", "fragment"):
        testing.assert_same_bits(runs[mode].state.fragments, runs["scan"].state.fragments, mode)


@pytest.mark.slow
def test_impala_learns_cartpole_with_asynchronous_actors():
    # Its defaults, learning one iteration behind. Seeds 0 and 1 ended at 488 and 372 (the
    # mean return over the last tenth of the run); random play averages about 22.
    returns = []
    for seed in (0, 1):
        m = rl.train(rl.TrainConfig(algo="impala", policy_lag=1, seed=seed, out=None)).metrics
        last = len(m["episodes"]) // 10
        returns.append(m["episode_return_sum"][-last:].sum() / m["episodes"][-last:].sum())
    assert np.mean(returns) >= 300, returns

"""Known answers for the return estimators and PPO losses (arithmetic in the comments)."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg.fragments import losses


def _gae_reference(r, v, v_next, term, trunc, gamma, lam):
    """Plain numpy loop, one environment at a time."""
    T, B = r.shape
    adv = np.zeros((T, B))
    for b in range(B):
        a = 0.0
        for t in reversed(range(T)):
            delta = r[t, b] + gamma * (1 - term[t, b]) * v_next[t, b] - v[t, b]
            a = delta + gamma * lam * (1 - (term[t, b] or trunc[t, b])) * a
            adv[t, b] = a
    return adv


def test_gae_known_answer_with_termination_and_truncation():
    # γ = λ = 0.5, so γλ = 0.25. Column 0 has a truncation at t=1 and a termination at t=2.
    #   δ0 = 1 + .5·20  − 10 = 1       (continues: V(s'0) = V(s1) = 20)
    #   δ1 = 2 + .5·100 − 20 = 32      (truncated: bootstrap from the final observation's 100)
    #   δ2 = 3 + 0      − 30 = −27     (terminated: a terminal state is worth 0)
    #   δ3 = 4 + .5·50  − 40 = −11     (window ends: one-step TD error)
    #   A3 = −11; A2 = −27 (done); A1 = 32 (done); A0 = 1 + .25·32 = 9
    # Column 1, no boundaries, δ = 1 everywhere: A3 = 1, A2 = 1.25, A1 = 1.3125, A0 = 1.328125.
    r = jnp.array([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0], [4.0, 1.0]])
    v = jnp.array([[10.0, 0.0], [20.0, 0.0], [30.0, 0.0], [40.0, 0.0]])
    v_next = jnp.array([[20.0, 0.0], [100.0, 0.0], [40.0, 0.0], [50.0, 0.0]])
    term = jnp.array([[False, False], [False, False], [True, False], [False, False]])
    trunc = jnp.array([[False, False], [True, False], [False, False], [False, False]])
    adv, ret = losses.generalized_advantage_estimation(r, v, v_next, term, trunc, 0.5, 0.5)
    np.testing.assert_allclose(adv[:, 0], [9.0, 32.0, -27.0, -11.0])
    np.testing.assert_allclose(adv[:, 1], [1.328125, 1.3125, 1.25, 1.0])
    np.testing.assert_allclose(ret[:, 0], [19.0, 52.0, 3.0, 29.0])


def test_gae_matches_reference_loop_on_random_data():
    rng = np.random.default_rng(0)
    T, B = 37, 5
    r, v, v_next = (rng.normal(size=(T, B)) for _ in range(3))
    term, trunc = rng.random((T, B)) < 0.1, rng.random((T, B)) < 0.1
    adv, _ = losses.generalized_advantage_estimation(
        *map(jnp.asarray, (r, v, v_next, term, trunc)), 0.99, 0.95
    )
    np.testing.assert_allclose(
        adv, _gae_reference(r, v, v_next, term, trunc, 0.99, 0.95), rtol=1e-5, atol=1e-5
    )


def test_lambda_one_is_monte_carlo_and_zero_is_td():
    # V(s_t) = 0 inside the window, V(s'_2) = 10 beyond it, r = 1, γ = 0.5, no episode ends.
    # λ = 0 (one-step TD): δ = [1, 1, 1 + .5·10] = [1, 1, 6].
    # λ = 1 (Monte Carlo + bootstrap): A_t = Σ_k γ^k r_{t+k} + γ^{3−t}·10:
    #   A2 = 1 + 5 = 6;  A1 = 1 + .5 + .25·10 = 4;  A0 = 1 + .5 + .25 + .125·10 = 3.
    r = jnp.ones((3, 1))
    v = jnp.zeros((3, 1))
    v_next = jnp.array([[0.0], [0.0], [10.0]])
    no = jnp.zeros((3, 1), bool)
    td, _ = losses.generalized_advantage_estimation(r, v, v_next, no, no, 0.5, 0.0)
    np.testing.assert_allclose(td[:, 0], [1.0, 1.0, 6.0])
    mc, _ = losses.generalized_advantage_estimation(r, v, v_next, no, no, 0.5, 1.0)
    np.testing.assert_allclose(mc[:, 0], [3.0, 4.0, 6.0])


def test_clipped_surrogate_known_answer():
    # ρ = 1.5, ε = 0.2.  A = +2: min(3.0, 1.2·2 = 2.4) = 2.4.  A = −2: min(−3.0, −2.4) = −3.0.
    # loss = −mean(2.4, −3.0) = 0.3; both samples are clipped (|ρ − 1| = .5 > .2).
    old = jnp.zeros(2)
    new = jnp.log(jnp.array([1.5, 1.5]))
    loss, clip = losses.clipped_surrogate_loss(new, old, jnp.array([2.0, -2.0]), 0.2)
    assert float(loss) == pytest.approx(0.3, rel=1e-6)
    assert float(clip) == 1.0


def test_clipped_value_loss_known_answer():
    # V = 3, V_old = 1, G = 2, ε = .5: V_clip = 1.5; max((3−2)², (1.5−2)²) = 1; loss = ½.
    loss = losses.clipped_value_loss(jnp.array([3.0]), jnp.array([1.0]), jnp.array([2.0]), 0.5)
    assert float(loss) == pytest.approx(0.5)


def test_approx_kl_is_zero_for_identical_policies_and_positive_otherwise():
    lp = jnp.log(jnp.array([0.2, 0.5, 0.3]))
    assert float(losses.approx_kl(lp, lp)) == 0.0
    assert float(losses.approx_kl(lp + 0.1, lp)) > 0.0


def test_normalize_zero_mean_unit_std():
    x = losses.normalize(jnp.array([1.0, 2.0, 3.0, 10.0]))
    assert float(x.mean()) == pytest.approx(0.0, abs=1e-6)
    assert float(x.std()) == pytest.approx(1.0, rel=1e-5)

"""Gaussian and tanh-squashed Gaussian against closed forms, scipy and numerical integration."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from jaxrl_fdg.fragments import distributions as dist

MEAN = np.array([[0.3, -1.2, 0.0], [2.0, 0.5, -0.4]], np.float32)
LOG_STD = np.array([[-0.5, 0.2, 0.0], [0.7, -1.5, 0.1]], np.float32)


def test_gaussian_log_prob_and_entropy_match_scipy():
    x = np.array([[0.1, -2.0, 1.5], [3.3, 0.45, -0.1]], np.float32)
    expected = stats.norm.logpdf(x, MEAN, np.exp(LOG_STD)).sum(-1)  # summed over action dims
    np.testing.assert_allclose(dist.gaussian_log_prob(MEAN, LOG_STD, x), expected, rtol=1e-5)
    entropy = stats.norm(MEAN, np.exp(LOG_STD)).entropy().sum(-1)
    np.testing.assert_allclose(dist.gaussian_entropy(LOG_STD), entropy, rtol=1e-5)
    np.testing.assert_array_equal(dist.gaussian_mode(MEAN), MEAN)


def test_gaussian_samples_have_the_right_moments_and_are_reparameterised():
    n = 200_000
    mean, log_std = jnp.array([1.0, -2.0]), jnp.array([0.0, np.log(0.5)])
    x = dist.gaussian_sample(jax.random.key(0), jnp.broadcast_to(mean, (n, 2)), log_std)
    assert x.shape == (n, 2)
    # Standard errors: σ/√n ≈ .0022 and .0011 for the means, σ/√(2n) for the stds; 4σ bands.
    std = np.array([1.0, 0.5])
    assert np.all(np.abs(x.mean(0) - mean) < 4 * std / np.sqrt(n)), x.mean(0)
    assert np.all(np.abs(x.std(0) - std) < 4 * std / np.sqrt(2 * n)), x.std(0)
    # x = μ + σ ε: ∂x/∂μ = 1 and ∂x/∂log σ = x − μ.
    key = jax.random.key(1)
    d_mean = jax.grad(lambda m: dist.gaussian_sample(key, m, log_std).sum())(mean)
    np.testing.assert_allclose(d_mean, [1.0, 1.0])
    d_log_std = jax.grad(lambda s: dist.gaussian_sample(key, mean, s).sum())(log_std)
    np.testing.assert_allclose(
        d_log_std, dist.gaussian_sample(key, mean, log_std) - mean, rtol=1e-6, atol=1e-7
    )


def test_tanh_log_det_jacobian_is_exact_and_stays_finite():
    u = np.linspace(-6.0, 6.0, 101)
    exact = np.log1p(-(np.tanh(u) ** 2))  # float64: no saturation in this range
    got = dist.tanh_log_det_jacobian(jnp.asarray(u, jnp.float32)[:, None])
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)
    # Far out, tanh(u) rounds to ±1 in float32 and the naive form is −inf; the stable one follows
    # the asymptote log(1 − tanh² u) → 2(log 2 − |u|).
    far = jnp.array([[-50.0], [-20.0], [20.0], [50.0]])
    with np.errstate(divide="ignore"):
        assert np.all(np.isinf(np.log1p(-(np.tanh(np.float32(far)) ** 2))))
    np.testing.assert_allclose(
        dist.tanh_log_det_jacobian(far), 2 * (np.log(2) - np.abs(far[:, 0])), rtol=1e-6
    )


def test_tanh_gaussian_log_prob_is_the_change_of_variables():
    key = jax.random.key(2)
    mean, log_std = jnp.broadcast_to(MEAN, (500, 2, 3)), jnp.asarray(LOG_STD)
    action, log_prob = dist.tanh_gaussian_sample(key, mean, log_std)
    assert action.shape == (500, 2, 3) and log_prob.shape == (500, 2)
    # The same key draws the same pre-squash sample u, so the density can be checked in float64:
    #   log π(a) = Σ_i [log N(u_i; μ_i, σ_i) − log(1 − tanh(u_i)²)].
    u = np.asarray(dist.gaussian_sample(key, mean, log_std), np.float64)
    np.testing.assert_allclose(action, np.tanh(u), rtol=1e-6, atol=1e-6)
    expected = (stats.norm.logpdf(u, MEAN, np.exp(LOG_STD)) - np.log1p(-(np.tanh(u) ** 2))).sum(-1)
    np.testing.assert_allclose(log_prob, expected, rtol=1e-4, atol=1e-4)


def test_tanh_gaussian_density_integrates_to_one_and_matches_its_samples():
    mean, log_std = jnp.array([0.4]), jnp.array([np.log(0.8)])
    # p(a) for a on a fine grid of (−1, 1), from the library's own pieces at u = atanh(a).
    a = np.linspace(-1 + 1e-6, 1 - 1e-6, 400_001)
    u = jnp.asarray(np.arctanh(a), jnp.float32)[:, None]
    log_p = dist.gaussian_log_prob(mean, log_std, u) - dist.tanh_log_det_jacobian(u)
    p = np.exp(np.asarray(log_p, np.float64))
    np.testing.assert_allclose(np.trapezoid(p, a), 1.0, atol=1e-4)
    # E[a] by quadrature against the mean of 100k samples (std of a < 1: 4σ band of 0.013).
    samples, _ = dist.tanh_gaussian_sample(
        jax.random.key(3), jnp.broadcast_to(mean, (100_000, 1)), log_std
    )
    assert np.all(np.abs(samples) <= 1.0)
    np.testing.assert_allclose(samples.mean(), np.trapezoid(a * p, a), atol=0.013)


def test_tanh_gaussian_saturated_sample_keeps_a_finite_log_prob_and_gradient():
    mean, log_std = jnp.array([12.0, -15.0]), jnp.array([-2.0, -2.0])
    action, log_prob = dist.tanh_gaussian_sample(jax.random.key(4), mean, log_std)
    np.testing.assert_array_equal(action, [1.0, -1.0])  # tanh rounds to ±1 in float32
    assert np.isfinite(log_prob)
    grads = jax.grad(lambda m: dist.tanh_gaussian_sample(jax.random.key(4), m, log_std)[1])(mean)
    assert np.all(np.isfinite(grads))
    np.testing.assert_allclose(dist.tanh_gaussian_mode(mean), np.tanh(mean))


def test_categorical_log_prob_is_the_gathered_log_softmax_and_its_gradient_bit_for_bit():
    # A mask and a sum instead of a gather: every other term is an exact zero, so the value and
    # the gradient are the gather's to the bit (the gather's gradient is a scatter-add).
    logits = jax.random.normal(jax.random.key(0), (64, 5)) * 3.0
    actions = jax.random.randint(jax.random.key(1), (64,), 0, 5)
    weights = jax.random.normal(jax.random.key(2), (64,))

    def gathered(logits):
        log_probs = jax.nn.log_softmax(logits)
        return jnp.take_along_axis(log_probs, actions[:, None], axis=-1)[:, 0]

    for fn in (jax.jit, lambda f: f):  # compiled and op by op
        np.testing.assert_array_equal(
            fn(dist.categorical_log_prob)(logits, actions), fn(gathered)(logits)
        )
        np.testing.assert_array_equal(
            fn(jax.grad(lambda x: (dist.categorical_log_prob(x, actions) * weights).sum()))(logits),
            fn(jax.grad(lambda x: (gathered(x) * weights).sum()))(logits),
        )

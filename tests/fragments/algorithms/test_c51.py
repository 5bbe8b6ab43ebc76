"""C51: the categorical projection's known answers, the head on the DQN machinery, validation,
and that it learns CartPole."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.algorithms import c51
from jaxrl_fdg.fragments.networks import CategoricalQNetwork

TINY = rl.TrainConfig(
    algo="c51",
    total_steps=2 * 8 * 3,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    hparams={"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125},
)

# Five atoms -2, -1, 0, 1, 2 (Δz = 1).
SUPPORT = jnp.linspace(-2.0, 2.0, 5)


def test_a_shift_between_atoms_splits_mass_in_proportion():
    # All mass on atom 0 (z = 0), shifted by r = 0.25 with γ = 1: 0.25 lies a quarter of the way
    # from 0 to 1, so 0 keeps 1 − 0.25 = 0.75 and 1 receives 0.25.
    p = jnp.array([0.0, 0.0, 1.0, 0.0, 0.0])
    m = losses.categorical_td_target(jnp.array(0.25), jnp.array(1.0), p, SUPPORT)
    np.testing.assert_allclose(m, [0, 0, 0.75, 0.25, 0], atol=1e-6)


def test_shift_and_scale_of_the_whole_support():
    # Uniform p = 0.2 on z = -2..2; r = 0.5, γ = 0.5 gives atoms -0.5, 0, 0.5, 1, 1.5.
    # -0.5 → ½ to -1, ½ to 0;  0 → 0;  0.5 → ½ to 0, ½ to 1;  1 → 1;  1.5 → ½ to 1, ½ to 2.
    # So m = 0.2 · [0, ½, ½ + 1 + ½, ½ + 1 + ½, ½] = [0, 0.1, 0.4, 0.4, 0.1].
    p = jnp.full((5,), 0.2)
    m = losses.categorical_td_target(jnp.array(0.5), jnp.array(0.5), p, SUPPORT)
    np.testing.assert_allclose(m, [0, 0.1, 0.4, 0.4, 0.1], atol=1e-6)


def test_values_outside_the_support_clip_to_the_end_atoms():
    # r = 3 with γ = 1 moves every atom to 1..5: 1 stays at 1, the rest (≥ 2) clip to 2.
    # With p = [0.1, 0.2, 0.3, 0.25, 0.15]: m[1] = 0.1, m[2] = 0.2 + 0.3 + 0.25 + 0.15 = 0.9.
    p = jnp.array([0.1, 0.2, 0.3, 0.25, 0.15])
    m = losses.categorical_td_target(jnp.array(3.0), jnp.array(1.0), p, SUPPORT)
    np.testing.assert_allclose(m, [0, 0, 0, 0.1, 0.9], atol=1e-6)
    # And far below: everything lands on -2.
    m = losses.categorical_td_target(jnp.array(-50.0), jnp.array(1.0), p, SUPPORT)
    np.testing.assert_allclose(m, [1, 0, 0, 0, 0], atol=1e-6)


def test_a_terminal_transition_collapses_to_the_reward():
    # discount = 0: every atom becomes r = -0.6, which is 0.4 of the way from -1 to 0
    # (-1 + 0.4 = -0.6), so -1 gets 0.6 and 0 gets 0.4, whatever p was.
    p = jnp.array([0.5, 0.0, 0.0, 0.0, 0.5])
    m = losses.categorical_td_target(jnp.array(-0.6), jnp.array(0.0), p, SUPPORT)
    np.testing.assert_allclose(m, [0, 0.6, 0.4, 0, 0], atol=1e-6)


def test_projection_conserves_mass_in_a_batch():
    key_p, key_r, key_d = jax.random.split(jax.random.key(0), 3)
    support = jnp.linspace(-10.0, 10.0, 51)
    p = jax.nn.softmax(jax.random.normal(key_p, (64, 51)), axis=-1)
    reward = 8.0 * jax.random.normal(key_r, (64,))
    discount = jnp.where(jax.random.uniform(key_d, (64,)) < 0.2, 0.0, 0.99)
    m = losses.categorical_td_target(reward, discount, p, support)
    assert m.shape == (64, 51)
    assert float(m.min()) >= 0.0
    np.testing.assert_allclose(m.sum(-1), 1.0, rtol=1e-5)
    # The mean moves to clip(r + γ E[z]) exactly where nothing clips (all targets inside).
    inside = np.asarray(
        (jnp.abs(reward[:, None] + discount[:, None] * support) <= 10.0).all(-1), bool
    )
    expected = np.asarray(reward + discount * (p * support).sum(-1))
    np.testing.assert_allclose((m * support).sum(-1)[inside], expected[inside], atol=1e-4)


def test_cross_entropy_is_minimal_at_the_target():
    target = jnp.array([0.1, 0.6, 0.3])
    at_target = losses.categorical_cross_entropy(jnp.log(target), target)
    # −Σ m log m = entropy of the target.
    np.testing.assert_allclose(at_target, -(target * jnp.log(target)).sum(), rtol=1e-6)
    assert float(losses.categorical_cross_entropy(jnp.zeros(3), target)) > float(at_target)


def test_q_values_are_the_expectation_over_atoms():
    net = CategoricalQNetwork(num_actions=3, num_atoms=5, hidden_sizes=(8,))
    obs = jax.random.normal(jax.random.key(0), (4, 6))
    params = net.init(jax.random.key(1), obs)
    logits = net.apply(params, obs)
    assert logits.shape == (4, 3, 5)
    q = c51.expected_q(logits, SUPPORT)
    probs = np.asarray(jax.nn.softmax(logits, -1))
    np.testing.assert_allclose(q, (probs * np.asarray(SUPPORT)).sum(-1), rtol=1e-5, atol=1e-6)
    # Known answer: probabilities ½ on -1 and ½ on 2 → Q = ½ (-1) + ½ 2 = 0.5.
    two_atoms = jnp.log(jnp.array([1e-9, 0.5, 1e-9, 1e-9, 0.5]))
    np.testing.assert_allclose(c51.expected_q(two_atoms, SUPPORT), 0.5, atol=1e-6)


def test_dueling_head_centres_advantages_atom_by_atom():
    net = CategoricalQNetwork(num_actions=3, num_atoms=5, hidden_sizes=(8,), dueling=True)
    obs = jax.random.normal(jax.random.key(0), (4, 6))
    params = net.init(jax.random.key(1), obs)
    logits = net.apply(params, obs)
    layers = params["params"]
    hidden = jax.nn.relu(obs @ layers["Dense_0"]["kernel"] + layers["Dense_0"]["bias"])
    value = hidden @ layers["Dense_2"]["kernel"] + layers["Dense_2"]["bias"]
    # logits = V + A − mean_a A, so the mean over actions is the value stream.
    np.testing.assert_allclose(logits.mean(-2), value, rtol=1e-5, atol=1e-5)


def test_learner_steps_and_prioritized_replay_takes_cross_entropy():
    config = TINY.replace(hparams={**TINY.hparams, "replay": "prioritized", "double_q": True})
    result = rl.train(config)
    m = result.metrics
    # Iteration 1 collects the 16 warm-up steps, so updates run from then on: 2 per iteration.
    np.testing.assert_array_equal(m["updates"], [2, 2, 2])
    assert (m["loss"] > 0).all()
    # Cross-entropies on 51 atoms near the uniform start: about log 51 ≈ 3.9.
    assert 2.0 < float(m["cross_entropy"][-1]) < 6.0
    replay = result.state.fragments["replay"]
    leaves = np.asarray(replay.tree.levels[0][: int(replay.size)])
    assert len(np.unique(leaves)) > 1


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"v_min": 5.0, "v_max": 5.0}, "v_min = 5.0 must be below v_max = 5.0"),
        ({"v_min": 10.0, "v_max": -10.0}, "v_min = 10.0 must be below v_max = -10.0"),
        ({"num_atoms": 1}, "num_atoms must be an integer ≥ 2, got 1"),
        ({"num_atoms": 0}, "num_atoms must be an integer ≥ 2, got 0"),
        ({"v_max": float("inf")}, "v_max must be a finite number, got inf"),
        ({"utd_ratio": 0.1}, "gives 1.6 updates per iteration"),
    ],
)
def test_bad_hyperparameters_are_rejected_before_compiling(overrides, message):
    with pytest.raises(rl.ConfigError, match=message):
        resolve(TINY.replace(hparams={**TINY.hparams, **overrides}))


def test_continuous_actions_are_rejected():
    with pytest.raises(rl.ConfigError, match="c51 needs a Discrete action space, got Box"):
        resolve(TINY.replace(env="Pendulum-v1"))


# -- learning ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_c51_learns_cartpole():
    # The issue's bar for CartPole-v1: mean return ≥ 400. The run is c51's default (300,000 steps
    # of 4 envs × 4) for 4 seeds vmapped in one program; the mean over seeds of each one's last
    # 32,000 steps, ε = 0.05 exploration included. One seed's last window is a coin toss: like
    # DQN's, c51's CartPole curves reach 500 and dip to ~250 for a window now and then.
    config = rl.TrainConfig(algo="c51", seed=0, num_seeds=4, out=None, progress=False)
    m = rl.train(config).metrics
    window = 2_000  # iterations of 16 env steps
    episodes = m["episodes"][-window:].sum(axis=0)  # [seeds]
    final = m["episode_return_sum"][-window:].sum(axis=0) / np.maximum(episodes, 1)
    assert final.mean() >= 400, final

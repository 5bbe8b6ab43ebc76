"""PQN: its Q(λ) targets, its network, its actor and learner, the configurations it rejects, and
that it learns CartPole-v1 with its default settings."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.loop import Transition
from jaxrl_fdg.envs.spaces import Box
from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.algorithms.pqn import PQNConfig, check, make_batch
from jaxrl_fdg.fragments.networks import QNetwork
from jaxrl_fdg.testing import first_call

TINY = rl.TrainConfig(
    algo="pqn",
    total_steps=2 * 8 * 3,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    hparams={"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,)},
)

# One env, T = 4: termination after step 1, truncation after step 2, the window ends after 3.
R = jnp.array([[1.0], [2.0], [3.0], [4.0]])
Q_NEXT = jnp.array([[10.0], [20.0], [30.0], [40.0]])  # max_a Q(s'_t, a)
TERM = jnp.array([[False], [True], [False], [False]])
TRUNC = jnp.array([[False], [False], [True], [False]])
G = 0.5


def test_lambda_zero_gives_one_step_targets():
    targets = losses.q_lambda_returns(R, Q_NEXT, TERM, TRUNC, G, 0.0)
    # r + γ (1 − terminated) q': 1 + .5·10 = 6; 2 (terminal); 3 + .5·30 = 18 (truncation
    # bootstraps); 4 + .5·40 = 24.
    np.testing.assert_allclose(targets[:, 0], [6.0, 2.0, 18.0, 24.0])


def test_lambda_one_gives_returns_to_the_bootstrap():
    targets = losses.q_lambda_returns(R, Q_NEXT, TERM, TRUNC, G, 1.0)
    # t=0: r0 + γ r1, then the episode terminates: 1 + .5·2 = 2; t=1: 2.
    # t=2: truncated, so only its own bootstrap: 3 + .5·30 = 18 (q'_1 = 20 is never used).
    # t=3: the window ends: 4 + .5·40 = 24.
    np.testing.assert_allclose(targets[:, 0], [2.0, 2.0, 18.0, 24.0])
    # Without episode ends, λ = 1 is the discounted sum to the window's end plus its bootstrap:
    # t=0: 1 + .5·2 + .25·3 + .125·4 + .0625·40 = 5.75.
    no_end = jnp.zeros_like(TERM)
    targets = losses.q_lambda_returns(R, Q_NEXT, no_end, no_end, G, 1.0)
    np.testing.assert_allclose(targets[:, 0], [5.75, 9.5, 15.0, 24.0])


def test_intermediate_lambda_mixes_bootstrap_and_return():
    no_end = jnp.zeros_like(TERM)
    targets = losses.q_lambda_returns(R[2:], Q_NEXT[2:], no_end[2:], no_end[2:], G, 0.25)
    # t=1 (last): 4 + .5·40 = 24.  t=0: 3 + .5·(.75·30 + .25·24) = 3 + .5·28.5 = 17.25.
    np.testing.assert_allclose(targets[:, 0], [17.25, 24.0])


def test_q_lambda_equals_gae_returns_on_consistent_values():
    # GAE's returns (A + V) are the λ-return built from V(s') wherever V(s_{t+1}) = V(s'_t): give
    # GAE v_{t+1} = q'_t inside each episode, anything at an episode's first step.
    key_r, key_q, key_v = jax.random.split(jax.random.key(0), 3)
    r = jax.random.normal(key_r, (6, 3))
    q_next = jax.random.normal(key_q, (6, 3))
    term = jnp.zeros((6, 3), bool).at[2, 0].set(True).at[4, 2].set(True)
    trunc = jnp.zeros((6, 3), bool).at[3, 1].set(True)
    first = jnp.concatenate([jnp.ones((1, 3), bool), (term | trunc)[:-1]])
    v = jnp.where(first, jax.random.normal(key_v, (6, 3)), jnp.roll(q_next, 1, axis=0))
    _, gae_returns = losses.generalized_advantage_estimation(r, v, q_next, term, trunc, 0.9, 0.7)
    targets = losses.q_lambda_returns(r, q_next, term, trunc, 0.9, 0.7)
    np.testing.assert_allclose(targets, gae_returns, rtol=1e-5, atol=1e-6)


def test_layer_norm_follows_each_hidden_dense_layer():
    net = QNetwork(num_actions=2, hidden_sizes=(8, 8), layer_norm=True)
    obs = jax.random.normal(jax.random.key(0), (5, 4))
    params = net.init(jax.random.key(1), obs)["params"]
    assert sorted(params) == ["Dense_0", "Dense_1", "Dense_2", "LayerNorm_0", "LayerNorm_1"]
    x = obs
    for i in range(2):
        h = x @ params[f"Dense_{i}"]["kernel"] + params[f"Dense_{i}"]["bias"]
        h = (h - h.mean(-1, keepdims=True)) / jnp.sqrt(h.var(-1, keepdims=True) + 1e-6)
        x = jax.nn.relu(h * params[f"LayerNorm_{i}"]["scale"] + params[f"LayerNorm_{i}"]["bias"])
    q = x @ params["Dense_2"]["kernel"] + params["Dense_2"]["bias"]
    np.testing.assert_allclose(net.apply({"params": params}, obs), q, rtol=1e-5, atol=1e-5)


def test_targets_bootstrap_from_the_online_network_at_next_observation():
    config = resolve(TINY)
    net = QNetwork(2, (16,), layer_norm=True)
    params = net.init(jax.random.key(0), jnp.zeros(4))
    T, B = 3, 2
    next_obs = jax.random.normal(jax.random.key(1), (T, B, 4))
    traj = Transition(
        observation=jnp.zeros((T, B, 4)),
        action=jnp.zeros((T, B), jnp.int32),
        reward=jnp.ones((T, B)),
        terminated=jnp.zeros((T, B), bool).at[0, 0].set(True),
        truncated=jnp.zeros((T, B), bool).at[1, 1].set(True),
        next_observation=next_obs,
        extras={},
        info={},
    )
    batch = make_batch(net, params, traj, config.hparams)
    q_next = net.apply(params, next_obs).max(-1)
    expected = losses.q_lambda_returns(
        0.1 * traj.reward, q_next, traj.terminated, traj.truncated, 0.99, 0.95
    )  # reward_scale, γ and λ by default
    assert batch.target.shape == (T * B,) and batch.observation.shape == (T * B, 4)
    np.testing.assert_allclose(batch.target, expected.reshape(-1), rtol=1e-6)
    assert float(batch.target[0]) == pytest.approx(0.1)  # terminated at once: the reward alone


def test_actor_counts_env_steps_and_decays_epsilon():
    loop = rl.build_loop(resolve(TINY))
    state = loop.init(jax.random.key(0))
    inputs = first_call(loop, state, jax.random.key(1)).inputs  # the actor's
    assert sorted(inputs) == ["observation", "params"]
    q = QNetwork(2, (16,), layer_norm=True).apply(inputs["params"], inputs["observation"])
    greedy = np.asarray(jnp.argmax(q, -1))

    def greedy_share(steps):
        act = jax.jit(jax.vmap(lambda k: loop.calls[0](jnp.int32(steps), inputs, k)[:2]))
        counts, out = act(jax.random.split(jax.random.key(2), 2000))
        assert (np.asarray(counts) == steps + 2).all()
        return float((np.asarray(out["action"]) == greedy).mean())

    # ε = 1 at the start: uniform over 2 actions. After 20% of the 48-step run: ε = 0.05.
    assert abs(greedy_share(0) - 0.5) < 0.03
    assert abs(greedy_share(10) - 0.975) < 0.01


def test_learner_steps_every_minibatch():
    result = rl.train(TINY)
    m = result.metrics
    assert m["loss"].shape == (3,) and np.isfinite(m["loss"]).all()
    # 2 epochs × 2 minibatches × 3 iterations = 12 RAdam steps (and learning-rate schedule steps).
    opt_state = result.state.fragments["learner"].opt_state
    counts = [int(c) for _, c in optax.tree_utils.tree_get_all_with_path(opt_state, "count")]
    assert counts and all(c == 12 for c in counts), counts


def test_continuous_actions_are_rejected():
    with pytest.raises(rl.ConfigError, match="pqn needs a Discrete action space .* got Box"):
        resolve(TINY.replace(env="Pendulum-v1"))
    ctx = resolve(TINY).context
    with pytest.raises(rl.ConfigError, match="for continuous actions use sac, td3, ddpg or ppo"):
        check(dataclasses.replace(ctx, action_space=Box(-1.0, 1.0, (1,))))


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"num_minibatches": 3}, r"num_envs × rollout_len = 16 does not divide into "),
        ({"q_lambda": 1.5}, r"q_lambda must be in \[0.0, 1.0\], got 1.5"),
        ({"epsilon_end": -0.1}, r"epsilon_end must be in \[0.0, 1.0\], got -0.1"),
        ({"reward_scale": -1.0}, "reward_scale must be a non-negative number"),
        ({"update_epochs": 0}, "update_epochs must be a positive integer, got 0"),
        ({"hidden_sizes": ()}, "hidden_sizes must name at least one layer size"),
        ({"activation": "elu"}, r"unknown activation 'elu' \(valid: tanh, relu, gelu, silu\)"),
        ({"lr": 0.0}, r"lr must be in \(0.0, 1.0\], got 0.0"),
    ],
)
def test_bad_configurations_are_rejected_before_compiling(overrides, message):
    with pytest.raises(rl.ConfigError, match=message):
        resolve(TINY.replace(hparams={**TINY.hparams, **overrides}))


def test_default_run_is_the_reference_cartpole_one():
    # purejaxql's config/alg/pqn_cartpole.yaml: 32 envs × 64 steps, 5e5 steps, 16 minibatches.
    config = resolve(rl.TrainConfig(algo="pqn", out=None)).config
    assert (config.env, config.total_steps, config.num_envs, config.rollout_len) == (
        "CartPole-v1",
        500_000,
        32,
        64,
    )
    assert PQNConfig().num_minibatches == 16 and PQNConfig().layer_norm


@pytest.mark.slow
def test_default_pqn_learns_cartpole():
    # Threshold: the issue's 400, of CartPole-v1's maximum 500. The paper's reference code
    # (purejaxql, pqn_gymnax.py with config/alg/pqn_cartpole.yaml, whose settings these defaults
    # take, but for ε ending at 0.05) is reported to learn CartPole in seconds on a GPU (its
    # README's CartPole figure; the exact curve was not checked here). Measured: the mean return
    # of the training episodes, ε-greedy exploration included, over the last 24 iterations (49k
    # steps) of the default run: seeds 0, 1, 2 averaged 481, 500, 497 (2026-11, 2-core CPU shared
    # with other jobs: 47-65 s of run and 3-6 s of compilation each). Two seeds are run here.
    for seed in (0, 1):
        metrics = rl.train(rl.TrainConfig(algo="pqn", seed=seed, out=None, progress=False)).metrics
        last = slice(-24, None)
        mean = metrics["episode_return_sum"][last].sum() / metrics["episodes"][last].sum()
        assert mean >= 400.0, (seed, mean)

"""A2C: one update against a hand-written step, its options, continuous actions, and that it
learns CartPole-v1."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.fragments.algorithms import actor_critic as ac
from jaxrl_fdg.fragments.algorithms.a2c import A2CConfig


def _config(**changes):
    """SB3's A2C shape: 8 envs × 5 steps per update; two updates."""
    config = rl.TrainConfig(
        algo="a2c", total_steps=8 * 5 * 2, num_envs=8, rollout_len=5, out=None, progress=False
    )
    return config.replace(**changes)


def _n_step_returns(r, v_next, terminated, truncated, gamma):
    """G_t = r_t + γ G_{t+1} inside an episode; at an episode's end or the rollout's,
    G_t = r_t + γ (1 − terminated_t) V(s'_t). Plain numpy, one env at a time."""
    T, B = r.shape
    g = np.zeros((T, B))
    for b in range(B):
        for t in reversed(range(T)):
            if terminated[t, b] or truncated[t, b] or t == T - 1:
                bootstrap = 0.0 if terminated[t, b] else v_next[t, b]
            else:
                bootstrap = g[t + 1, b]
            g[t, b] = r[t, b] + gamma * bootstrap
    return g


def test_one_update_is_an_rmsprop_step_on_the_n_step_actor_critic_loss():
    # 32 steps, so that some of CartPole's random-policy episodes (about 20 steps) end inside.
    resolved = resolve(_config(rollout_len=32, total_steps=8 * 32 * 2))
    hp, loop = resolved.hparams, rl.build_loop(resolved)
    state, traj, key = jax.jit(loop.rollout)(jax.jit(loop.init)(jax.random.key(0)))
    assert bool(jnp.any(traj.terminated))
    before = state.fragments["learner"]
    after, out = jax.jit(loop.info.learner.apply)(before, {"trajectory": traj}, key)

    # By hand, as SB3 computes it: n-step returns, the A2C loss, global-norm clipping, then
    # PyTorch's RMSprop from a zero mean square: v = (1 − α) g², p ← p − lr · g / (√v + ε).
    policy = ac.Policy(resolved.context)
    v_next = jax.jit(policy.value)(before.params, traj.next_observation)
    g = _n_step_returns(
        *map(np.asarray, (traj.reward, v_next, traj.terminated, traj.truncated)), hp.gamma
    )
    target = jnp.asarray(g, jnp.float32)
    advantage = target - traj.extras["value"]

    def loss(params):
        logits, value = policy.net.apply(params, traj.observation)
        log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), traj.action[..., None], -1)
        # SB3's A2C loss with its defaults: policy gradient + 0.5 · MSE(G, V), no entropy term.
        return -(log_prob[..., 0] * advantage).mean() + 0.5 * ((value - target) ** 2).mean()

    # The step itself in numpy (op by op in JAX it compiled one program per op and shape).
    grads = jax.tree.map(np.asarray, jax.jit(jax.grad(loss))(before.params))
    norm = np.sqrt(sum(np.sum(x**2) for x in jax.tree.leaves(grads)))
    grads = jax.tree.map(lambda x: x * min(1.0, hp.max_grad_norm / norm), grads)
    expected = jax.tree.map(
        lambda p, x: p - hp.lr * x / (np.sqrt((1 - hp.rmsprop_decay) * x**2) + hp.optimizer_eps),
        jax.tree.map(np.asarray, before.params),
        grads,
    )
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        after.params,
        expected,
    )
    assert sorted(out["metrics"]) == ["entropy", "loss", "policy_loss", "value_loss"]
    # The clipping and RMSprop act on the parameters raveled into one vector: the optimizer's
    # state is RMSprop's mean square of all 9,155 of them, one array.
    size = sum(x.size for x in jax.tree.leaves(before.params))
    assert [x.shape for x in jax.tree.leaves(after.opt_state)] == [(size,)]


def test_hyperparameters_validate_on_construction():
    with pytest.raises(rl.ConfigError, match=r"unknown optimizer 'sgd' \(valid: rmsprop, adam\)"):
        A2CConfig(optimizer="sgd")
    with pytest.raises(rl.ConfigError, match=r"rmsprop_decay must be in \[0.0, 1.0\], got 1.5"):
        A2CConfig(rmsprop_decay=1.5)
    with pytest.raises(rl.ConfigError, match=r"gae_lambda must be in \[0.0, 1.0\], got 2"):
        A2CConfig(gae_lambda=2)


def test_continuous_actions_and_adam():
    config = _config(env="Pendulum-v1", hparams={"optimizer": "adam", "gae_lambda": 0.9})
    result = rl.train(config)
    params = result.state.fragments["learner"].params
    assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(params))
    # The state-independent log-std is learned: two steps moved it off its initial 0.
    assert np.all(np.abs(params["params"]["log_std"]) > 0)
    loop = rl.build_loop(resolve(config))
    assert loop.info.actor.outputs == ("action", "raw_action", "log_prob", "value")


@pytest.mark.slow
def test_a2c_solves_cartpole():
    # The issue asks for a mean episode return ≥ 400. Hyperparameters: rl-baselines3-zoo's A2C for
    # CartPole-v1 (hyperparams/a2c.yml: 8 envs, 5e5 steps, ent_coef 0, otherwise SB3's defaults:
    # 5 steps per update, lr 7e-4 constant, RMSprop α 0.99 ε 1e-5, γ 0.99, λ 1, vf_coef 0.5,
    # gradient norm 0.5), which A2CConfig's defaults and this config reproduce; the zoo's agent
    # scores 500 ± 0 (benchmark.md). Seeds 0-5 all averaged 500 over the last 50k steps, reached
    # by 2e5 steps. About 3 s per seed on the 2-core CPU after compilation (about 6 s before).
    for seed in (0, 1):
        config = _config(total_steps=500_000, seed=seed)
        metrics = rl.train(config).metrics
        last = slice(-1250, None)  # the last 50k steps
        mean = metrics["episode_return_sum"][last].sum() / metrics["episodes"][last].sum()
        assert mean >= 400.0, (seed, mean)

"""SAC on Pendulum-v1 written by hand in one ``jax.lax.scan``: the no-framework baseline.

The same math as ``jaxrl_fdg.fragments.algorithms.sac`` at its defaults, run with one env, rollouts
of one step and one update per env step (``utd_ratio = 1``), Haarnoja et al. (2018,
arXiv:1812.05905): with ``a' ~ π(·|s')`` a tanh-squashed Gaussian,

    y   = r + γ (1 − terminated) (min_i Q_target,i(s', a') − α log π(a'|s'))
    L_Q = ½ Σ_i mean((Q_i(s, a) − y)²)                      (twin critics)
    L_π = mean(α log π(ã|s) − min_i Q_i(s, ã)),  ã ~ π(·|s)   (against the updated critics)
    L_α = −mean(log α (log π(ã|s) − dim(A)))                 (the actor step's sample)

then the critics' targets move by Polyak averaging, τ = 0.005. Adam 3e-4 (actor), 1e-3 (critics
and log α, which starts at 0); 256-256 ReLU networks with orthogonal initialisation (gain √2,
0.01 on the actor's output); ``log σ`` squashed into [−5, 2]; a 131,072-transition ring buffer
sampled uniformly in batches of 256; 5,000 steps of uniformly random actions before the first
update. Networks act in [−1, 1]; the env gets the action times its torque bound of 2.

None of the framework's layers: no fragments, edges, graph state, metric buffers or host
boundaries. The random-key stream is this file's own, so results agree with the framework's in
distribution, not bit for bit.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from handwritten_dqn import Replay, Transitions, replay_add, replay_sample, timed

from jaxrl_fdg.envs import Pendulum


def mlp(x, out: int, out_scale: float):
    for _ in range(2):
        x = nn.relu(nn.Dense(256, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
    return nn.Dense(out, kernel_init=nn.initializers.orthogonal(out_scale))(x)


class Actor(nn.Module):
    @nn.compact
    def __call__(self, obs):
        mean, raw = jnp.split(mlp(obs, 2, 0.01), 2, axis=-1)
        return mean, -5.0 + 7.0 * 0.5 * (jnp.tanh(raw) + 1.0)


class TwinCritic(nn.Module):
    @nn.compact
    def __call__(self, obs, action):
        x = jnp.concatenate([obs, action], axis=-1)
        return jnp.stack([mlp(x, 1, 1.0)[..., 0], mlp(x, 1, 1.0)[..., 0]])  # [2, B]


def sample_action(actor: Actor, params, obs: jax.Array, key: jax.Array):
    """``a = tanh(u)``, ``u ~ N(μ, σ²)``, and ``log π(a) = log N(u) − Σ log(1 − tanh(u)²)`` (the
    Jacobian term written as ``2(log 2 − u − softplus(−2u))``, finite where tanh saturates)."""
    mean, log_std = actor.apply(params, obs)
    u = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
    z = (u - mean) * jnp.exp(-log_std)
    log_prob = jnp.sum(-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)
    log_prob -= jnp.sum(2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u)), axis=-1)
    return jnp.tanh(u), log_prob


class Learner(NamedTuple):
    actor: Any
    critic: Any
    critic_target: Any
    log_alpha: jax.Array
    actor_opt: optax.OptState
    critic_opt: optax.OptState
    alpha_opt: optax.OptState


class Carry(NamedTuple):
    learner: Learner
    replay: Replay
    env_state: Any
    observation: jax.Array
    episode_return: jax.Array
    steps: jax.Array
    key: jax.Array


def make_train(
    num_envs=1,
    total_steps=30_000,
    buffer_size=131_072,
    batch_size=256,
    learning_starts=5_000,
    actor_lr=3e-4,
    critic_lr=1e-3,
    alpha_lr=1e-3,
    gamma=0.99,
    tau=0.005,
):
    """``train(key) -> (actor params, return sum [I], episodes [I])``: ``I = total_steps //
    num_envs`` iterations of one step of every env and (after the warm-up) one update."""
    if learning_starts < batch_size:
        raise ValueError(f"learning_starts = {learning_starts} < batch_size = {batch_size}")
    env = Pendulum()
    params_env = env.default_params
    max_torque = params_env.max_torque
    iterations = total_steps // num_envs
    actor, critic = Actor(), TwinCritic()
    actor_tx, critic_tx, alpha_tx = (
        optax.adam(actor_lr),
        optax.adam(critic_lr),
        optax.adam(alpha_lr),
    )
    target_entropy = -1.0  # −dim(A)

    def update(ls: Learner, replay: Replay, key: jax.Array) -> Learner:
        k_sample, k_next, k_actor = jax.random.split(key, 3)
        b = replay_sample(replay, k_sample, batch_size)
        alpha = jnp.exp(ls.log_alpha)
        next_action, next_log_prob = sample_action(actor, ls.actor, b.next_observation, k_next)
        q_next = critic.apply(ls.critic_target, b.next_observation, next_action).min(axis=0)
        y = b.reward + gamma * (1.0 - b.terminated) * (q_next - alpha * next_log_prob)

        def critic_loss(params):
            q = critic.apply(params, b.observation, b.action)
            return 0.5 * jnp.mean((q - y) ** 2, axis=1).sum()

        grads = jax.grad(critic_loss)(ls.critic)
        updates, critic_opt = critic_tx.update(grads, ls.critic_opt, ls.critic)
        critic_params = optax.apply_updates(ls.critic, updates)
        critic_target = optax.incremental_update(critic_params, ls.critic_target, tau)

        def actor_loss(params):
            action, log_prob = sample_action(actor, params, b.observation, k_actor)
            q = critic.apply(critic_params, b.observation, action).min(axis=0)
            return jnp.mean(alpha * log_prob - q), log_prob

        grads, log_prob = jax.grad(actor_loss, has_aux=True)(ls.actor)
        updates, actor_opt = actor_tx.update(grads, ls.actor_opt, ls.actor)
        actor_params = optax.apply_updates(ls.actor, updates)

        def alpha_loss(log_alpha):
            return -jnp.mean(log_alpha * (log_prob + target_entropy))

        updates, alpha_opt = alpha_tx.update(jax.grad(alpha_loss)(ls.log_alpha), ls.alpha_opt)
        log_alpha = optax.apply_updates(ls.log_alpha, updates)
        return Learner(
            actor_params, critic_params, critic_target, log_alpha, actor_opt, critic_opt, alpha_opt
        )

    def iteration(c: Carry, _):
        key, k_random, k_policy, k_env, k_update = jax.random.split(c.key, 5)
        policy_action, _ = sample_action(actor, c.learner.actor, c.observation, k_policy)
        random_action = jax.random.uniform(k_random, (num_envs, 1), jnp.float32, -1.0, 1.0)
        action = jnp.where(c.steps < learning_starts, random_action, policy_action)
        env_state, ts = env.step_batch(k_env, c.env_state, action * max_torque, params_env)
        batch = Transitions(
            c.observation,
            action,
            ts.reward,
            ts.terminated.astype(jnp.float32),
            ts.final_observation,
        )
        replay = replay_add(c.replay, batch)
        steps = c.steps + num_envs
        learner = jax.lax.cond(
            steps >= learning_starts,
            update,
            lambda learner, *_: learner,
            c.learner,
            replay,
            k_update,
        )
        done = ts.terminated | ts.truncated
        ep_ret = c.episode_return + ts.reward
        stats = (jnp.where(done, ep_ret, 0.0).sum(), done.sum())
        ep_ret = jnp.where(done, 0.0, ep_ret)
        return Carry(learner, replay, env_state, ts.observation, ep_ret, steps, key), stats

    def train(key):
        key, k_env, k_actor, k_critic = jax.random.split(key, 4)
        env_state, ts = env.reset_batch(k_env, num_envs, params_env)
        obs0, act0 = jnp.zeros(3, jnp.float32), jnp.zeros(1, jnp.float32)
        actor_params = actor.init(k_actor, obs0)
        critic_params = critic.init(k_critic, obs0, act0)
        log_alpha = jnp.zeros((), jnp.float32)  # α = 1
        learner = Learner(
            actor_params,
            critic_params,
            critic_params,
            log_alpha,
            actor_tx.init(actor_params),
            critic_tx.init(critic_params),
            alpha_tx.init(log_alpha),
        )
        data = Transitions(
            jnp.zeros((buffer_size, 3), jnp.float32),
            jnp.zeros((buffer_size, 1), jnp.float32),
            jnp.zeros(buffer_size, jnp.float32),
            jnp.zeros(buffer_size, jnp.float32),
            jnp.zeros((buffer_size, 3), jnp.float32),
        )
        zero = jnp.zeros((), jnp.int32)
        carry = Carry(
            learner,
            Replay(data, zero, zero),
            env_state,
            ts.observation,
            jnp.zeros(num_envs, jnp.float32),
            zero,
            key,
        )
        carry, (ret_sum, episodes) = jax.lax.scan(iteration, carry, length=iterations)
        return carry.learner.actor, ret_sum, episodes

    return train


def run(total_steps: int = 30_000, seed: int = 0, num_envs: int = 1) -> dict:
    train = make_train(num_envs=num_envs, total_steps=total_steps)
    return timed(train, jax.random.key(seed), (total_steps // num_envs) * num_envs)


if __name__ == "__main__":
    print(run())

"""DQN on CartPole-v1 written by hand in one ``jax.lax.scan``: the no-framework baseline.

The same math as ``jaxrl_fdg.fragments.algorithms.dqn`` at its defaults, run with 10 envs, rollouts
of one step and one update per iteration (``utd_ratio = 0.1``): double Q-learning, the loss
``½ (Q(s, a) − y)²`` with ``y = r + γ (1 − terminated) Q_target(s', argmax_a Q(s', a))``, Adam
2.5e-4 after clipping gradients to global norm 10, a 120-84 ReLU MLP, a 10k-transition ring
buffer sampled uniformly in batches of 128, 10k env steps of random actions before the first
update, ε from 1 to 0.05 linearly over half the run (counted from step 0), and a copy of the
network into the target every 50 updates. Truncated episodes bootstrap from the observation
they reached.

None of the framework's layers: no fragments, edges, graph state, metric buffers or host
boundaries. The replay buffer is a NamedTuple of arrays in the scan's carry. The random-key
stream is this file's own, so results agree with the framework's in distribution, not bit for
bit. It steps the CartPole simulator with its batch entry point, as the framework's env does.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl_fdg.envs import CartPole


class QNet(nn.Module):
    num_actions: int = 2

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(120)(x))
        x = nn.relu(nn.Dense(84)(x))
        return nn.Dense(self.num_actions)(x)


class Transitions(NamedTuple):
    observation: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    next_observation: jax.Array


class Replay(NamedTuple):
    data: Transitions  # [capacity, ...] per field
    position: jax.Array
    size: jax.Array


class Learner(NamedTuple):
    params: Any
    target_params: Any
    opt_state: optax.OptState
    updates: jax.Array


class Carry(NamedTuple):
    learner: Learner
    replay: Replay
    env_state: Any
    observation: jax.Array
    episode_return: jax.Array
    steps: jax.Array
    key: jax.Array


def replay_add(replay: Replay, batch: Transitions) -> Replay:
    capacity = replay.data.reward.shape[0]
    n = batch.reward.shape[0]
    slots = (replay.position + jnp.arange(n)) % capacity
    data = jax.tree.map(lambda s, x: s.at[slots].set(x), replay.data, batch)
    return Replay(data, (replay.position + n) % capacity, jnp.minimum(replay.size + n, capacity))


def replay_sample(replay: Replay, key: jax.Array, batch_size: int) -> Transitions:
    idx = jax.random.randint(key, (batch_size,), 0, replay.size)
    return jax.tree.map(lambda s: s[idx], replay.data)


def make_train(
    num_envs=10,
    total_steps=500_000,
    buffer_size=10_000,
    batch_size=128,
    learning_starts=10_000,
    lr=2.5e-4,
    gamma=0.99,
    max_grad_norm=10.0,
    target_update_period=50,
    epsilon_start=1.0,
    epsilon_end=0.05,
    epsilon_fraction=0.5,
):
    """``train(key) -> (params, return sum [I], episodes [I])``: ``I = total_steps // num_envs``
    iterations of one step of every env and (after the warm-up) one gradient update."""
    if learning_starts < batch_size:
        raise ValueError(f"learning_starts = {learning_starts} < batch_size = {batch_size}")
    env = CartPole()
    params_env = env.default_params
    iterations = total_steps // num_envs
    net = QNet()
    tx = optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(lr))
    epsilon = optax.linear_schedule(
        epsilon_start, epsilon_end, max(1, int(epsilon_fraction * iterations * num_envs))
    )

    def update(learner: Learner, replay: Replay, key: jax.Array) -> Learner:
        b = replay_sample(replay, key, batch_size)
        q_next_target = net.apply(learner.target_params, b.next_observation)
        best = jnp.argmax(net.apply(learner.params, b.next_observation), axis=-1)
        next_value = jnp.take_along_axis(q_next_target, best[:, None], axis=-1)[:, 0]
        target = b.reward + gamma * (1.0 - b.terminated) * next_value

        def loss_fn(params):
            q = net.apply(params, b.observation)
            q_taken = jnp.take_along_axis(q, b.action[:, None], axis=-1)[:, 0]
            return jnp.mean(0.5 * (q_taken - target) ** 2)

        grads = jax.grad(loss_fn)(learner.params)
        updates, opt_state = tx.update(grads, learner.opt_state, learner.params)
        params = optax.apply_updates(learner.params, updates)
        count = learner.updates + 1
        copy = count % target_update_period == 0
        target_params = jax.tree.map(
            lambda p, t: jnp.where(copy, p, t), params, learner.target_params
        )
        return Learner(params, target_params, opt_state, count)

    def iteration(c: Carry, _):
        key, k_explore, k_random, k_env, k_update = jax.random.split(c.key, 5)
        q = net.apply(c.learner.params, c.observation)
        eps = jnp.where(c.steps < learning_starts, 1.0, epsilon(c.steps))
        random_action = jax.random.randint(k_random, (num_envs,), 0, 2, jnp.int32)
        explore = jax.random.uniform(k_explore, (num_envs,)) < eps
        action = jnp.where(explore, random_action, jnp.argmax(q, axis=-1).astype(jnp.int32))
        env_state, ts = env.step_batch(k_env, c.env_state, action, params_env)
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
        key, k_env, k_net = jax.random.split(key, 3)
        env_state, ts = env.reset_batch(k_env, num_envs, params_env)
        obs0 = jnp.zeros(4, jnp.float32)
        params = net.init(k_net, obs0)
        data = Transitions(
            jnp.zeros((buffer_size, 4), jnp.float32),
            jnp.zeros(buffer_size, jnp.int32),
            jnp.zeros(buffer_size, jnp.float32),
            jnp.zeros(buffer_size, jnp.float32),
            jnp.zeros((buffer_size, 4), jnp.float32),
        )
        zero = jnp.zeros((), jnp.int32)
        carry = Carry(
            Learner(params, params, tx.init(params), zero),
            Replay(data, zero, zero),
            env_state,
            ts.observation,
            jnp.zeros(num_envs, jnp.float32),
            zero,
            key,
        )
        carry, (ret_sum, episodes) = jax.lax.scan(iteration, carry, length=iterations)
        return carry.learner.params, ret_sum, episodes

    return train


def final_return(ret_sum: np.ndarray, episodes: np.ndarray, chunk: int | None = None) -> float:
    """Mean return of the episodes that ended in the last chunk of iterations, as the framework's
    ``final_return`` (its last host boundary's row): chunks of ``ceil(I / 25)`` iterations
    counted from the start, the last one possibly shorter."""
    n = len(ret_sum)
    chunk = chunk or max(1, -(-n // 25))
    start = ((n - 1) // chunk) * chunk
    count = float(np.sum(episodes[start:]))
    return float(np.sum(ret_sum[start:]) / count) if count else float("nan")


def timed(train, key, steps: int) -> dict:
    """Compile ``train`` ahead of time, then run it once; compile and run seconds apart."""
    start = time.perf_counter()
    compiled = jax.jit(train).lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    _, ret_sum, episodes = jax.block_until_ready(compiled(key))
    run_s = time.perf_counter() - start
    return {
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps": steps,
        "steps_per_s": steps / run_s,
        "final_return": final_return(np.asarray(ret_sum), np.asarray(episodes)),
    }


def run(total_steps: int = 500_000, seed: int = 0, num_envs: int = 10) -> dict:
    train = make_train(num_envs=num_envs, total_steps=total_steps)
    return timed(train, jax.random.key(seed), (total_steps // num_envs) * num_envs)


if __name__ == "__main__":
    print(run())

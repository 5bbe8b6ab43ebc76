"""PPO on CartPole-v1 written by hand in one ``jax.lax.scan``: the no-framework baseline.

The same math as ``jaxrl_fdg.fragments.algorithms.ppo`` under ``--fusion scan`` (same network,
losses, optimizer, GAE with truncation bootstrapping, episode statistics), with none of the
framework's layers: no fragments, no edges, no graph state, no metric buffers, no host boundaries.
It uses the CartPole simulator itself, as any hand-written JAX agent would use gymnax's. The actor,
the env step and the update run under ``jax.named_scope``s named as the framework's fragments, so a
profiler trace splits this program's device time the same way (``benchmarks/loop_share.py``); scopes
are metadata and change nothing in the compiled program's work.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrl_fdg.envs import CartPole


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        def mlp(x, out, scale):
            for _ in range(2):
                x = jnp.tanh(nn.Dense(64, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
            return nn.Dense(out, kernel_init=nn.initializers.orthogonal(scale))(x)

        return mlp(x, 2, 0.01), mlp(x, 1, 1.0)[..., 0]


def make_train(
    num_envs=4,
    rollout_len=128,
    total_steps=500_000,
    epochs=4,
    minibatches=4,
    lr=2.5e-4,
    gamma=0.99,
    lam=0.95,
    clip=0.2,
    ent=0.01,
    vf=0.5,
    max_norm=0.5,
):
    env = CartPole()
    params_env = env.default_params
    iterations = total_steps // (num_envs * rollout_len)
    batch = num_envs * rollout_len
    net = Net()
    schedule = optax.linear_schedule(lr, 0.0, iterations * epochs * minibatches)
    tx = optax.chain(optax.clip_by_global_norm(max_norm), optax.adam(schedule, eps=1e-5))

    def train(key):
        key, k_env, k_net = jax.random.split(key, 3)
        env_state, ts = jax.vmap(env.reset, (0, None))(
            jax.random.split(k_env, num_envs), params_env
        )
        params = net.init(k_net, jnp.zeros(4))
        ep_ret = jnp.zeros(num_envs)

        def env_step(carry, _):
            params, env_state, obs, ep_ret, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            with jax.named_scope("actor"):
                logits, value = net.apply(params, obs)
                action = jax.random.categorical(k_act, logits).astype(jnp.int32)
                log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)
            with jax.named_scope("env"):
                env_state, ts = jax.vmap(env.step, (0, 0, 0, None))(
                    jax.random.split(k_step, num_envs), env_state, action, params_env
                )
            done = ts.terminated | ts.truncated
            ep_ret = ep_ret + ts.reward
            out = (
                obs,
                action,
                log_prob[:, 0],
                value,
                ts.reward,
                ts.terminated,
                done,
                ts.final_observation,
                jnp.where(done, ep_ret, 0.0),
                done,
            )
            return (params, env_state, ts.observation, jnp.where(done, 0.0, ep_ret), key), out

        def loss_fn(params, mb):
            obs, action, old_lp, old_v, adv, target = mb
            logits, value = net.apply(params, obs)
            log_probs = jax.nn.log_softmax(logits)
            lp = jnp.take_along_axis(log_probs, action[:, None], 1)[:, 0]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            ratio = jnp.exp(lp - old_lp)
            pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip, 1 + clip) * adv).mean()
            v_clip = old_v + jnp.clip(value - old_v, -clip, clip)
            v_loss = 0.5 * jnp.maximum((value - target) ** 2, (v_clip - target) ** 2).mean()
            entropy = -(jnp.exp(log_probs) * log_probs).sum(-1).mean()
            return pg + vf * v_loss - ent * entropy

        def update_mb(carry, mb):
            params, opt_state = carry
            grads = jax.grad(loss_fn)(params, mb)
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), None

        def iteration(carry, _):
            params, opt_state, env_state, obs, ep_ret, key = carry
            key, k_roll, k_learn = jax.random.split(key, 3)
            (_, env_state, obs, ep_ret, _), traj = jax.lax.scan(
                env_step, (params, env_state, obs, ep_ret, k_roll), length=rollout_len
            )
            with jax.named_scope("learner"):
                params, opt_state = learn(params, opt_state, traj, k_learn)
            *_, t_ret, t_end = traj
            stats = (t_ret.sum(), t_end.sum())
            return (params, opt_state, env_state, obs, ep_ret, key), stats

        def learn(params, opt_state, traj, k_learn):
            t_obs, t_act, t_lp, t_v, t_r, t_term, t_done, t_next, _, _ = traj
            v_next = net.apply(params, t_next)[1]
            delta = t_r + gamma * (1 - t_term) * v_next - t_v

            def gae(a, x):
                d, cont = x
                a = d + gamma * lam * cont * a
                return a, a

            _, adv = jax.lax.scan(gae, jnp.zeros(num_envs), (delta, 1.0 - t_done), reverse=True)
            data = jax.tree.map(
                lambda x: x.reshape(batch, *x.shape[2:]), (t_obs, t_act, t_lp, t_v, adv, adv + t_v)
            )

            def epoch(carry, k):
                perm = jax.random.permutation(k, batch)
                mbs = jax.tree.map(lambda x: x[perm].reshape(minibatches, -1, *x.shape[1:]), data)
                return jax.lax.scan(update_mb, carry, mbs)[0], None

            (params, opt_state), _ = jax.lax.scan(
                epoch, (params, opt_state), jax.random.split(k_learn, epochs)
            )
            return params, opt_state

        carry = (params, tx.init(params), env_state, ts.observation, ep_ret, key)
        carry, (ret_sum, episodes) = jax.lax.scan(iteration, carry, length=iterations)
        return carry[0], ret_sum, episodes

    return train


def run(
    total_steps: int = 1_000_000, seed: int = 0, num_envs: int = 4, rollout_len: int = 128
) -> dict:
    """Compile the whole run ahead of time, then run it once: compile and run seconds apart."""
    from handwritten_dqn import timed

    train = make_train(num_envs=num_envs, rollout_len=rollout_len, total_steps=total_steps)
    per_iteration = num_envs * rollout_len
    return timed(train, jax.random.key(seed), (total_steps // per_iteration) * per_iteration)


if __name__ == "__main__":
    print(run())

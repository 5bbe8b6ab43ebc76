"""Recurrent actor-critics (``memory`` gru or lstm): the actor's memory and its resets, the
learner re-running the actor's sequences exactly, minibatches of whole env sequences, the
bootstrap value, evaluation, and that memory solves a task feed-forward PPO cannot."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.evaluation import evaluator
from jaxrl_fdg.fragments.algorithms import actor_critic as ac
from jaxrl_fdg.fragments.algorithms.ppo import PPOConfig
from jaxrl_fdg.fragments.minibatch import sequence_minibatch_epochs

# 4 envs × 16 steps: CartPole episodes end inside a rollout, so resets happen mid-sequence.
RECURRENT = {"memory": "gru", "memory_size": 8, "hidden_sizes": (16,)}
CASES = {
    "gru-cartpole": ("CartPole-v1", RECURRENT),
    "gru-heads-cartpole": ("CartPole-v1", {**RECURRENT, "head_sizes": (8, 4)}),
    "lstm-pendulum": ("Pendulum-v1", {**RECURRENT, "memory": "lstm"}),
}


def _config(env="CartPole-v1", **hparams):
    return rl.TrainConfig(
        algo="ppo",
        env=env,
        total_steps=4 * 16 * 2,
        num_envs=4,
        rollout_len=16,
        out=None,
        progress=False,
        hparams={**RECURRENT, "num_minibatches": 2, "update_epochs": 1, **hparams},
    )


def _rollouts(config, n=2):
    """``n`` rollouts from a fresh state (no learning): the last one's trajectory, the state,
    the policy and the resolved config."""
    resolved = resolve(config)
    loop = rl.build_loop(resolved)
    state = jax.jit(loop.init)(jax.random.key(0))
    rollout = jax.jit(loop.rollout)
    for _ in range(n):
        state, trajectory, _ = rollout(state)
    return trajectory, state, ac.Policy(resolved.context), resolved


@pytest.fixture(scope="module")
def cartpole():
    return _rollouts(_config(), n=2)


def test_actor_keeps_and_resets_memory_where_episodes_start(cartpole):
    traj, state, policy, _ = cartpole
    memory, start = np.asarray(traj.extras["memory"]), np.asarray(traj.extras["episode_start"])
    done = np.asarray(traj.terminated | traj.truncated)
    assert memory.shape == (16, 4, 16) and start.dtype == bool  # two networks × 8
    # An episode starts exactly after one ended, and there the memory acted from is zeros.
    np.testing.assert_array_equal(start[1:], done[:-1])
    assert start[1:].any() and (np.abs(memory[start]) == 0).all()
    assert (np.abs(memory[~start]).sum(-1) > 0).all()
    # Elsewhere it is the memory the previous step left: the network from the memory before.
    params, apply = state.fragments["learner"].params, jax.jit(policy.net.apply)
    after, _ = apply(params, memory[:-1], traj.observation[:-1])
    kept = ~start[1:]
    np.testing.assert_allclose(memory[1:][kept], np.asarray(after)[kept], rtol=1e-6, atol=1e-7)
    # The actor's state is the memory after the rollout's last step.
    last, _ = apply(params, memory[-1], traj.observation[-1])
    np.testing.assert_allclose(state.fragments["actor"].memory, last, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "case",
    ["gru-cartpole", "gru-heads-cartpole", pytest.param("lstm-pendulum", marks=pytest.mark.slow)],
)
def test_learner_reproduces_the_actor(case):
    # To float32 rounding: the learner applies torsos and heads to every step at once (one wide
    # product, Policy.unroll) where the actor applied them to one step's batch.
    env, hparams = CASES[case]
    traj, state, policy, resolved = _rollouts(_config(env, **hparams), n=2)
    params = state.fragments["learner"].params
    seq = jax.jit(lambda p, t: ac.make_sequences(policy, p, t, resolved.hparams))(params, traj)
    assert seq.observation.shape[:2] == (4, 16) and seq.memory.shape[0] == 4
    assert float(jnp.abs(seq.memory).max()) > 0  # the second rollout starts from memory
    # A minibatch of whole sequences (envs 2 and 0), through the gradient as the loss sees it.
    minibatch = jax.tree.map(lambda x: x[jnp.array([2, 0])], seq)

    def loss(p, mb):
        log_prob, _, value = policy.evaluate_batch(p, mb)
        return (log_prob + value).sum(), (log_prob, value)

    _, (log_prob, value) = jax.jit(jax.grad(loss, has_aux=True))(params, minibatch)
    ratio = np.exp(np.asarray(log_prob) - np.asarray(minibatch.log_prob))
    np.testing.assert_allclose(ratio, 1.0, rtol=0, atol=1e-5)
    np.testing.assert_allclose(value, minibatch.value, rtol=1e-5, atol=1e-6)


def test_first_update_of_ppo_sees_ratio_one():
    # One epoch of one minibatch: its metrics are the first update's, at the rollout's params.
    loop = rl.build_loop(resolve(_config(num_minibatches=1)))
    state = jax.jit(loop.init)(jax.random.key(1))
    _, metrics = jax.jit(loop.iteration)(state)
    assert abs(float(metrics["approx_kl"])) < 1e-9 and float(metrics["clip_fraction"]) == 0.0


def test_bootstrap_value_uses_the_memory_before_the_reset(cartpole):
    traj, state, policy, _ = cartpole
    params = state.fragments["learner"].params
    memory = traj.extras["memory"]
    done = np.asarray(traj.terminated | traj.truncated)
    t, b = map(int, np.argwhere(done[:-1])[0])
    # Counted as truncated (a terminated step's value is never bootstrapped from, so not computed).
    truncated = np.zeros(done.shape, bool)
    truncated[t, b] = True
    traj = traj._replace(terminated=traj.terminated & ~truncated, truncated=jnp.asarray(truncated))
    value_next = np.asarray(jax.jit(policy.next_values)(params, traj))
    # The ended episode's memory after step t (the next step's memory is reset to zeros) ...
    apply = jax.jit(policy.net.apply)
    value = jax.jit(functools.partial(policy.net.apply, method="value"))
    after, _ = apply(params, memory[t, b], traj.observation[t, b])
    v_final = value(params, after, traj.next_observation[t, b])
    np.testing.assert_allclose(value_next[t, b], v_final, rtol=1e-5, atol=1e-6)
    v_reset = value(params, memory[t + 1, b], traj.next_observation[t, b])
    assert abs(float(v_final) - float(v_reset)) > 1e-6
    # ... and where the episode goes on, the value the actor computes at the next step.
    going_on = ~done[:-1]
    np.testing.assert_allclose(
        value_next[:-1][going_on], traj.extras["value"][1:][going_on], rtol=1e-5, atol=1e-6
    )


def test_minibatches_are_whole_env_sequences():
    # Sequence b holds 100·b + t at time t, and memory b. The update stores each minibatch.
    batch = {"x": jnp.arange(5)[None, :] + 100 * jnp.arange(6)[:, None], "memory": jnp.arange(6)}

    def update(state, mb):
        i, xs, memories = state
        state = (i + 1, xs.at[i].set(mb["x"]), memories.at[i].set(mb["memory"]))
        return state, {"n": jnp.float32(1)}

    start = (0, jnp.zeros((3, 2, 5), jnp.int32), jnp.zeros((3, 2), jnp.int32))
    (_, xs, memories), metrics = sequence_minibatch_epochs(
        start, batch, jax.random.key(0), epochs=1, num_minibatches=3, update=update
    )
    assert float(metrics["n"]) == 1.0
    xs, memories = np.asarray(xs), np.asarray(memories)
    np.testing.assert_array_equal(xs % 100, np.broadcast_to(np.arange(5), (3, 2, 5)))
    np.testing.assert_array_equal(xs[..., 0] // 100, memories)  # each with its own memory
    assert sorted(memories.ravel()) == list(range(6))  # every sequence once
    assert memories.ravel().tolist() != list(range(6))  # shuffled
    with pytest.raises(ValueError, match=r"6 sequences .* do not split into 4 minibatches"):
        sequence_minibatch_epochs(
            start, batch, jax.random.key(0), epochs=1, num_minibatches=4, update=update
        )


def test_hyperparameters_and_minibatch_count_are_checked():
    with pytest.raises(rl.ConfigError, match=r"unknown memory 'rnn' \(valid: none, gru, lstm\)"):
        PPOConfig(memory="rnn")
    with pytest.raises(rl.ConfigError, match="memory_size must be a positive integer"):
        PPOConfig(memory_size=0)
    # 6 envs × 8 steps = 48 divides into 4 minibatches of steps, not into 4 of whole sequences.
    config = _config(num_minibatches=4).replace(num_envs=6, rollout_len=8, total_steps=48)
    resolve(config.replace(hparams={**config.hparams, "memory": "none"}))
    with pytest.raises(rl.ConfigError, match=r"num_envs .*memory 'gru'.* = 6 .* = 4"):
        resolve(config)


def test_head_sizes_put_layers_between_the_cells_and_the_heads():
    resolved = resolve(_config(head_sizes=(8, 4)))
    params = rl.build_loop(resolved).init(jax.random.key(0)).fragments["learner"].params
    # Each head: 8 units (after the GRU's 8), then 4, then the output (2 actions, 1 value).
    for head, out in (("policy", 2), ("critic", 1)):
        kernels = [layer["kernel"].shape for layer in params["params"][head].values()]
        assert kernels == [(8, 8), (8, 4), (4, out)]
    # Without them, each head is one linear layer, its parameters where they always were.
    plain = rl.build_loop(resolve(_config())).init(jax.random.key(0)).fragments["learner"]
    assert plain.params["params"]["policy"]["kernel"].shape == (8, 2)
    with pytest.raises(rl.ConfigError, match=r"head_sizes = \(128,\) .* memory is 'none'"):
        PPOConfig(head_sizes=(128,))
    with pytest.raises(rl.ConfigError, match="head_sizes entry must be a positive integer"):
        PPOConfig(memory="gru", head_sizes=(0,))


def test_evaluation_carries_the_policys_memory():
    resolved = resolve(_config())
    loop = rl.build_loop(resolved)
    params = jax.jit(loop.init)(jax.random.key(0)).fragments["learner"].params
    frag = evaluator(
        resolved.env, resolved.env_params, loop.info.policy, 3, memory=loop.info.policy_memory
    )
    _, out = jax.jit(frag.apply)(rl.EmptyState(), {"params": params}, jax.random.key(0))
    assert float(out["eval_length"]) >= 8
    np.testing.assert_allclose(out["eval_return"], out["eval_length"])  # CartPole: 1 a step
    # The memory is carried: the deterministic policy acts from it, step after step.
    obs = jnp.ones((3, 4))
    memory = loop.info.policy_memory(3)
    actions, memory = jax.jit(loop.info.policy)(params, obs, memory)
    assert actions.shape == (3,) and float(jnp.abs(memory).max()) > 0


@pytest.mark.slow
def test_memory_balances_stateless_cartpole_where_feed_forward_cannot():
    # StatelessCartPole-v1 observes [x, θ] only: balancing needs the velocities, which a policy
    # can infer from successive observations if it remembers them. Same budget and seed for
    # both: 131k steps of 32 envs × 64 (the test runs seed 0). Measured (2026-11, 2-core CPU),
    # mean return over the last quarter of the run, seeds 0, 1, 2: GRU 248, 296, 252;
    # feed-forward 44, 45, 43. Thresholds: GRU ≥ 150, feed-forward < 100. About a minute.
    def last_quarter(memory):
        config = rl.TrainConfig(
            env="StatelessCartPole-v1",
            total_steps=131_072,
            num_envs=32,
            rollout_len=64,
            out=None,
            progress=False,
            hparams={"memory": memory, "memory_size": 64, "hidden_sizes": (64,), "lr": 1e-3},
        )
        metrics = rl.train(config).metrics
        last = slice(-16, None)
        return float(metrics["episode_return_sum"][last].sum() / metrics["episodes"][last].sum())

    recurrent, feed_forward = last_quarter("gru"), last_quarter("none")
    assert recurrent >= 150.0 and feed_forward < 100.0, (recurrent, feed_forward)


def test_a2c_learns_from_whole_sequences():
    # A2C takes the rollout as one batch: all env sequences at once, with the same re-run.
    config = _config().replace(algo="a2c", hparams=RECURRENT)
    loop = rl.build_loop(resolve(config))
    state = loop.init(jax.random.key(0))
    after, metrics = jax.jit(loop.iteration)(state)
    assert all(np.isfinite(float(v)) for v in metrics.values())
    before, new = state.fragments["learner"].params, after.fragments["learner"].params
    assert testing.differences(before, new)  # the update moved some parameter
    assert after.fragments["actor"].memory.shape == (4, 16)


def test_host_env_placement_is_refused_before_compiling():
    # host_env calls the actor on each half of the batch in turn; a recurrent actor keeps the
    # memory of the whole batch, so tracing the rollout stops with a message, before any compile.
    pytest.importorskip("gymnasium")
    config = _config(env="gym/CartPole-v1").replace(placement="host_env", fusion="scan")
    loop = rl.build_loop(resolve(config))
    state = jax.eval_shape(loop.init, jax.random.key(0))
    with pytest.raises(rl.ConfigError, match=r"memory of its 4 environments .* called on 2"):
        jax.eval_shape(loop.rollout, state)

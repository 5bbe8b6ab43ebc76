"""Wrappers: known answers per wrapper, composition, and jit/vmap over environments and params."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from jaxrl_fdg import testing
from jaxrl_fdg.envs import Box, CartPole, Environment, Pendulum
from jaxrl_fdg.envs.wrappers import (
    ClipAction,
    EpisodeStatistics,
    FrameStack,
    NormalizeObservation,
    RescaleAction,
    ScaleReward,
    ScaleRewardParams,
    TimeLimit,
    update_running_moments,
)

# -- helpers -------------------------------------------------------------------------------------
# Compilation dominates these tests' time, so each test compiles its rollouts as one program.


def rollout_fn(env, params):
    """Reset + one step per row of ``actions``: (reset timestep, states before, after, steps)."""

    def run(seed, actions):
        key_reset, key_steps = jax.random.split(jax.random.key(seed))
        state, first = env.reset(key_reset, params)

        def body(state, inputs):
            k, a = inputs
            new, ts = env.step(k, state, a, params)
            return new, (state, new, ts)

        keys = jax.random.split(key_steps, actions.shape[0])
        _, (before, after, ts) = jax.lax.scan(body, state, (keys, actions))
        return first, before, after, ts

    return run


def rollouts(*runs):
    """Several ``(env, params, seed, actions)`` rollouts in one jitted call, as numpy arrays."""
    fns = [rollout_fn(env, params) for env, params, _, _ in runs]
    args = [(seed, actions) for _, _, seed, actions in runs]
    out = jax.jit(lambda args: [fn(*a) for fn, a in zip(fns, args, strict=True)])(args)
    return jax.tree.map(np.asarray, out)


def rollout(env, params, seed, actions):
    return rollouts((env, params, seed, actions))[0]


def cartpole_actions(n, seed=0):
    return np.random.default_rng(seed).integers(0, 2, n).astype(np.int32)


class CounterState(NamedTuple):
    value: jax.Array


@struct.dataclass
class CounterParams:
    low: np.ndarray = struct.field(default_factory=lambda: np.array([-0.5, 1.0], np.float32))
    high: np.ndarray = struct.field(default_factory=lambda: np.array([2.0, 3.0], np.float32))
    max_steps: int = struct.field(pytree_node=False, default=4)


class Counter(Environment):
    """Observation [v, -v] with v = start + steps so far (start random); reward = Σ action."""

    name = "Counter"

    @property
    def default_params(self):
        return CounterParams()

    def reset_env(self, key, params):
        value = jax.random.randint(key, (), 1, 10_000).astype(jnp.float32)
        return CounterState(value), jnp.stack([value, -value])

    def step_env(self, key, state, action, params):
        value = state.value + 1
        reward = jnp.sum(jnp.asarray(action, jnp.float32))
        return CounterState(value), jnp.stack([value, -value]), reward, jnp.zeros((), jnp.bool_)

    def observation_space(self, params):
        return Box(-jnp.inf, jnp.inf, (2,), jnp.float32)

    def action_space(self, params):
        return Box(params.low, params.high, (2,), jnp.float32)


# -- params and construction ---------------------------------------------------------------------


def test_params_delegate_and_max_steps_reads_through():
    env = ScaleReward(FrameStack(Pendulum(), 3), scale=0.5)
    params = env.default_params
    assert params.inner.inner == Pendulum().default_params
    assert params.max_steps == 200 and params.scale == 0.5
    limited = FrameStack(TimeLimit(Pendulum(), 7), 2)
    assert limited.default_params.max_steps == 7
    assert limited.default_params.inner.inner.max_steps == 200  # inner params untouched
    assert env.name == "ScaleReward<FrameStack<Pendulum-v1>>"


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="num_stack"):
        FrameStack(CartPole(), 0)
    with pytest.raises(ValueError, match="max_steps"):
        TimeLimit(CartPole(), 0)
    with pytest.raises(ValueError, match="Box action"):
        ClipAction(CartPole())
    with pytest.raises(ValueError, match="Box action"):
        RescaleAction(CartPole())
    with pytest.raises(ValueError, match="min_action < max_action"):
        RescaleAction(Pendulum(), 1.0, 1.0)
    with pytest.raises(TypeError):
        ScaleReward("CartPole-v1")


# -- EpisodeStatistics ---------------------------------------------------------------------------


def _hand_statistics(rewards, done):
    """Per step: (running return, running length, last completed return, its length)."""
    out, ret, length, last = [], 0.0, 0, (0.0, 0)
    for reward, end in zip(rewards, done, strict=True):
        ret, length = ret + float(reward), length + 1
        if end:
            last, ret, length = (ret, length), 0.0, 0
        out.append((ret, length, *last))
    return np.asarray(out)


def test_episode_statistics_match_hand_sums():
    # CartPole (limit 15): random actions end episodes by termination (~20 steps) and by
    # truncation. Pendulum (limit 9): varying rewards, so a length mix-up cannot pass as a return.
    cartpole, pendulum = EpisodeStatistics(CartPole()), EpisodeStatistics(Pendulum())
    limited = [
        env.default_params.replace(inner=env.default_params.inner.replace(max_steps=limit))
        for env, limit in ((cartpole, 15), (pendulum, 9))
    ]
    torques = np.random.default_rng(1).uniform(-2, 2, (100, 1)).astype(np.float32)
    runs = rollouts(
        (cartpole, limited[0], 0, cartpole_actions(300)), (pendulum, limited[1], 0, torques)
    )
    for name, (_, _, after, ts) in zip(["cartpole", "pendulum"], runs, strict=True):
        done = ts.terminated | ts.truncated
        expected = _hand_statistics(ts.reward, done)
        stats = after.env
        np.testing.assert_allclose(stats.episode_return, expected[:, 0], rtol=1e-5, err_msg=name)
        np.testing.assert_array_equal(stats.episode_length, expected[:, 1], err_msg=name)
        np.testing.assert_allclose(stats.returned_episode_return, expected[:, 2], rtol=1e-5)
        np.testing.assert_array_equal(stats.returned_episode_length, expected[:, 3], err_msg=name)
        assert done.sum() >= 8, name
    cartpole_ts = runs[0][3]
    assert cartpole_ts.terminated.sum() >= 3
    assert (cartpole_ts.truncated & ~cartpole_ts.terminated).sum() >= 3


# -- NormalizeObservation ------------------------------------------------------------------------


def test_update_running_moments_equals_numpy_over_chunks():
    data = np.random.default_rng(0).normal(3.0, 2.0, (100, 3)).astype(np.float32)
    chunks = np.split(data, [1, 7, 40, 41])

    @jax.jit
    def merge(chunks):
        mean, var, count = jnp.zeros(3), jnp.ones(3), jnp.float32(0.0)
        for chunk in chunks:
            mean, var, count = update_running_moments(
                mean, var, count, chunk.mean(0), chunk.var(0), chunk.shape[0]
            )
        return mean, var, count

    mean, var, count = merge(chunks)
    np.testing.assert_allclose(mean, data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(var, data.var(0), rtol=1e-4)
    assert float(count) == 100


def test_normalize_observation_moments_span_episodes_and_match_numpy():
    # Same seed and actions through the bare env give the raw observations the wrapper saw:
    # the reset observation, every step's final observation, and each auto-reset observation.
    cartpole = CartPole()
    params = cartpole.default_params.replace(max_steps=25)
    env = NormalizeObservation(cartpole)
    clipped = NormalizeObservation(Pendulum(), clip=0.5)
    actions = cartpole_actions(200, seed=3)
    raw_run, run, clipped_run = rollouts(
        (cartpole, params, 3, actions),
        (env, env.default_params.replace(inner=params), 3, actions),
        (clipped, clipped.default_params, 0, np.zeros((60, 1), np.float32)),
    )
    first, _, _, raw = raw_run
    _, _, after, ts = run
    done = raw.terminated | raw.truncated
    assert done.sum() >= 5  # several resets, so the moments must have survived them

    seen = [first.observation]
    for t in range(len(actions)):
        seen.append(raw.final_observation[t])
        if done[t]:
            seen.append(raw.observation[t])
    seen = np.asarray(seen, np.float64)
    eps, n = env.count_epsilon, len(seen)
    mean, var = after.env.mean[-1], after.env.var[-1]
    np.testing.assert_allclose(after.env.count[-1], n + eps, rtol=1e-6)
    # Numpy's moments, to the relative eps/n that the (mean 0, var 1, weight eps) prior adds.
    np.testing.assert_allclose(mean, seen.mean(0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(var, seen.var(0), rtol=1e-4, atol=1e-7)
    # Exactly (to float32): the moments of the observations pooled with the prior.
    pooled_mean = seen.sum(0) / (n + eps)
    pooled_var = (eps * (1 + pooled_mean**2) + ((seen - pooled_mean) ** 2).sum(0)) / (n + eps)
    np.testing.assert_allclose(mean, pooled_mean, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(var, pooled_var, rtol=2e-4)
    # The observation returned is the raw one standardised by the moments after seeing it.
    expected = (raw.observation[-1] - mean) / np.sqrt(var + env.epsilon)
    np.testing.assert_allclose(ts.observation[-1], expected, rtol=1e-4, atol=1e-5)

    # Clipping: the bound is reached and never exceeded.
    assert np.abs(clipped_run[3].observation).max() == pytest.approx(0.5)
    assert clipped.observation_space(clipped.default_params).high == 0.5


# -- rewards and actions -------------------------------------------------------------------------


def test_scale_reward_scales_exactly_and_sweeps_under_vmap():
    pendulum = Pendulum()
    env = ScaleReward(pendulum, scale=0.25)
    actions = np.random.default_rng(2).uniform(-2, 2, (50, 1)).astype(np.float32)
    scales = np.array([0.0, -1.0, 3.0], np.float32)

    @jax.jit
    def run(actions, scales):
        raw = rollout_fn(pendulum, pendulum.default_params)(5, actions)
        scaled = rollout_fn(env, env.default_params)(5, actions)
        # One compiled step swept over the scale (a params leaf), not one compile per value.
        params = jax.vmap(lambda s: ScaleRewardParams(pendulum.default_params, s))(scales)
        key = jax.random.key(0)
        state, _ = env.reset(key)
        swept = jax.vmap(env.step, in_axes=(None, None, None, 0))(key, state, actions[0], params)
        one = pendulum.step(key, pendulum.reset(key)[0], actions[0])
        return raw[3], scaled[3], swept[1].reward, one[1].reward

    raw, scaled, swept, one = jax.tree.map(np.asarray, run(actions, scales))
    np.testing.assert_array_equal(scaled.reward, raw.reward * np.float32(0.25))
    np.testing.assert_array_equal(scaled.observation, raw.observation)
    np.testing.assert_array_equal(swept, scales * one)


def test_clip_and_rescale_actions_known_answers():
    # Counter's reward is the sum of the action the inner env received; bounds [-0.5, 2], [1, 3].
    clip, rescale = ClipAction(Counter()), RescaleAction(Counter())
    actions = np.array([[-5.0, 5.0], [-1.0, -1.0], [1.0, 1.0], [0.0, 0.5]], np.float32)
    clipped = [-0.5 + 3.0, -0.5 + 1.0, 1.0 + 1.0, 0.0 + 1.0]
    rescaled = [None, -0.5 + 1.0, 2.0 + 3.0, 0.75 + 2.5]  # -1 ↦ low, 1 ↦ high, 0 ↦ midpoint

    @jax.jit
    def rewards(actions):
        key = jax.random.key(0)
        out = []
        for env in (clip, rescale):
            state, _ = env.reset(key)
            out.append(jax.vmap(lambda a, env=env, s=state: env.step(key, s, a)[1].reward)(actions))
        return out

    got_clipped, got_rescaled = np.asarray(rewards(actions))
    np.testing.assert_allclose(got_clipped, clipped, rtol=1e-6)
    np.testing.assert_allclose(got_rescaled[1:], rescaled[1:], rtol=1e-6)
    space = rescale.action_space(rescale.default_params)
    assert np.all(np.asarray(space.low) == -1.0) and np.all(np.asarray(space.high) == 1.0)
    assert np.all(np.isinf(clip.action_space(clip.default_params).high))


def test_rescale_action_maps_unit_interval_onto_pendulum_torque():
    # Pendulum clips torque to ±2 itself, so interior points (not only ±1) tell a wrong scale.
    pendulum, env = Pendulum(), RescaleAction(Pendulum())
    units = np.linspace(-1.0, 1.0, 9, dtype=np.float32)[:, None]

    @jax.jit
    def both(units):
        key = jax.random.key(1)
        state, _ = pendulum.reset(key)
        wrapped = jax.vmap(lambda a: env.step(key, state, a)[1])(units)
        bare = jax.vmap(lambda a: pendulum.step(key, state, a)[1])(2.0 * units)
        return wrapped, bare

    wrapped, bare = both(units)
    np.testing.assert_array_equal(wrapped.observation, bare.observation)
    np.testing.assert_array_equal(wrapped.reward, bare.reward)
    space = env.action_space(env.default_params)
    assert space.shape == (1,) and float(space.low[0]) == -1.0 and float(space.high[0]) == 1.0


# -- FrameStack and TimeLimit --------------------------------------------------------------------


def test_frame_stack_shapes_and_contents_across_resets():
    k = 3
    env = FrameStack(Counter(), k)  # Counter episodes: 4 steps
    assert env.observation_space(env.default_params).shape == (2, k)
    first, _, _, ts = rollout(env, env.default_params, 0, np.zeros((10, 2), np.float32))
    start = first.observation[0, 0]
    np.testing.assert_array_equal(first.observation, [[start] * k, [-start] * k])
    for t in range(10):
        # The stack ending at this step's observation, the episode's first value repeated.
        steps_in = t % 4 + 1
        values = [start + max(steps_in - k + 1 + i, 0) for i in range(k)]
        np.testing.assert_array_equal(ts.final_observation[t], [values, [-v for v in values]])
        if ts.truncated[t]:  # next episode: k copies of its reset observation
            start = ts.observation[t][0, 0]
            assert start != values[-1]
            np.testing.assert_array_equal(ts.observation[t], [[start] * k, [-start] * k])
        else:
            np.testing.assert_array_equal(ts.observation[t], ts.final_observation[t])
    assert ts.truncated.sum() == 2

    cartpole = FrameStack(CartPole(), 4)
    state, first_step = jax.eval_shape(lambda: cartpole.reset(jax.random.key(0)))
    space = cartpole.observation_space(cartpole.default_params)
    assert first_step.observation.shape == space.shape == state.env.frames.shape == (4, 4)


def test_time_limit_truncates_at_the_new_limit_shorter_and_longer():
    short = TimeLimit(CartPole(), 5)  # CartPole cannot fall within 5 steps of a reset
    longer = TimeLimit(Pendulum(), 230)  # Pendulum's own limit is 200
    (_, before, _, ts), (_, _, _, long_ts) = rollouts(
        (short, short.default_params, 0, cartpole_actions(23)),
        (longer, longer.default_params, 0, np.zeros((231, 1), np.float32)),
    )
    assert np.flatnonzero(ts.truncated).tolist() == [4, 9, 14, 19]
    assert not ts.terminated.any()
    np.testing.assert_array_equal(before.time, np.arange(23) % 5)
    assert short.default_params.inner.max_steps == 500  # the inner env's limit is untouched
    assert np.flatnonzero(long_ts.truncated).tolist() == [229]


# -- composition, auto_reset_env through nesting, jit and vmap--------------------------------------


def test_time_limit_and_frame_stack_compose_in_either_order():
    outside = TimeLimit(FrameStack(CartPole(), 2), 7)
    inside = FrameStack(TimeLimit(CartPole(), 7), 2)
    actions = cartpole_actions(15)
    runs = rollouts(
        (outside, outside.default_params, 0, actions), (inside, inside.default_params, 0, actions)
    )
    for _, _, _, ts in runs:
        assert np.flatnonzero(ts.truncated).tolist() == [6, 13]
        assert ts.observation.shape == (15, 4, 2)
        # Right after a truncation the stack is the fresh reset observation twice; the final
        # observation's stack still holds the episode's last two observations.
        np.testing.assert_array_equal(ts.observation[6][:, 0], ts.observation[6][:, 1])
        np.testing.assert_array_equal(ts.final_observation[6][:, 0], ts.final_observation[5][:, 1])
    # Same dynamics either way: the order of these two wrappers does not matter.
    testing.assert_same_bits(runs[0][3], runs[1][3])


def test_statistics_survive_resets_through_outer_wrappers_under_jit_and_vmap():
    # auto_reset_env must pass through FrameStack/ScaleReward/TimeLimit to the stateful wrappers.
    env = TimeLimit(
        ScaleReward(FrameStack(NormalizeObservation(EpisodeStatistics(CartPole())), 2), 3.0), 10
    )
    seeds = np.arange(4)
    actions = np.random.default_rng(5).integers(0, 2, (4, 35)).astype(np.int32)
    run = jax.jit(jax.vmap(rollout_fn(env, env.default_params)))
    _, _, after, ts = jax.tree.map(np.asarray, run(seeds, actions))
    assert ts.observation.shape == (4, 35, 4, 2)
    # TimeLimit and ScaleReward pass the state through; FrameStack → Normalize → Statistics.
    normalize = after.env.inner
    stats = normalize.inner
    done = ts.terminated | ts.truncated
    for b in range(4):
        assert done[b].sum() >= 3
        assert normalize.count[b, -1] == pytest.approx(1 + 35 + done[b].sum(), rel=1e-5)
        ends = np.flatnonzero(done[b])
        lengths = np.diff(np.concatenate([[-1], ends]))
        np.testing.assert_array_equal(stats.returned_episode_length[b, ends], lengths)
        # CartPole pays 1 per step; the statistics see it before ScaleReward's factor of 3.
        np.testing.assert_allclose(stats.returned_episode_return[b, ends], lengths)
    np.testing.assert_array_equal(ts.reward, 3.0)


def test_every_wrapper_jits_and_vmaps_over_envs_and_params():
    wrapped = [
        EpisodeStatistics(Pendulum()),
        NormalizeObservation(Pendulum()),
        ScaleReward(Pendulum(), 2.0),
        ClipAction(Pendulum()),
        RescaleAction(Pendulum()),
        FrameStack(Pendulum(), 2),
        TimeLimit(Pendulum(), 3),
    ]
    gravities = np.array([9.0, 10.0, 11.0], np.float32)

    @jax.jit
    def two_steps(gravities):
        keys = jax.random.split(jax.random.key(0), 3)
        action = jnp.full((3, 1), 0.5)
        out = []
        for env in wrapped:
            # A gravity sweep through the wrapper's params: the inner params are a pytree field.
            params = jax.vmap(
                lambda g, p=env.default_params: p.replace(inner=p.inner.replace(g=g))
            )(gravities)
            state, _ = jax.vmap(env.reset)(keys, params)
            state, _ = jax.vmap(env.step)(keys, state, action, params)
            out.append(jax.vmap(env.step)(keys, state, action, params)[1])
        return out

    for env, ts in zip(wrapped, two_steps(gravities), strict=True):
        space = env.observation_space(env.default_params)
        assert ts.observation.shape == (3, *space.shape), env.name
        assert np.all(np.isfinite(np.asarray(ts.observation))), env.name
        # Different gravity, different second-step reward: the sweep reached the physics.
        assert len({float(x) for x in np.asarray(ts.reward)}) == 3, env.name

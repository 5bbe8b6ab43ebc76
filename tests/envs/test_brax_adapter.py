"""BraxEnv: Brax's reset/step behind our API, time limit and auto-reset from the base class.

Small and CPU-friendly: inverted_pendulum on MJX with 20-step episodes. Every jitted function is
built once per module (compiling an MJX step takes seconds on a small CPU).
"""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg.envs import EpisodeState
from jaxrl_fdg.envs.brax_adapter import BACKENDS, BraxEnv, make_brax, with_physics

MAX_STEPS = 20


@pytest.fixture(scope="module")
def pendulum():
    """inverted_pendulum on MJX with jitted reset/step, and Brax's own step jitted alongside.

    Brax's step takes the system as an argument, set on a Brax environment of its own the way
    Brax's ``DomainRandomizationVmapWrapper`` does, so one compiled function serves every system.
    """
    from brax.envs import get_environment

    env = make_brax("inverted_pendulum")
    params = env.default_params.replace(max_steps=MAX_STEPS)
    reset = jax.jit(env.reset)
    step = jax.jit(env.step)
    reference = get_environment("inverted_pendulum", backend="mjx")
    built_with = reference.sys

    @jax.jit
    def brax_step(sys, brax_state, action):
        reference.sys = sys
        try:
            return reference.step(brax_state, action)
        finally:
            reference.sys = built_with

    return env, params, reset, step, brax_step


def test_reset_and_step_shapes_and_dtypes(pendulum):
    env, params, reset, step, _ = pendulum
    assert (env.observation_size, env.action_size) == (4, 1)
    state, ts = reset(jax.random.key(0), params)
    assert ts.observation.shape == (4,) and ts.observation.dtype == jnp.float32
    assert int(state.time) == 0
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    assert bool(obs_space.contains(ts.observation))
    assert act_space.shape == (1,) and (act_space.low, act_space.high) == (-1.0, 1.0)

    state, ts = step(jax.random.key(1), state, act_space.sample(jax.random.key(2)), params)
    for field, shape, dtype in [
        (ts.observation, (4,), jnp.float32),
        (ts.final_observation, (4,), jnp.float32),
        (ts.reward, (), jnp.float32),
        (ts.terminated, (), jnp.bool_),
        (ts.truncated, (), jnp.bool_),
        (state.time, (), jnp.int32),
    ]:
        assert field.shape == shape and field.dtype == dtype
    assert np.all(np.isfinite(ts.observation))
    assert int(state.time) == 1


def test_step_equals_brax_step(pendulum):
    env, params, reset, step, brax_step = pendulum
    state, _ = reset(jax.random.key(3), params)
    # Small actions keep the pole up for these steps, so no auto-reset hides the comparison.
    for t, a in enumerate([0.1, -0.2, 0.05, 0.0, -0.1]):
        action = jnp.array([a], jnp.float32)
        expected = brax_step(params.sys, state.env.brax_state, action)
        state, ts = step(jax.random.key(10 + t), state, action, params)
        assert not bool(ts.terminated) and not bool(ts.truncated)
        np.testing.assert_allclose(ts.observation, expected.obs, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(ts.final_observation, expected.obs, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(ts.reward, expected.reward, rtol=1e-6)
        assert bool(ts.terminated) == bool(expected.done)
        np.testing.assert_allclose(state.env.brax_state.pipeline_state.q, expected.pipeline_state.q)


def test_params_system_is_the_one_stepped_without_recompiling(pendulum):
    """A changed system (a third of Earth's gravity, pole twice as heavy) runs through the
    compiled step of the default one, differs from it, and equals Brax's step with that system."""
    env, params, reset, step, brax_step = pendulum
    changed = with_physics(params, gravity=(0.0, 0.0, -3.0), mass_scale=jnp.array([1, 1, 2]))
    actions = [jnp.array([a], jnp.float32) for a in (0.1, -0.2, 0.05, 0.0, -0.1)]
    keys = [jax.random.key(10 + t) for t in range(len(actions))]

    start, _ = reset(jax.random.key(3), params)
    default = start
    for key, action in zip(keys, actions, strict=True):
        default, _ = step(key, default, action, params)
    compiled = step._cache_size(), reset._cache_size()

    # The same start for both systems: Brax's reset reads only init_q from the system.
    other, _ = reset(jax.random.key(3), changed)
    np.testing.assert_array_equal(other.env.brax_state.obs, start.env.brax_state.obs)
    for key, action in zip(keys, actions, strict=True):
        expected = brax_step(changed.sys, other.env.brax_state, action)
        other, ts = step(key, other, action, changed)
        assert not bool(ts.terminated)
        np.testing.assert_allclose(ts.observation, expected.obs, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(ts.reward, expected.reward, rtol=1e-6)
    assert np.abs(other.env.brax_state.obs - default.env.brax_state.obs).max() > 1e-4
    assert (step._cache_size(), reset._cache_size()) == compiled


def test_truncation_at_max_steps(pendulum):
    env, params, reset, step, _ = pendulum
    state, _ = reset(jax.random.key(4), params)
    action = jnp.zeros((1,), jnp.float32)
    key = jax.random.key(5)

    # The same transition without the time limit: what the truncated step must report reaching.
    untimed, ts_untimed = step(key, state, action, params)
    assert not bool(ts_untimed.truncated) and int(untimed.time) == 1

    # Derived from the reset state, so placed like it: an argument placed differently recompiles.
    last = EpisodeState(state.env, state.time + (MAX_STEPS - 1))
    next_state, ts = step(key, last, action, params)
    assert bool(ts.truncated) and not bool(ts.terminated)
    assert int(next_state.time) == 0
    np.testing.assert_array_equal(ts.final_observation, ts_untimed.observation)
    # The observation is the first of a new episode (which key the base class draws it from is
    # the base class's business), and the new Brax state is that episode's.
    assert _is_fresh_start(ts.observation)
    np.testing.assert_array_equal(next_state.env.brax_state.obs, ts.observation)
    assert not np.array_equal(ts.observation, ts.final_observation)


def test_termination_when_pole_falls_then_auto_reset(pendulum):
    env, params, reset, step, _ = pendulum
    state, _ = reset(jax.random.key(6), params)
    push = jnp.ones((1,), jnp.float32)  # full force one way: the cart runs out under the pole
    key = jax.random.key(7)
    for _ in range(MAX_STEPS):
        key, sub = jax.random.split(key)
        prev = state
        state, ts = step(sub, state, push, params)
        if bool(ts.terminated):
            break
        assert abs(float(ts.observation[1])) <= 0.2
    else:
        pytest.fail(f"the pole did not fall within {MAX_STEPS} steps of full force")
    assert int(prev.time) < MAX_STEPS - 1 and not bool(ts.truncated)
    # Brax terminates once the pole angle (obs[1]) leaves ±0.2 rad.
    assert abs(float(ts.final_observation[1])) > 0.2
    # Auto-reset: a fresh episode, counter back at zero.
    assert _is_fresh_start(ts.observation)
    np.testing.assert_array_equal(state.env.brax_state.obs, ts.observation)
    assert int(state.time) == 0
    assert float(state.env.brax_state.done) == 0.0


def _is_fresh_start(observation) -> bool:
    """Brax's inverted_pendulum starts every q and qd (the observation) within ±0.01 of zero."""
    return bool(np.all(np.abs(np.asarray(observation)) <= 0.01))


@pytest.mark.slow  # test_brax_sweep.py vmaps Brax lanes in the default tier
def test_vmap_over_four_envs():
    # The adapter is the same for every backend; spring's vmapped step compiles in half the time
    # of MJX's on a small CPU (9.8 s against 20.6 s).
    env = make_brax("inverted_pendulum", backend="spring")
    params = env.default_params.replace(max_steps=MAX_STEPS)
    n = 4
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    state, ts = reset(jax.random.split(jax.random.key(8), n), params)
    assert ts.observation.shape == (n, 4) and state.time.shape == (n,)
    actions = jnp.linspace(-1.0, 1.0, n)[:, None]
    state, ts = step(jax.random.split(jax.random.key(9), n), state, actions, params)
    assert ts.observation.shape == (n, 4) and ts.reward.shape == (n,)
    assert ts.terminated.dtype == jnp.bool_ and ts.terminated.shape == (n,)
    assert np.all(np.asarray(state.time) == 1)
    # Different keys and actions give different episodes.
    assert len({tuple(np.asarray(o).round(6)) for o in ts.observation}) == n


def test_bad_backend_or_name_raises_value_error_naming_the_choices():
    with pytest.raises(ValueError, match="mjx, generalized, positional, spring"):
        BraxEnv("inverted_pendulum", backend="warp")
    with pytest.raises(ValueError, match="unknown auto_reset 'first'; choose one of fresh, first"):
        BraxEnv("inverted_pendulum", auto_reset="first")
    # Brax's swimmer only runs on its generalized pipeline.
    with pytest.raises(ValueError, match=r"'swimmer' does not support backend 'mjx'.*generalized"):
        make_brax("swimmer")
    with pytest.raises(ValueError, match="inverted_pendulum"):
        make_brax("inverted_pendulm")
    assert BACKENDS[0] == "mjx"


def test_solver_options_set_the_system_reset_and_step_run_with(pendulum):
    default = pendulum[0].default_params.sys.opt
    capped = make_brax("inverted_pendulum", solver_iterations=1, ls_iterations=4)
    assert (default.iterations, default.ls_iterations) == (100, 50)
    # params.sys is the system reset and step run with (see the test above on params).
    opt = capped.default_params.sys.opt
    assert (opt.iterations, opt.ls_iterations) == (1, 4)
    assert capped.brax_env.sys is capped.default_params.sys


def test_bad_solver_options_are_rejected_before_anything_is_built():
    from jaxrl_fdg import config as cfg
    from jaxrl_fdg.errors import ConfigError

    for bad in (0, -3, 2.5, True, "4"):
        with pytest.raises(
            ValueError, match=rf"solver_iterations must be a positive integer, got {bad!r}"
        ):
            BraxEnv("inverted_pendulum", solver_iterations=bad)
    with pytest.raises(
        ValueError, match="ls_iterations .* backend 'mjx' only, got backend 'spring'"
    ):
        BraxEnv("inverted_pendulum", backend="spring", ls_iterations=4)
    with pytest.raises(ConfigError, match="ls_iterations must be a positive integer, got 0"):
        cfg.make_env("brax/inverted_pendulum", {"ls_iterations": 0})


def test_importing_envs_or_the_adapter_does_not_import_brax():
    code = (
        "import sys, jaxrl_fdg.envs; print('brax' in sys.modules); "
        "import jaxrl_fdg.envs.brax_adapter; print('brax' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.slow
def test_first_state_restarts_equal_brax_auto_reset_wrapper():
    # Brax's trainers wrap environments in EpisodeWrapper and AutoResetWrapper; with
    # auto_reset="first_state" ours equals that, observation for observation, through the
    # restarts of 40 steps of random pushes (inverted_pendulum falls within a few).
    from brax.envs.wrappers.training import AutoResetWrapper, EpisodeWrapper

    env = make_brax("inverted_pendulum", auto_reset="first_state")
    params = env.default_params
    theirs = AutoResetWrapper(EpisodeWrapper(env.brax_env, params.max_steps, 1))
    key, n = jax.random.key(3), 4
    state, ts = env.reset_batch(key, n, params)
    brax_state = jax.vmap(theirs.reset)(jax.random.split(key, n))
    np.testing.assert_array_equal(ts.observation, brax_state.obs)
    step = jax.jit(lambda key, state, action: env.step_batch(key, state, action, params))
    brax_step = jax.jit(jax.vmap(theirs.step))
    restarts = 0
    for t in range(40):
        push_key, step_key = jax.random.split(jax.random.key(100 + t))
        action = jax.random.uniform(push_key, (n, 1), minval=-1.0, maxval=1.0)
        state, ts = step(step_key, state, action)
        brax_state = brax_step(brax_state, action)
        np.testing.assert_array_equal(ts.observation, brax_state.obs)
        np.testing.assert_array_equal(ts.reward, brax_state.reward)
        np.testing.assert_array_equal(ts.terminated | ts.truncated, brax_state.done != 0)
        restarts += int(np.sum(ts.terminated))
    assert restarts >= 10


@pytest.mark.slow
@pytest.mark.parametrize("terminate", [True, False])
def test_ant_terminates_only_when_unhealthy_and_asked_to(terminate):
    # Ant's torso lifted above healthy_z_range (0.2, 1.0) is unhealthy: that ends the episode
    # only with terminate_when_unhealthy (Brax's default, True).
    env = make_brax("ant", terminate_when_unhealthy=terminate)
    params = env.default_params

    @jax.jit
    def lifted_step(key):
        # One compiled function for reset and step: each compile of MJX ant takes seconds.
        state, _ = env.reset_env(key, params)
        pipeline = state.brax_state.pipeline_state
        lifted = pipeline.replace(qpos=pipeline.qpos.at[2].set(2.0))
        state = state._replace(brax_state=state.brax_state.replace(pipeline_state=lifted))
        action = jnp.zeros((env.action_size,), jnp.float32)
        return env.step_env(key, state, action, params)

    _, _, reward, terminated = lifted_step(jax.random.key(0))
    assert terminated.dtype == jnp.bool_ and reward.dtype == jnp.float32
    assert bool(terminated) is terminate


def test_brax_names_resolve_through_the_config():
    from jaxrl_fdg import config as cfg
    from jaxrl_fdg.errors import ConfigError

    env, params = cfg.make_env("brax/inverted_pendulum")
    assert params.max_steps == 1000 and env.action_space(params).shape == (1,)
    with pytest.raises(ConfigError, match="brax/inverted_pendulum:warp"):
        cfg.make_env("brax/inverted_pendulum:warp")
    with pytest.raises(ConfigError, match="dqn needs a Discrete action space"):
        cfg.resolve(cfg.TrainConfig(algo="dqn", env="brax/inverted_pendulum", out=None))

"""Brax physics in params: a sweep over systems is a vmap, and each lane is Brax's own physics.

inverted_pendulum on MJX, short rollouts. Each rollout (reset, then a fixed action sequence in one
``lax.scan``) is compiled once per module: compiling MJX on a small CPU takes seconds.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg.envs.brax_adapter import (
    make_brax,
    physics_updates,
    sweep,
    with_physics,
    with_system,
)

HORIZON = 8
# Small pushes either way: the pole stays within Brax's ±0.2 rad for these steps under every
# system below, so no termination (and auto-reset) hides a difference between systems.
ACTIONS = 0.1 * jnp.sin(jnp.arange(HORIZON, dtype=jnp.float32))[:, None]
# Lane 0: the system as built; lane 1: a third of Earth's gravity; lane 2: every body 3× heavier
# and the pole (body 2) another 2× on top.
GRAVITY_Z = jnp.array([-9.81, -3.0, -9.81])
MASS_SCALE = jnp.array([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [3.0, 3.0, 6.0]])


@pytest.fixture(scope="module")
def pendulum():
    env = make_brax("inverted_pendulum")
    return env, env.default_params.replace(max_steps=50)


@pytest.fixture(scope="module")
def swept(pendulum):
    """The three systems as one sweep: ``(swept params, in_axes)``."""
    env, params = pendulum
    updates = jax.vmap(
        lambda g, m: physics_updates(params.sys, gravity=(0.0, 0.0, g), mass_scale=m)
    )(GRAVITY_Z, MASS_SCALE)
    return sweep(params, updates)


@pytest.fixture(scope="module")
def swept_rollouts(pendulum, swept):
    """Our rollouts of the three systems, vmapped over params with the sweep's in_axes."""
    env, _ = pendulum
    params, axes = swept
    # One reset key for every lane: the lanes differ only in their physics.
    reset = jax.vmap(env.reset, in_axes=(None, axes))
    act = jnp.broadcast_to(ACTIONS[:, None], (HORIZON, len(GRAVITY_Z), 1))

    @jax.jit
    def run(params):
        state, ts = reset(jax.random.key(0), params)

        def one(state, action):
            step = jax.vmap(env.step, in_axes=(None, 0, 0, axes))
            state, ts = step(jax.random.key(1), state, action, params)
            return state, (ts.observation, ts.reward, ts.terminated)

        _, (obs, reward, terminated) = jax.lax.scan(one, state, act)
        return ts.observation, obs, reward, terminated

    return jax.device_get(run(params))


def test_default_params_hold_the_environment_system(pendulum):
    env, _ = pendulum
    params = env.default_params
    assert params.sys is env.brax_env.sys and params.max_steps == 1000
    leaves = jax.tree.leaves(params)
    assert leaves and all(isinstance(x, jax.Array) for x in leaves)


def test_with_physics_sets_the_fields_of_every_backend(pendulum):
    _, params = pendulum
    sys = params.sys
    changed = with_physics(params, gravity=(0.0, 0.0, -1.62), mass_scale=2.0, friction_scale=0.5)
    new = changed.sys
    for field in (new.opt.gravity, new.gravity):  # MJX's and Brax's own pipelines'
        np.testing.assert_array_equal(field, np.float32([0.0, 0.0, -1.62]))
    np.testing.assert_allclose(new.body_mass, 2 * sys.body_mass)
    np.testing.assert_allclose(new.body_inertia, 2 * sys.body_inertia)
    np.testing.assert_allclose(new.link.inertia.mass, 2 * sys.link.inertia.mass)
    np.testing.assert_allclose(new.link.inertia.i, 2 * sys.link.inertia.i)
    np.testing.assert_allclose(new.geom_friction, 0.5 * sys.geom_friction)
    # Dtypes and the pytree structure are kept: the same compiled step runs either system.
    assert jax.tree.structure(changed) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(changed), jax.tree.leaves(params), strict=True):
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
    with pytest.raises(ValueError, match=r"gravity is a vector of shape \(3,\)"):
        with_physics(params, gravity=-9.81)
    # Nothing is mutated.
    np.testing.assert_array_equal(params.sys.opt.gravity, np.float32([0.0, 0.0, -9.81]))


def test_with_system_replaces_any_field_by_path_and_checks_it(pendulum):
    _, params = pendulum
    finer = with_system(params, {"opt.timestep": 0.002, "link.inertia.mass": [1.0, 2.0]})
    assert float(finer.sys.opt.timestep) == pytest.approx(0.002)
    assert finer.sys.opt.timestep.dtype == params.sys.opt.timestep.dtype
    np.testing.assert_array_equal(finer.sys.link.inertia.mass, [1.0, 2.0])
    with pytest.raises(ValueError, match="no field 'opt.gravty'"):
        with_system(params, {"opt.gravty": 0.0})
    with pytest.raises(ValueError, match="'opt' names a group"):
        with_system(params, {"opt": 0.0})
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2, 3\).*sweep"):
        with_system(params, {"opt.gravity": jnp.zeros((2, 3))})


def test_sweep_batches_only_the_swept_fields(pendulum, swept):
    _, params = pendulum
    batched, axes = swept
    assert batched.sys.opt.gravity.shape == (3, 3) and batched.sys.body_mass.shape == (3, 3)
    assert batched.sys.geom_friction.shape == params.sys.geom_friction.shape  # shared
    assert axes.sys.opt.gravity == 0 and axes.sys.link.inertia.mass == 0
    assert axes.sys.geom_friction is None and axes.max_steps == params.max_steps
    with pytest.raises(ValueError, match="differ in batch length"):
        sweep(params, {"opt.gravity": jnp.zeros((2, 3)), "opt.timestep": jnp.ones(3)})
    with pytest.raises(ValueError, match=r"expected values of shape \(n, \*\(3,\)\)"):
        sweep(params, {"opt.gravity": jnp.zeros((3,))})


def test_a_batched_system_without_vmap_is_refused(pendulum, swept):
    env, _ = pendulum
    batched, _ = swept
    with pytest.raises(ValueError, match="needs a jax.vmap over params"):
        jax.eval_shape(env.reset, jax.random.key(0), batched)


# The swept rollouts compile Brax's pipeline under vmap (30 s cold): the slow tier runs them.
@pytest.mark.slow
def test_each_lane_of_a_sweep_is_brax_with_that_system(pendulum, swept, swept_rollouts):
    """Brax's own domain randomisation (its vmap wrapper swaps ``sys`` on a Brax environment)
    from the same systems, keys and actions gives the same trajectories, lane by lane."""
    from brax.envs import get_environment
    from brax.envs.wrappers.training import DomainRandomizationVmapWrapper

    params, axes = swept
    n = len(GRAVITY_Z)
    brax_env = DomainRandomizationVmapWrapper(
        get_environment("inverted_pendulum", backend="mjx"), lambda _: (params.sys, axes.sys)
    )

    @jax.jit
    def brax_rollout():
        state = brax_env.reset(jax.vmap(lambda _: jax.random.key(0))(jnp.arange(n)))
        first = state.obs

        def one(state, action):
            state = brax_env.step(state, jnp.broadcast_to(action, (n, 1)))
            return state, (state.obs, state.reward, state.done)

        _, (obs, reward, done) = jax.lax.scan(one, state, ACTIONS)
        return first, obs, reward, done

    first, obs, reward, done = jax.device_get(brax_rollout())
    our_first, our_obs, our_reward, our_terminated = swept_rollouts
    assert not our_terminated.any() and not done.any()
    np.testing.assert_allclose(our_first, first, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(our_obs, obs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(our_reward, reward, rtol=1e-6)


@pytest.mark.slow
def test_different_systems_give_different_trajectories(swept_rollouts):
    first, obs, _, _ = swept_rollouts
    # Every lane starts from the same state (one reset key) ...
    np.testing.assert_array_equal(first[1], first[0])
    np.testing.assert_array_equal(first[2], first[0])
    # ... and the physics alone drives them apart: lower gravity lets the pole fall more slowly,
    # heavier bodies respond less to the same force.
    final = obs[-1]
    assert np.abs(final[1] - final[0]).max() > 1e-4
    assert np.abs(final[2] - final[0]).max() > 1e-4


# Slow tier: a second backend compiling Brax's own pipeline; the sweep's lanes are checked against
# Brax's domain randomisation on MJX above.
@pytest.mark.slow
def test_generalized_backend_reads_the_swept_gravity():
    """Brax's own pipelines read ``sys.gravity``, not MJX's ``opt.gravity``; a gravity sweep
    built with physics_updates reaches them too."""
    env = make_brax("inverted_pendulum", backend="generalized")
    params = env.default_params.replace(max_steps=50)
    gravity = jnp.array([[0.0, 0.0, -9.81], [0.0, 0.0, -1.0]])
    swept, axes = sweep(params, jax.vmap(lambda g: physics_updates(params.sys, gravity=g))(gravity))

    @jax.jit
    def final_observation(params):
        state, _ = jax.vmap(env.reset, in_axes=(None, axes))(jax.random.key(0), params)
        step = jax.vmap(env.step, in_axes=(None, 0, 0, axes))
        act = jnp.broadcast_to(ACTIONS[:, None], (HORIZON, 2, 1))
        state, _ = jax.lax.scan(
            lambda s, a: (step(jax.random.key(1), s, a, params)[0], None), state, act
        )
        return state.env.brax_state.obs

    obs = np.asarray(final_observation(swept))
    assert np.abs(obs[1] - obs[0]).max() > 1e-4


# Step mode compiles Brax's pipeline into a program per step fragment: slow to compile, and step
# mode's equivalence is covered for every algorithm on CartPole in the default tier.
@pytest.mark.slow
def test_ppo_trains_on_brax_the_same_in_scan_and_step_modes():
    """PPO (continuous actions) through the normal API on brax/inverted_pendulum: two iterations
    of 4 envs × 16 steps, fused into one scan or stepped one environment step per call."""
    import jaxrl_fdg as rl
    from jaxrl_fdg import testing

    config = rl.TrainConfig(
        algo="ppo",
        env="brax/inverted_pendulum",
        total_steps=2 * 4 * 16,
        num_envs=4,
        rollout_len=16,
        out=None,
        progress=False,
        hparams={"num_minibatches": 2, "update_epochs": 1},
    )
    results = {mode: rl.train(config.replace(fusion=mode)) for mode in ("scan", "step")}
    metrics = results["scan"].metrics
    assert metrics["loss"].shape == (2,) and np.all(np.isfinite(metrics["loss"]))
    assert metrics["episodes"].sum() > 0  # the pole fell and episodes restarted on their own
    scan, step = (results[mode].state.fragments for mode in ("scan", "step"))
    # The learner and the policy agree bit for bit, and so do the observations and rewards they
    # were trained on. In the environment state only Brax's link velocities in the world frame
    # (pipeline_state.xd, which Brax derives from MuJoCo's cvel after each step and which
    # inverted_pendulum's observation does not read) were seen to differ, by ~1e-12: XLA fuses
    # that arithmetic differently inside the rollout scan and in the per-step program.
    for name in ("learner", "actor"):
        testing.assert_same_bits(step[name], scan[name], name)
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        step["env"],
        scan["env"],
    )
    floats = [x for x in jax.tree.leaves(scan) if _is_float(x)]
    assert floats and all(np.all(np.isfinite(np.asarray(x))) for x in floats)


def _is_float(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.floating)

"""Observation normalisation for SAC, TD3 and DDPG (``normalize_observations``), as Brax's SAC
has it: running moments of every observation collected, folded in once per rollout before the
updates, and published with the actor's parameters."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.fragments.algorithms.offpolicy import MOMENTS
from jaxrl_fdg.fragments.normalization import COLLECTION, ObservationMoments

ITERATIONS, ENVS, STEPS = 3, 2, 4


def config_for(algo: str, **overrides) -> rl.TrainConfig:
    """3 iterations of 2 envs × 4 steps; updates from the second iteration on. The replay holds
    every transition of the run, so it holds every observation the moments folded in."""
    return rl.TrainConfig(
        algo=algo,
        env="Pendulum-v1",
        total_steps=ITERATIONS * ENVS * STEPS,
        num_envs=ENVS,
        rollout_len=STEPS,
        out=None,
        progress=False,
        log_every=ITERATIONS,
        hparams={
            "normalize_observations": True,
            "learning_starts": ENVS * STEPS,
            "batch_size": 8,
            "buffer_size": 64,
            "hidden_sizes": (16, 16),
        },
        **overrides,
    )


@pytest.fixture(scope="module")
def sac_runs():
    config = config_for("sac")
    return config, {mode: rl.train(config.replace(fusion=mode)) for mode in ("scan", "step")}


def test_moments_are_those_of_every_observation_collected(sac_runs):
    _, runs = sac_runs
    states = runs["scan"].state.fragments
    moments = states[MOMENTS]
    collected = ITERATIONS * ENVS * STEPS
    stored = np.asarray(states["replay"].storage.observation[:collected])
    assert float(moments.count) == pytest.approx(collected, abs=1e-3)  # + the pseudo-count
    np.testing.assert_allclose(moments.mean, stored.mean(axis=0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(moments.var, stored.var(axis=0), rtol=1e-3, atol=1e-5)


def test_the_last_update_used_the_moments_of_its_rollout(sac_runs):
    # Folded in after the rollout, before the updates: the learner holds and publishes the
    # moments of all observations up to the last rollout's, not the ones before it.
    _, runs = sac_runs
    states = runs["scan"].state.fragments
    testing.assert_same_bits(states["learner"].moments, states[MOMENTS])
    assert set(states["learner"].moments._asdict()) == {"mean", "var", "count"}


def test_step_and_scan_compute_the_same_bits(sac_runs):
    _, runs = sac_runs
    testing.assert_same_bits(runs["step"].state.fragments, runs["scan"].state.fragments)


def test_the_policy_acts_on_standardised_observations(sac_runs):
    # Evaluation's policy on the published parameters equals the plain SAC policy on the
    # observations standardised by the published moments.
    config, runs = sac_runs
    normalized = rl.algorithm.get("sac").build(resolve(config).context)
    plain_config = config.replace(hparams={**config.hparams, "normalize_observations": False})
    plain = rl.algorithm.get("sac").build(resolve(plain_config).context)
    learner = runs["scan"].state.fragments["learner"]
    params = {"params": learner.learner.actor.params, COLLECTION: learner.moments}
    obs = jnp.array([[1.0, 0.0, 4.0], [-0.5, 0.8, -2.0]])
    standard = ObservationMoments((3,)).standardize(learner.moments, obs)
    np.testing.assert_array_equal(
        normalized.policy(params, obs), plain.policy(params["params"], standard)
    )
    assert not np.array_equal(normalized.policy(params, obs), plain.policy(params["params"], obs))


@pytest.mark.slow  # the same code path as SAC's, above
def test_td3_normalises_too():
    # DDPG is TD3 without its three changes, through the same continuous.build.
    state = rl.train(config_for("td3")).state.fragments
    testing.assert_same_bits(state["learner"].moments, state[MOMENTS])


def test_resume_restores_the_moments(sac_runs, resumed_after_first_iteration):
    config, runs = sac_runs
    resumed = resumed_after_first_iteration(config)
    testing.assert_same_bits(resumed.state.fragments, runs["scan"].state.fragments)

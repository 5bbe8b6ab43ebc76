"""Extending a built-in without copying it: random network distillation on PPO
(examples/rnd.py), an auxiliary task every few iterations on DQN's replay and network
(examples/dqn_auxiliary.py), and Dyna-style planning on DQN (examples/dyna.py). Each computes the
same bits under every compiled fusion mode and does what it is for.

Runs are 6 iterations of 2 envs × 8 steps; DQN warms up over the first 16 env steps. The default
tier trains step and scan (the two ends of the fusion range); the slow tier adds fragment and
iteration.
"""

import importlib.util
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS = 6


def _load(name: str):
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", ROOT / "examples" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


EXAMPLES = {name: _load(name) for name in ("rnd", "dqn_auxiliary", "dyna")}
CONFIGS = {
    "rnd": testing.tiny("ppo-rnd", ITERATIONS, like="ppo"),
    "dqn_auxiliary": testing.tiny(
        "dqn-auxiliary", ITERATIONS, like="dqn", hparams={"aux_every": 2, "aux_batch_size": 8}
    ),
    "dyna": testing.tiny("dyna-dqn", ITERATIONS, like="dqn", hparams={"model_batch_size": 8}),
}
MODES = {
    "default": ("step", "scan"),
    "slow": ("fragment", "iteration"),
}


@pytest.fixture(scope="module")
def runs():
    """``runs(name, modes)``: the example's runs under ``modes``, trained on first request and
    checked to agree bit for bit with each other as they come."""
    trained: dict[str, dict] = {}

    def get(name: str, modes: tuple[str, ...]) -> dict:
        done = trained.setdefault(name, {})
        missing = [m for m in modes if m not in done]
        done.update(testing.run_modes(CONFIGS[name], EXAMPLES[name].SPEC, missing))
        first = next(iter(done.values()))
        for mode in modes:
            testing.assert_same_bits(done[mode], first, f"{name} under {mode}")
        return done

    return get


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_every_mode_computes_the_same_bits(runs, name):
    assert set(runs(name, MODES["default"])) >= set(MODES["default"])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_other_modes_too(runs, name):
    runs(name, MODES["default"] + MODES["slow"])


def test_rnd_adds_a_bonus_and_keeps_its_target_fixed(runs):
    run = runs("rnd", MODES["default"])["scan"]
    assert np.all(run.metrics["rnd/bonus"] > 0)
    # The target after 6 iterations is the one a run of 1 iteration ends with: never trained.
    one = rl.train(CONFIGS["rnd"].replace(total_steps=16, fusion="scan"), EXAMPLES["rnd"].SPEC)
    target = one.state.fragments["rnd"].target
    testing.assert_same_bits(run.state.fragments["rnd"].target, target)
    assert testing.differences(
        run.state.fragments["rnd"].predictor, one.state.fragments["rnd"].predictor
    )


def test_rnd_predictor_learns_what_it_sees_again():
    # The same rollout seen again and again: the predictor's error on it falls, and with it the
    # bonus those observations earn.
    module = EXAMPLES["rnd"]
    frag = module.rnd(module.RNDConfig(), (4,))
    observations = jax.random.normal(jax.random.key(1), (8, 2, 4))
    zeros = jnp.zeros((8, 2))
    trajectory = rl.Transition(observations, zeros, zeros, zeros, zeros, observations, {}, {})
    state, apply = frag.init(jax.random.key(0)), jax.jit(frag.apply)
    losses = []
    for _ in range(30):
        state, out = apply(state, {"trajectory": trajectory}, jax.random.key(0))
        losses.append(float(out["metrics"]["loss"]))
        np.testing.assert_array_equal(out["trajectory"].observation, observations)
    assert losses[-1] < 0.5 * losses[1]


def test_the_auxiliary_task_runs_every_2_iterations_after_the_warm_up(runs):
    metrics = runs("dqn_auxiliary", MODES["default"])["scan"].metrics
    # Due at the end of iterations 2, 4, 6; warmed up once 16 env steps are stored (iteration
    # 1 on): it runs at 2, 4 and 6, and its loss is 0 where it did not.
    np.testing.assert_array_equal(metrics["learner/runs"], [0, 1, 0, 1, 0, 1])
    assert np.all(metrics["learner/aux_loss"][1::2] > 0)
    assert np.all(metrics["learner/aux_loss"][0::2] == 0)


def test_the_auxiliary_task_waits_for_the_warm_up():
    module = EXAMPLES["dqn_auxiliary"]
    # Warm-up until 64 env steps: due at 2 (32 steps), not ready; at 4 (64 steps), ready.
    config = CONFIGS["dqn_auxiliary"].replace(
        hparams={**CONFIGS["dqn_auxiliary"].hparams, "learning_starts": 64}, fusion="scan"
    )
    metrics = rl.train(config, module.SPEC).metrics
    np.testing.assert_array_equal(metrics["learner/runs"], [0, 0, 0, 1, 0, 1])


def test_dyna_plans_on_what_its_model_imagines(runs):
    run = runs("dyna", MODES["default"])["scan"]
    metrics = run.metrics
    # Warmed up from the first iteration (16 env steps): two planning updates an iteration,
    # besides DQN's own two, and one model update.
    np.testing.assert_array_equal(metrics["learner.plan/updates"], 2)
    np.testing.assert_array_equal(metrics["updates"], 2)
    np.testing.assert_array_equal(metrics["model/runs"], 1)
    assert np.all(metrics["model/loss"] > 0) and np.all(metrics["learner/loss"] >= 0)
    # Each update counts toward the target network's period: real and imagined alike.
    assert int(run.state.fragments["learner"].updates) == 2 * 2 * ITERATIONS

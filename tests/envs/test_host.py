"""Host simulators (gymnasium-API environments) as the env fragment, under every fusion mode."""

import subprocess
import sys

import jax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.envs import Box, Discrete, host
from jaxrl_fdg.policies.fusion import PROGRAMS

TINY = rl.TrainConfig(
    env="gym/CartPole-v1",
    total_steps=2 * 8 * 3,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    log_every=2,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)


@pytest.fixture(scope="module")
def by_mode():
    return {mode: rl.train(TINY.replace(fusion=mode)) for mode in ("step", "fragment", "scan")}


def test_same_results_whether_stepped_in_python_or_called_back(by_mode):
    # step mode steps the simulators in Python between compiled policy calls; fragment and scan
    # call back into them from inside the compiled program. Same seed, same calls, same numbers.
    reference = by_mode["scan"]
    for mode in ("step", "fragment"):
        run = by_mode[mode]
        params = run.state.fragments["learner"].params
        testing.assert_same_bits(params, reference.state.fragments["learner"].params, mode)
        testing.assert_same_bits(run.metrics["loss"], reference.metrics["loss"], mode)


def test_step_mode_does_not_compile_the_host_env():
    loop = rl.build_loop(resolve(TINY.replace(fusion="step")))
    assert loop.info.env.site == "host"
    plan = rl.make_plan("step", loop)
    state = plan.init(jax.random.key(0))
    plan.compile(state)
    assert "env" not in plan.compiled  # plain Python between the compiled policy calls
    assert {"actor", "learner", "stack"} <= set(plan.compiled)
    fused = rl.make_plan("fragment", loop)
    fused.compile(state)
    assert "rollout" in fused.compiled  # the host env is called back from inside the program
    host.close(state.fragments["env"].env)


def test_episodes_end_and_reset_like_jax_envs(by_mode):
    metrics = by_mode["scan"].metrics
    assert metrics["episodes"].sum() >= 1  # random CartPole episodes last ~20 steps
    returns = metrics["episode_return_sum"].sum() / metrics["episodes"].sum()
    assert 5 <= returns <= 100


def test_spaces_and_graph():
    resolved = resolve(TINY)
    assert resolved.context.action_space == Discrete(2)
    assert isinstance(resolved.context.observation_space, Box)
    assert resolved.context.observation_space.shape == (4,)
    text = rl.build_loop(resolved).graph.describe(PROGRAMS)
    assert "[env, on the host]" in text
    sim = host.gymnasium_simulator("Pendulum-v1")
    assert isinstance(sim.action_space, Box) and sim.action_space.shape == (1,)


def test_unknown_gymnasium_id_is_a_config_error():
    with pytest.raises(rl.ConfigError, match="gymnasium cannot make 'NoSuchEnv-v0'"):
        resolve(TINY.replace(env="gym/NoSuchEnv-v0"))


def test_simulators_are_closed_after_a_run(by_mode):
    handle = int(by_mode["scan"].state.fragments["env"].env)
    assert handle not in host._SIMULATORS


def test_importing_envs_does_not_import_gymnasium():
    code = "import sys, jaxrl_fdg, jaxrl_fdg.envs; print('gymnasium' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.slow
def test_ppo_learns_gymnasiums_own_cartpole_through_the_adapter():
    # gymnasium's numpy CartPole, stepped on the host via io_callback inside the fused program.
    # Two seeds reached 267 and 318 at 120k steps; random play averages ~22.
    result = rl.train(
        rl.TrainConfig(env="gym/CartPole-v1", total_steps=120_000, out=None, progress=False)
    )
    assert result.summary["final_return"] >= 150, result.summary["final_return"]

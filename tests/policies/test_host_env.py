"""Placement host_env: host simulators in two halves, host stepping overlapping device inference.

The double-buffered plan (fusion ``step``) must compute exactly what the pure definition, the
loop with its env batch in halves, computes when fused (the simulators then called back from
inside the program); bad combinations are rejected before compiling; and PPO still learns
through it. That the plan's schedule leaves one half's actor program in flight while the host
steps the other half: tests/policies/test_double_buffer.py.
"""

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.core.step import join_halves
from jaxrl_fdg.envs import host

TINY = rl.TrainConfig(
    env="gym/CartPole-v1",
    placement="host_env",
    total_steps=4 * 8 * 3,
    num_envs=4,
    rollout_len=8,
    out=None,
    progress=False,
    log_every=2,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)
DQN = TINY.replace(
    algo="dqn", total_steps=4 * 8 * 4, hparams={"learning_starts": 32, "batch_size": 16}
)


def _assert_same_run(a: rl.RunResult, b: rl.RunResult) -> None:
    """Same learner state and metrics, and the same env halves (but for the simulator handles,
    which number each run's own simulators)."""

    def without_handles(result):
        return {
            **result.state.fragments,
            "env": [h._replace(env=None) for h in result.state.fragments["env"]],
        }

    testing.assert_same_bits((without_handles(a), a.metrics), (without_handles(b), b.metrics))


@pytest.fixture(scope="module")
def ppo_runs():
    return {mode: rl.train(TINY.replace(fusion=mode)) for mode in ("step", "fragment", "scan")}


def test_double_buffered_plan_equals_the_halved_loop_fused(ppo_runs):
    # step: simulators stepped in Python between dispatched actor programs, two halves
    # interleaved. fragment and scan: the halved loop's pure rollout, simulators called back from
    # inside the compiled program. Same calls, same order, same keys: bit for bit equal.
    for mode in ("fragment", "scan"):
        _assert_same_run(ppo_runs["step"], ppo_runs[mode])
    assert ppo_runs["step"].metrics["episodes"].sum() >= 1  # episodes end and reset


def test_off_policy_actor_counter_threads_through_the_halves():
    # DQN's actor state counts env steps (it drives ε): the halves pass it on, in one order.
    _assert_same_run(rl.train(DQN.replace(fusion="step")), rl.train(DQN.replace(fusion="fragment")))


def _with_step_fragment(frag):
    """PPO with ``frag`` added to its graph."""
    spec = resolve(TINY).spec
    return spec._replace(build=lambda ctx: spec.build(ctx).with_fragments(frag))


def test_any_step_graph_is_double_buffered_as_the_fused_modes_run_it():
    # A device fragment in the step body before the actor (it halves the observation the actor
    # acts on, and the trajectory records): the double-buffered plan drives the same step body.
    def halve(state, inputs, key):
        return state, {"observation": inputs["observation"] * 0.5}

    frag = rl.fragment(
        "halve", "transform", halve, inputs=("observation",), outputs=("observation",)
    )
    spec = _with_step_fragment(frag)
    step = rl.train(TINY.replace(fusion="step"), spec)
    _assert_same_run(step, rl.train(TINY.replace(fusion="fragment"), spec))
    assert rl.build_loop(resolve(TINY, spec)).graph.schedule.step == ("halve", "actor", "env")


def test_a_step_fragment_publishing_what_the_step_reads_is_refused():
    # The halves would read it at other times than the fused modes: refused before compiling.
    def count(state, inputs, key):
        return state + 1, {}

    frag = rl.fragment(
        "counter",
        "transform",
        count,
        init=lambda key: 0,
        inputs=("observation",),
        publish=lambda s: {"count": s},
        published=("count",),
    )
    reader = rl.fragment("reader", "transform", lambda s, i, k: (s, {}), inputs=("count",))
    spec = resolve(TINY).spec
    both = spec._replace(build=lambda ctx: spec.build(ctx).with_fragments(frag, reader))
    with pytest.raises(rl.ConfigError, match="'counter' publishes count, read within the step"):
        rl.build_loop(resolve(TINY, both))


def test_two_halves_of_simulators_closed_after_the_run(ppo_runs):
    halves = ppo_runs["step"].state.fragments["env"]
    handles = {int(np.asarray(half.env)) for half in halves}
    assert len(handles) == 2  # each half its own simulators
    assert not handles & set(host._SIMULATORS)


def test_learner_sees_the_whole_batch_half_zero_first():
    resolved = resolve(TINY)
    loop = rl.build_loop(resolved)
    assert loop.info.halves == 2
    assert loop.info.env.site is rl.Site.HOST
    state = jax.eval_shape(loop.init, jax.random.key(0))  # abstract: no simulator is made
    assert [h.observation.shape for h in state.fragments["env"]] == [(2, 4), (2, 4)]
    _, trajectory, _ = jax.eval_shape(loop.rollout, state)
    assert trajectory.observation.shape == (TINY.rollout_len, TINY.num_envs, 4)
    assert trajectory.reward.shape == (TINY.rollout_len, TINY.num_envs)
    joined = join_halves([{"x": np.zeros(2)}, {"x": np.ones(2)}])
    np.testing.assert_array_equal(joined["x"], [0, 0, 1, 1])


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"env": "CartPole-v1"}, "placement 'host_env' steps host simulators: env must be gym/"),
        ({"num_envs": 3, "total_steps": 3 * 8}, "num_envs must be even .*got 3"),
        ({"devices": 2}, "devices = 2 needs placement .*placement 'host_env': one device"),
        ({"num_seeds": 2}, "num_seeds = 2"),
        ({"fusion": "eager"}, "fusion modes step, fragment, iteration, scan; got 'eager'"),
        ({"policy_lag": 1}, "policy_lag = 1 needs placement 'single' or 'actor_learner'"),
    ],
)
def test_bad_combinations_are_config_errors_before_compiling(changes, message):
    with pytest.raises(rl.ConfigError, match=message):
        resolve(TINY.replace(**changes))


def test_host_simulators_still_cannot_be_checkpointed(tmp_path):
    config = TINY.replace(fusion="step", out=str(tmp_path), checkpoint_every=32)
    with pytest.raises(rl.ConfigError, match="cannot be checkpointed"):
        rl.train(config)


# -- learning --------------------------------------------------------------------------------


@pytest.mark.slow
def test_ppo_learns_cartpole_through_the_double_buffered_plan():
    # gymnasium's CartPole stepped on the host in two halves of 4, PPO's defaults otherwise.
    # Seeds 0-3 reached 198, 174, 210, 152 at 61k steps (~15 s each on a 2-core CPU); random
    # play averages ~22.
    config = rl.TrainConfig(
        env="gym/CartPole-v1",
        placement="host_env",
        fusion="step",
        num_envs=8,
        total_steps=60 * 8 * 128,
        out=None,
        progress=False,
        profile="off",
    )
    result = rl.train(config)
    assert result.summary["final_return"] >= 100, result.summary["final_return"]

"""The topology examples: PPG's periodic auxiliary phase (examples/ppg.py), a critic learner
the policy learner reads (examples/separate_critic.py) and an evaluator inside the graph
(examples/periodic_evaluation.py). Each computes the same bits under every compiled fusion mode,
each lane of a two-seed run is that seed's run alone, and each does what its topology is for.

Runs are 4 iterations of 2 envs × 8 steps with 16-unit networks, each trained once, when a test
first asks for it, and shared by the file's tests. Compiling is most of their cost, a two-seed
run's most of all, so the default tier trains step, fragment (which reuses most of step's
programs) and scan for every example, and two seeds for PPG, whose periodic node updates state
(under vmap its lax.cond becomes a select over that state); the slow tier adds iteration, two
seeds for the other two examples, and each example's main().
"""

import importlib.util
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODES = ("step", "fragment", "scan")  # the modes the default tier trains
ITERATIONS = 4
N = 2  # the periodic nodes' cadence: they run at the end of iterations 2 and 4
BASE = rl.TrainConfig(
    total_steps=2 * 8 * ITERATIONS,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    profile="off",
    log_every=2,
)
HPARAMS = {
    "ppg": {
        "hidden_sizes": (16,),
        "aux_every": N,
        "num_minibatches": 2,
        "aux_minibatches": 2,
        "aux_epochs": 2,
    },
    "separate_critic": {"hidden_sizes": (16,), "critic_steps": 2},
    "periodic_evaluation": {
        "hidden_sizes": (16,),
        "num_minibatches": 2,
        "update_epochs": 1,
        "graph_eval_every": N,
        "graph_eval_episodes": 2,
    },
}
SLOW = pytest.mark.slow


def _load(name: str):
    """examples/<name>.py as a module (registered in sys.modules before it runs, as
    ``--algo examples/<name>.py:SPEC`` loads it: its dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(
        f"example_{name}", ROOT / "examples" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


EXAMPLES = {name: _load(name) for name in HPARAMS}


def _config(name: str) -> rl.TrainConfig:
    return BASE.replace(algo=EXAMPLES[name].SPEC.name, hparams=HPARAMS[name])


@pytest.fixture(scope="module")
def trained():
    """``trained(name, mode)``: the example's run under fusion ``mode`` (``"seeds"``: two
    seeds, scan), trained on first request."""
    runs = {}

    def get(name: str, mode: str) -> rl.RunResult:
        if (name, mode) not in runs:
            example, config = EXAMPLES[name], _config(name)
            if mode == "seeds":
                runs[name, mode] = rl.train(config.replace(num_seeds=2), example.SPEC)
            else:
                runs[name, mode] = rl.train(config.replace(fusion=mode), example.SPEC)
        return runs[name, mode]

    return get


# -- every example -------------------------------------------------------------------------------


# The default tier: the periodic evaluator (its evaluator-only node, which the step driver
# schedules on its own) under step and fragment, the separate critic under fragment. PPG and the
# remaining modes run in the slow tier (vtrace's example holds the same contract by default).
DEFAULT_TIER = {("periodic_evaluation", "step"), ("periodic_evaluation", "fragment")}
DEFAULT_TIER |= {("separate_critic", "fragment")}
MODES = [
    pytest.param(name, mode, marks=() if (name, mode) in DEFAULT_TIER else SLOW)
    for name in HPARAMS
    for mode in ("step", "fragment", "iteration")
]


@pytest.mark.parametrize("name, mode", MODES)
def test_same_bits_as_scan(trained, name, mode):
    run, reference = trained(name, mode), trained(name, "scan")
    assert all(values.shape == (ITERATIONS,) for values in reference.metrics.values())
    testing.assert_same_bits(run, reference, f"{name} under {mode} against scan")


@SLOW  # tests/examples/test_vtrace.py holds the lanes' contract in the default tier
@pytest.mark.parametrize("name", list(HPARAMS))
def test_each_lane_of_two_seeds_is_that_seeds_run(trained, name):
    alone, both = trained(name, "scan"), trained(name, "seeds")  # seed 0; seeds 0 and 1
    # Lane 0 against seed 0's own run. The vmapped program batches every op over the lanes,
    # which XLA fuses and rounds differently: equal to float rounding, not bit for bit (the
    # parameters differ by up to about 2e-6).
    lane = jax.tree.map(lambda x: x[0], both.state.fragments)
    pairs = zip(testing.leaves(lane), testing.leaves(alone.state.fragments), strict=True)
    for (path, a), (_, b) in pairs:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)
    for key, values in alone.metrics.items():
        assert both.metrics[key].shape == (ITERATIONS, 2)
        np.testing.assert_allclose(
            both.metrics[key][:, 0], values, rtol=1e-5, atol=1e-6, err_msg=key
        )
    # And the lanes are two runs, not one run twice.
    params = jax.tree.leaves(both.state.fragments["learner"].params)
    assert any(not np.allclose(x[0], x[1]) for x in params)


@pytest.mark.parametrize("name", list(HPARAMS))
def test_spec_is_reachable_by_reference(name):
    # What `jaxrl-fdg train --algo examples/<name>.py:SPEC` looks up.
    spec = rl.algorithm.get(f"{ROOT / 'examples' / name}.py:SPEC")
    assert isinstance(spec, rl.AlgorithmSpec) and spec.name == EXAMPLES[name].SPEC.name


# main() at the algorithm's own sizes (64-unit networks, 8 × 128 steps for PPG): bigger programs
# than the runs above, so the slow tier.
MAIN_ARGS = {
    "ppg": ["--total-steps", "2048", "--aux-every", "1"],
    "separate_critic": ["--total-steps", "512"],
    "periodic_evaluation": ["--total-steps", "1024", "--graph-eval-every", "1"],
}


@SLOW
@pytest.mark.parametrize("name", list(HPARAMS))
def test_main_prints_the_schedule_and_the_same_results_under_two_modes(name, capsys):
    EXAMPLES[name].main([*MAIN_ARGS[name], "--fusion", "step,scan"])
    out = capsys.readouterr().out
    assert "schedule:\n  iteration\n" in out and "└─ after the rollout" in out
    assert "same state and metrics under every fusion mode" in out


# -- (a) PPG: the auxiliary phase every N iterations ---------------------------------------------


def test_ppg_schedules_the_auxiliary_phase_after_the_policy_phase():
    loop = rl.build_loop(rl.resolve(_config("ppg"), EXAMPLES["ppg"].SPEC))
    every_iteration, periodic = loop.graph.schedule.after
    assert every_iteration.cadence == rl.ITERATION
    assert [c.label for c in every_iteration.calls] == ["learner"]
    assert periodic.cadence == rl.every(N)
    assert [c.label for c in periodic.calls] == ["learner.auxiliary"]


def test_ppg_auxiliary_phase_ran_at_iterations_n_and_2n(trained):
    for mode in DEFAULT_MODES:
        run = trained("ppg", mode)
        metrics, state = run.metrics, run.state.fragments["learner"]
        np.testing.assert_array_equal(metrics["learner/runs"], [0, 1, 0, 1], err_msg=mode)
        # The phase counts the rollouts the learner had seen: N and 2N, so it ran after that
        # iteration's policy phase, with the buffer full of the last N rollouts.
        np.testing.assert_array_equal(metrics["learner/rollouts"], [0, N, 0, 2 * N], err_msg=mode)
        assert int(state.rollouts) == ITERATIONS
        ran = metrics["learner/runs"] > 0
        # The policy moved away from π_old during the phase, and the KL term measured it.
        assert np.all(metrics["learner/clone_kl"][ran] > 0), mode
        assert np.all(metrics["learner/aux_value_loss"][ran] > 0), mode
        assert np.all(metrics["learner/clone_kl"][~ran] == 0), mode
        # The buffer holds both slots' value targets.
        assert np.all(np.abs(np.asarray(state.targets)).sum(axis=1) > 0), mode


# -- (b) the critic learner before the policy learner --------------------------------------------


def test_critic_runs_before_the_policy_learner_whatever_the_declaration_order():
    example = EXAMPLES["separate_critic"]
    loop = rl.build_loop(rl.resolve(_config("separate_critic"), example.SPEC))
    names = [f.name for f in loop.graph.fragments]
    assert names.index("learner") < names.index("critic")  # declared after the policy learner
    (node,) = loop.graph.schedule.after
    assert node.fragments == ("critic", "learner")  # run before it: the policy reads its params
    by_name = {f.name: f for f in loop.graph.fragments}
    for order in (("env", "actor", "critic", "learner"), ("env", "actor", "learner", "critic")):
        graph = rl.Graph.build("swapped", [by_name[n] for n in order], BASE.rollout_len)
        (node,) = graph.schedule.after
        assert node.fragments == ("critic", "learner"), order


def test_the_policy_computed_its_advantages_with_this_iterations_critic(trained):
    # The policy reports the mean V_φ(s_t) its advantages used; the critic the same mean under
    # the parameters it published after this iteration's fit.
    for mode in DEFAULT_MODES:
        metrics = trained("separate_critic", mode).metrics
        np.testing.assert_allclose(
            metrics["value_mean"], metrics["critic/value_mean"], rtol=1e-6, err_msg=mode
        )


def test_one_iteration_by_hand_the_policy_read_the_fitted_critic():
    # The same claim from outside: one rollout and one learn, then the critic's values on that
    # rollout before and after its fit, computed here.
    example = EXAMPLES["separate_critic"]
    resolved = rl.resolve(_config("separate_critic"), example.SPEC)
    loop = rl.build_loop(resolved)
    state = loop.init(jax.random.key(0))
    state, trajectory, key = jax.jit(loop.rollout)(state)
    after, metrics = jax.jit(loop.learn)(state, trajectory, key)
    hp = resolved.context.hparams

    def mean_value(states):
        return example.critic_values(hp, states["critic"].params, trajectory.observation).mean()

    before, fitted = mean_value(state.fragments), mean_value(after.fragments)
    assert abs(fitted - before) > 1e-4  # the fit moved the values: the check below can tell
    np.testing.assert_allclose(metrics["value_mean"], fitted, rtol=1e-6)
    assert not np.isclose(metrics["value_mean"], before, rtol=1e-6)


# -- (c) the evaluator inside the graph ----------------------------------------------------------


def test_evaluator_is_a_periodic_node_after_the_learner():
    example = EXAMPLES["periodic_evaluation"]
    loop = rl.build_loop(rl.resolve(_config("periodic_evaluation"), example.SPEC))
    every_iteration, periodic = loop.graph.schedule.after
    assert every_iteration.fragments == ("learner",)
    assert periodic.cadence == rl.every(N) and periodic.fragments == ("evaluator",)
    assert ("learner.params", "evaluator.params", "published") in loop.graph.edges


def test_evaluator_ran_every_n_iterations_with_a_return_only_there(trained):
    for mode in DEFAULT_MODES:
        metrics = trained("periodic_evaluation", mode).metrics
        ran = metrics["evaluator/runs"] > 0
        np.testing.assert_array_equal(metrics["evaluator/runs"], [0, 1, 0, 1], err_msg=mode)
        returns = metrics["evaluator/eval_return"]
        assert np.all(np.isfinite(returns[ran])) and np.all(returns[ran] >= 1), mode
        assert np.all(returns[~ran] == 0), mode
        # CartPole pays 1 per step: an episode's return is its length.
        np.testing.assert_array_equal(returns, metrics["evaluator/eval_length"], err_msg=mode)


def test_the_evaluator_leaves_what_training_computes_as_it_was(trained):
    # Its node draws its key apart from the learner's: PPO's state and metrics, evaluator and
    # all, equal PPO's alone with the same seed and hyperparameters.
    with_evaluator = trained("periodic_evaluation", "scan")
    hparams = {k: v for k, v in HPARAMS["periodic_evaluation"].items() if "graph" not in k}
    alone = rl.train(BASE.replace(algo="ppo", hparams=hparams))
    testing.assert_same_bits(
        with_evaluator.state.fragments["learner"], alone.state.fragments["learner"], "learner"
    )
    ppo_metrics = {key: with_evaluator.metrics[key] for key in alone.metrics}
    testing.assert_same_bits(ppo_metrics, alone.metrics, "PPO's metrics")

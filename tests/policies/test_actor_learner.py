"""Actor/learner placement on forced CPU devices (4, of which it uses the first two; in a
subprocess, since the device count is fixed when JAX starts), the lagged loop it runs
asynchronously, and bad input."""

import textwrap

import jax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run.checkpoint import FOLDER as CHECKPOINTS
from jaxrl_fdg.run.checkpoint import Checkpointer

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax
    import jaxrl_fdg as rl
    from jaxrl_fdg import testing
    from jaxrl_fdg.policies.actor_learner import ActorLearnerPlan
    from jaxrl_fdg.config import resolve

    hparams = {
        "ppo": {"num_minibatches": 2, "update_epochs": 2},
        "dqn": {"learning_starts": 16, "batch_size": 8},
        "impala": {},
    }

    def same(a, b):
        return not testing.differences(a.state.fragments, b.state.fragments)

    report = {}
    for algo in json.loads(sys.argv[1]):
        base = rl.TrainConfig(
            algo=algo, total_steps=4 * 16 * 5, num_envs=4, rollout_len=16, out=None,
            progress=False, log_every=2, hparams=hparams[algo],
        )
        split = base.replace(fusion="fragment", placement="actor_learner", devices=2)
        single = rl.train(base.replace(fusion="fragment"))
        sync = rl.train(split)
        lagged_scan = rl.train(base.replace(policy_lag=1))
        lagged_step = rl.train(base.replace(fusion="step", policy_lag=1))
        lagged_split = rl.train(split.replace(policy_lag=1))
        report[algo] = {
            "sync_equals_single": same(sync, single),
            "async_equals_lagged_scan": same(lagged_split, lagged_scan),
            "lagged_step_equals_scan": same(lagged_step, lagged_scan),
            "lag_changes_result": not same(lagged_scan, single),
            "policy_lag": lagged_split.metrics["policy_lag"].tolist(),
            "metrics_equal": not testing.differences(lagged_split.metrics, lagged_scan.metrics),
        }

    # Where the programs run: the rollout on device 0, the learner on device 1. The configuration
    # is PPO's lagged split run's above, so its programs come from the compilation cache.
    config = rl.TrainConfig(
        total_steps=4 * 16 * 5, num_envs=4, rollout_len=16, out=None, progress=False,
        log_every=2, fusion="fragment", placement="actor_learner", devices=2, policy_lag=1,
        hparams=hparams["ppo"],
    )
    plan = ActorLearnerPlan(rl.build_loop(resolve(config)))
    state = plan.init(jax.random.key(0))
    plan.advance(state, 1)
    devices = {}
    for name, program in plan.compiled.items():
        shardings = jax.tree.leaves(program.input_shardings)
        devices[name] = sorted({d.id for s in shardings for d in s.device_set})
    report["devices"] = devices
    print("REPORT", json.dumps(report))
    """
)

_LEARN_SCRIPT = textwrap.dedent(
    """
    import json
    import jaxrl_fdg as rl

    returns = []
    for seed in (0, 1):
        m = rl.train(
            rl.TrainConfig(
                total_steps=300_000, out=None, progress=False, fusion="fragment",
                placement="actor_learner", devices=2, policy_lag=1, seed=seed,
            )
        ).metrics
        last = len(m["episodes"]) // 10  # the last tenth of the run: 58 iterations, 30k steps
        returns.append(float(m["episode_return_sum"][-last:].sum() / m["episodes"][-last:].sum()))
    print("REPORT", json.dumps({"final_returns": returns}))
    """
)


@pytest.fixture(scope="module")
def report(report_on_devices):
    return report_on_devices(_SCRIPT, devices=4, timeout=500, args=['["ppo"]'])


@pytest.fixture(scope="module")
def slow_report(report_on_devices):
    return report_on_devices(_SCRIPT, devices=4, timeout=800, args=['["dqn", "impala"]'])


# PPO in the default tier; DQN (the same placement code on an off-policy graph) and IMPALA (the
# algorithm the asynchronous split is for) in the slow tier.
ALGOS = ["ppo", *(pytest.param(a, marks=pytest.mark.slow) for a in ("dqn", "impala"))]


def _algo_report(request, algo):
    return request.getfixturevalue("report" if algo == "ppo" else "slow_report")[algo]


@pytest.mark.parametrize("algo", ALGOS)
def test_synchronous_split_equals_single_device_bit_for_bit(request, algo):
    assert _algo_report(request, algo)["sync_equals_single"]


@pytest.mark.parametrize("algo", ALGOS)
def test_asynchronous_split_equals_the_lagged_loop_in_any_fusion_mode(request, algo):
    r = _algo_report(request, algo)
    assert r["async_equals_lagged_scan"] and r["lagged_step_equals_scan"] and r["metrics_equal"]
    assert r["lag_changes_result"]  # the lag is real: a different run from the synchronous one


def test_policy_lag_is_bounded_and_reported(report):
    # The first update learns from the rollout collected at init (same parameters); every later
    # one from a rollout collected one update earlier.
    assert report["ppo"]["policy_lag"] == [0.0] + [1.0] * 4


def test_rollout_and_learner_run_on_their_own_devices(report):
    assert report["devices"] == {"init": [0], "rollout": [0], "learner": [1]}


@pytest.mark.slow
def test_asynchronous_actors_learn_cartpole(report_on_devices):
    # The mean return over the last tenth of a 300k-step run, seeds 0 and 1: 390.5 and 483.6
    # measured (seeds 2 and 3: 467.4, 405.0; synchronous PPO reaches 500). One seed's figure
    # moves by up to 90 when only the last bits of its first rollout change (docs/decisions.md,
    # "Compiling from shapes"), so the test averages two; the first iterations score about 25.
    returns = report_on_devices(_LEARN_SCRIPT, devices=2, timeout=500)["final_returns"]
    assert sum(returns) / len(returns) >= 400, returns


BASE = rl.TrainConfig(total_steps=256, num_envs=4, rollout_len=16, out=None, progress=False)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"placement": "actor_learner", "devices": 2}, "runs fusion modes fragment; got 'scan'"),
        ({"placement": "actor_learner", "fusion": "fragment", "devices": 3}, "uses 2 devices"),
        (
            {"placement": "actor_learner", "fusion": "fragment", "devices": 2},
            "devices = 2 but this process sees 1",
        ),
        ({"policy_lag": 2}, "unknown policy_lag 2 (valid: 0, 1)"),
        ({"policy_lag": 1, "placement": "data_parallel"}, "needs placement 'single' or"),
        (
            {"placement": "actor_learner", "fusion": "fragment", "devices": 2, "num_seeds": 2},
            "cannot be combined",
        ),
    ],
)
def test_bad_actor_learner_configs_are_rejected_before_compiling(changes, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rl.config.resolve(BASE.replace(**changes))


def test_a_lagged_run_checkpoints_its_pending_rollout(tmp_path):
    config = BASE.replace(
        out=str(tmp_path), policy_lag=1, hparams={"num_minibatches": 2, "update_epochs": 1}
    )
    result = rl.train(config)
    assert result.state.pending is not None
    checkpointer = Checkpointer(result.run_dir / CHECKPOINTS)
    try:
        template = jax.jit(rl.build_loop(rl.resolve(config)).init)(jax.random.key(1))
        restored = checkpointer.restore(template)
    finally:
        checkpointer.close()
    testing.assert_same_bits(restored, result.state)

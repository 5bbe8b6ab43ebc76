"""Data-parallel placement on 4 forced CPU devices, in a subprocess (the device count is fixed
when JAX starts): shard_map and pmap against the vmapped reference, and bad input. Every
registered algorithm, SAC and TD3 included, runs sharded in tests/policies/test_gradient_path.py."""

import json
import textwrap

import pytest

import jaxrl_fdg as rl

_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    import jaxrl_fdg as rl

    hparams = {
        "ppo": {"num_minibatches": 2, "update_epochs": 2},
        # Recurrent: each shard's actor keeps the memory of its own 2 envs.
        "ppo_gru": {
            "num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,), "memory": "gru",
            "memory_size": 8,
        },
        "dqn": {"learning_starts": 16, "batch_size": 8},
        "ddpg": {"learning_starts": 16, "batch_size": 8, "buffer_size": 256},
    }
    envs = {"ppo": "CartPole-v1", "dqn": "CartPole-v1", "ddpg": "Pendulum-v1"}
    algos = {"ppo_gru": "ppo"}
    report = {}
    for case, backends in json.loads(sys.argv[1]).items():
        algo, fusion = case.split("-")
        base = rl.TrainConfig(
            algo=algos.get(algo, algo), env=envs.get(algo, "CartPole-v1"),
            total_steps=8 * 8 * 4, num_envs=8, rollout_len=8, out=None, progress=False,
            log_every=2, fusion=fusion, placement="data_parallel",
            devices=4, hparams=hparams[algo],
        )
        ref = rl.train(base.replace(dp_backend="vmap")).state.fragments

        def diff(a, b):
            return max(
                float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
                for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
            )

        def excess(a, b):
            # How far |a - b| goes beyond 1e-6 of |b|: rounding shows as <= 0 plus a few ulps
            # of values near zero, whatever each value's magnitude.
            return max(
                float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))
                             - 1e-6 * np.abs(np.asarray(y, np.float64))))
                for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)) if np.size(x)
            )

        for backend in backends:
            run = rl.train(base.replace(dp_backend=backend))
            learner = run.state.fragments["learner"]
            report[f"{case}-{backend}"] = {
                "diff": diff(run.state.fragments, ref),
                "excess": excess(run.state.fragments, ref),
                "learner_spread": diff(
                    jax.tree.map(lambda x: x[0], learner), jax.tree.map(lambda x: x[3], learner)
                ),
                "finite": all(
                    bool(np.isfinite(np.asarray(x)).all())
                    for x in [*jax.tree.leaves(run.state.fragments), *run.metrics.values()]
                    if np.issubdtype(np.asarray(x).dtype, np.floating)
                ),
                "devices": len(run.state.fragments["env"].observation.sharding.device_set),
            }
    print("REPORT", json.dumps(report))
    """
)


# Each case is compared against the vmapped reference on one device. The default tier runs the
# fused program of an on- and an off-policy algorithm under shard_map; the slow tier adds pmap,
# step mode, DDPG's iteration programs and recurrent PPO.
DEFAULT_TIER = {"ppo-scan": ["shard_map"], "dqn-scan": ["shard_map"]}
SLOW_TIER = {
    "ppo-scan": ["pmap"],
    "dqn-scan": ["pmap"],
    "ppo-step": ["shard_map", "pmap"],
    "ddpg-iteration": ["shard_map", "pmap"],
    "ppo_gru-scan": ["shard_map"],
}
CASES = [
    pytest.param(f"{case}-{backend}", marks=marks)
    for tier, marks in ((DEFAULT_TIER, ()), (SLOW_TIER, pytest.mark.slow))
    for case, backends in tier.items()
    for backend in backends
]


@pytest.fixture(scope="module")
def default_report(report_on_devices):
    return report_on_devices(_SCRIPT, devices=4, timeout=400, args=[json.dumps(DEFAULT_TIER)])


@pytest.fixture(scope="module")
def slow_report(report_on_devices):
    return report_on_devices(_SCRIPT, devices=4, timeout=600, args=[json.dumps(SLOW_TIER)])


@pytest.fixture
def report(request, case):
    run, backend = case.rsplit("-", 1)
    default = backend in DEFAULT_TIER.get(run, ())
    return request.getfixturevalue("default_report" if default else "slow_report")


# 4 devices × 2 envs against 4 shards × 2 envs vmapped on one device (N·E = 8 envs there): the
# same computation except that the gradient mean is a cross-device all-reduce, whose summation
# order may differ, and the reference's vmapped ``init`` and the shards' ``init`` are different
# programs (compiled without LLVM optimisation, see policies.compiling.RUN_ONCE), whose env resets
# can round apart by an ulp. Every leaf agrees to float32 rounding after 4 iterations: within 1e-6
# of its magnitude (an episode return near 300 is 1.5e-5 from the next float32) plus 1e-6.
TOLERANCE = 1e-6


@pytest.mark.parametrize("case", CASES)
def test_devices_equal_the_single_device_reference(report, case):
    r = report[case]
    assert r["excess"] <= TOLERANCE, r
    assert r["devices"] == 4  # the environments really were spread over 4 devices


@pytest.mark.parametrize("case", CASES)
def test_learner_copies_stay_identical_and_finite(report, case):
    assert report[case]["learner_spread"] == 0.0
    assert report[case]["finite"]


def test_bad_placements_are_rejected_before_compiling():
    base = rl.TrainConfig(out=None, progress=False, placement="data_parallel")
    with pytest.raises(rl.ConfigError, match="devices = 64 but this process sees 1 cpu device"):
        rl.resolve(base.replace(devices=64, num_envs=64))
    with pytest.raises(rl.ConfigError, match="num_envs = 4 does not divide into devices = 3"):
        rl.resolve(base.replace(devices=3, dp_backend="vmap"))
    with pytest.raises(rl.ConfigError, match="unknown placement 'cluster'"):
        rl.resolve(base.replace(placement="cluster"))
    with pytest.raises(rl.ConfigError, match="devices = 2 needs placement 'data_parallel'"):
        rl.resolve(base.replace(placement="single", devices=2))
    with pytest.raises(rl.ConfigError, match="unknown dp_backend 'mpi'"):
        rl.resolve(base.replace(dp_backend="mpi"))

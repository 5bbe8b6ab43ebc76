"""One gradient-averaging path that no learner can forget: every registered algorithm, under
data_parallel on 2 forced CPU devices, keeps the same learner on every shard (all but a replay
buffer a learner holds, each shard's of its own environments: QMIX's and VDN's).

Learners take their optimizer from ``AlgorithmContext.optimizer``, which passes gradients
through the placement's combination (a mean over shards) before the update. A learner that
stepped with a bare optax optimizer would let its shards drift apart after the first update,
each having seen only its own environments; this test would see that as a non-zero spread."""

import json
import textwrap

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.core import algorithm as algorithms

_SCRIPT = textwrap.dedent(
    """
    import json
    import jax, numpy as np
    import jaxrl_fdg as rl
    from jaxrl_fdg import testing

    def shared(learner):
        # All of a learner but a replay buffer it holds: each shard's of its own experience.
        if hasattr(learner, "replay"):
            learner = learner._replace(replay=None)
        return [np.asarray(x) for x in jax.tree.leaves(learner)]

    tiny = json.loads({tiny!r})
    report = {{}}
    for algo, extra in tiny.items():
        config = rl.TrainConfig(
            algo=algo, total_steps=4 * 8 * 3, num_envs=4, rollout_len=8, out=None,
            progress=False, log_every=3, profile="off", placement="data_parallel", devices=2,
            **extra,
        )
        result = rl.train(config)
        leaves = shared(result.state.fragments["learner"])
        init = testing.initial_state(rl.build_loop(rl.resolve(config)), jax.random.key(config.seed))
        report[algo] = {{
            "spread": max(float(np.max(np.abs(x[0] - x[1]))) for x in leaves),
            "moved": max(
                float(np.max(np.abs(a[0] - b[0])))
                for a, b in zip(leaves, shared(init.fragments["learner"]))
            ),
            "updates": float(np.sum(result.metrics.get("updates", [1.0]))),
        }}
    print("REPORT", json.dumps(report))
    """
)

_OFF_POLICY = {"learning_starts": 32, "batch_size": 8, "buffer_size": 128, "utd_ratio": 0.125}
_RECURRENT_TEAM = {"learning_starts": 17, "batch_size": 2, "buffer_size": 8, "num_updates": 2}
TINY = {
    "ppo": dict(hparams={"num_minibatches": 2, "update_epochs": 2}),
    "a2c": dict(),
    "impala": dict(),
    "dqn": dict(hparams={**_OFF_POLICY, "hidden_sizes": [16]}),
    "c51": dict(hparams={**_OFF_POLICY, "hidden_sizes": [16], "num_atoms": 11}),
    "pqn": dict(hparams={"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": [16]}),
    "sac": dict(env="Pendulum-v1", hparams=_OFF_POLICY),
    "td3": dict(env="Pendulum-v1", hparams=_OFF_POLICY),
    "ddpg": dict(env="Pendulum-v1", hparams=_OFF_POLICY),
    # 4 games of 3 agents: 2 games (6 rows) per shard.
    "ippo": dict(env="jaxmarl/MPE_simple_spread_v3", hparams={"num_minibatches": 2}),
    "mappo": dict(env="jaxmarl/MPE_simple_spread_v3", hparams={"num_minibatches": 2}),
    "pqn-vdn": dict(env="jaxmarl/MPE_simple_spread_v3", hparams={"num_minibatches": 2}),
    "pqn-qmix": dict(env="jaxmarl/MPE_simple_spread_v3", hparams={"num_minibatches": 2}),
    # Each shard replays its own games' sequences: 16 game steps a shard per iteration, so the
    # updates start in the second.
    "vdn": dict(env="jaxmarl/MPE_simple_spread_v3", hparams=_RECURRENT_TEAM),
    "qmix": dict(
        env="jaxmarl/HeuristicEnemySMAX",
        env_options={"map": "3m", "world_state": True},
        hparams=_RECURRENT_TEAM,
    ),
}


def test_every_registered_algorithm_is_covered():
    assert set(TINY) == set(algorithms.registered())


# SAC (a learned temperature, a critic ensemble, target networks) in the default tier, the others
# in the slow tier: the default tier's tests/policies/test_data_parallel.py already checks PPO's and
# DQN's learner copies stay identical on 4 sharded devices.
DEFAULT_TIER = ("sac",)


def _report(run, algos):
    tiny = {algo: TINY[algo] for algo in algos}
    return run(_SCRIPT.format(tiny=json.dumps(tiny)), devices=2, timeout=600)


@pytest.fixture(scope="module")
def default_report(report_on_devices):
    return _report(report_on_devices, DEFAULT_TIER)


@pytest.fixture(scope="module")
def slow_report(report_on_devices):
    return _report(report_on_devices, sorted(set(TINY) - set(DEFAULT_TIER)))


@pytest.mark.parametrize(
    "algo",
    [pytest.param(a, marks=() if a in DEFAULT_TIER else pytest.mark.slow) for a in sorted(TINY)],
)
def test_shards_keep_one_learner(request, algo):
    tier = "default_report" if algo in DEFAULT_TIER else "slow_report"
    row = request.getfixturevalue(tier)[algo]
    assert row["updates"] > 0  # the learner stepped (off-policy ones after their warm-up)
    assert row["moved"] > 0  # and its parameters changed
    assert row["spread"] == 0.0, row  # identically on both shards


def test_context_hands_learners_a_combining_optimizer():
    import dataclasses

    import jax
    import optax

    context = rl.resolve(rl.TrainConfig(out=None)).context
    doubled = dataclasses.replace(
        context, combine_gradients=lambda g: jax.tree.map(lambda x: 2 * x, g)
    )
    tx = doubled.optimizer(optax.sgd(1.0))
    updates, _ = tx.update({"w": 1.0}, tx.init({"w": 0.0}))
    assert updates["w"] == -2.0  # sgd(1.0) of the combined gradient 2 × 1.0
    plain = context.optimizer(optax.sgd(1.0))  # one device: the gradients as they are
    assert plain.update({"w": 1.0}, plain.init({"w": 0.0}))[0]["w"] == -1.0

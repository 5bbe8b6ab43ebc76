"""A new placement is one module and its test: here, a placement that runs the learner on the host
CPU device while the rollout runs on the default device, written in this file alone, registered,
run through ``rl.train`` and refused, by its declaration alone, where it does not apply."""

import jax
import pytest
from jax.sharding import SingleDeviceSharding

import jaxrl_fdg as rl
from jaxrl_fdg import policies, testing
from jaxrl_fdg.policies import BasePlacement, EnvKind, Supports
from jaxrl_fdg.policies.plan import Plan


class LearnerOnHostPlan(Plan):
    """The rollout program on the default device, the learner program on the host's CPU; the
    state moves to the host for the learner and back for the next rollout."""

    mode = "fragment"

    def __init__(self, loop, timings=None, chunk=1):
        super().__init__(loop, timings)
        self.device, self.host = jax.devices()[0], jax.devices("cpu")[0]

    def _signatures(self, state):
        after = jax.eval_shape(self.loop.rollout, state)
        on_host = SingleDeviceSharding(self.host)
        after = jax.tree.map(lambda s: s.update(sharding=on_host), after)
        return {"rollout": (self.loop.rollout, (state,)), "learner": (self.loop.learn, after)}

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            after = jax.device_put(self._call("rollout", state), self.host)
            state, metrics = self._call("learner", *after)
            state = jax.device_put(state, self.device)
            per_iteration.append(metrics)
        return state, per_iteration


class LearnerOnHost(BasePlacement):
    name = "learner_on_host"
    summary = "rollout on the default device, learner on the host CPU"
    supports = Supports(envs=frozenset({EnvKind.JAX}))  # one device, no policy lag, no lanes
    plans = {"fragment": LearnerOnHostPlan}


@pytest.fixture(scope="module")
def learner_on_host():
    placement = policies.register(LearnerOnHost())
    yield placement
    policies.unregister(placement.name)


BASE = rl.TrainConfig(
    total_steps=2 * 8 * 3,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    log_every=2,
    fusion="fragment",
    hparams={"num_minibatches": 2, "update_epochs": 2},
)


def test_a_registered_placement_runs_and_computes_the_single_run(learner_on_host):
    moved = rl.train(BASE.replace(placement="learner_on_host"))
    alone = rl.train(BASE)
    assert moved.summary["iterations"] == alone.summary["iterations"] == 3
    testing.assert_same_bits(moved.state.fragments, alone.state.fragments)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"fusion": "scan"}, "placement 'learner_on_host' runs fusion modes fragment; got 'scan'"),
        ({"devices": 2}, "devices = 2 needs placement 'data_parallel' or 'actor_learner'"),
        ({"policy_lag": 1}, "policy_lag = 1 needs placement 'single' or 'actor_learner'"),
        ({"num_seeds": 2}, "placement 'learner_on_host' and 2 runs .* cannot be combined"),
        ({"env": "gym/CartPole-v1"}, "'learner_on_host' cannot step a host simulator"),
    ],
)
def test_what_it_does_not_declare_is_refused_before_compiling(learner_on_host, changes, message):
    with pytest.raises(rl.ConfigError, match=message):
        rl.resolve(BASE.replace(placement="learner_on_host", **changes))


def test_it_is_a_candidate_of_placement_auto(learner_on_host):
    from jaxrl_fdg.config.resolve import auto_placements

    candidates = auto_placements(BASE)
    assert "learner_on_host" in candidates
    assert candidates["learner_on_host"].placement is learner_on_host

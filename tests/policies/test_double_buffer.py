"""The double-buffered plan of placement ``host_env`` (``jaxrl_fdg.policies.double_buffer``): its
schedule really leaves one half's actor program in flight while the host steps the other half,
and the device computes one half while the host steps the other; it takes only a loop of host
simulators in two halves. That it computes what the fused modes compute:
tests/policies/test_host_env.py."""

import time

import gymnasium
import jax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.envs import host
from jaxrl_fdg.policies import host_env

TINY = rl.TrainConfig(
    env="gym/CartPole-v1",
    placement="host_env",
    fusion="step",
    total_steps=4 * 8 * 3,
    num_envs=4,
    rollout_len=8,
    out=None,
    progress=False,
    log_every=2,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)


def test_the_plan_takes_only_host_simulators_in_two_halves():
    loop = rl.build_loop(resolve(testing.tiny("ppo")))  # a JAX environment, one stream
    with pytest.raises(TypeError, match="needs a loop of host simulators in two halves"):
        host_env.DoubleBufferedPlan(loop)


# -- overlap ---------------------------------------------------------------------------------

SLEEP_S = 0.005  # per environment step: host work that needs no CPU, so load cannot stretch it


class _SlowStep(gymnasium.Wrapper):
    def step(self, action):
        time.sleep(SLEEP_S)
        return self.env.step(action)


@pytest.fixture(scope="module")
def schedule():
    """One iteration of the double-buffered plan, its events recorded: a slow host simulator
    (each step sleeps) and an actor with a large network (a millisecond of device work)."""
    config = TINY.replace(fusion="step", hparams={**TINY.hparams, "hidden_sizes": (1024, 1024)})
    resolved = resolve(config)
    spaces = resolved.env.observation_space, resolved.env.action_space

    def make_batch(num_envs, seed):
        slow_envs = [_SlowStep(gymnasium.make("CartPole-v1")) for _ in range(num_envs)]
        return host.GymnasiumBatch(slow_envs, seed, *spaces)

    slow = resolved.env._replace(make_batch=make_batch)
    algorithm = resolved.spec.build(resolved.context)
    loop = host_env.halved(slow, config.num_envs, algorithm, config.rollout_len)
    events: list = []
    plan = host_env.DoubleBufferedPlan(loop, schedule=events)
    state = plan.init(jax.random.key(0))
    plan.compile(state)
    state, pending = plan.advance(state, 1)
    plan.collect(pending)
    for handle in host_env.simulator_handles(loop, state):
        host.close(handle)
    return events


def test_schedule_keeps_the_other_half_in_flight_while_the_host_steps(schedule):
    # The order of calls is the plan's structure, deterministic whatever the timing: each half's
    # next actor call is dispatched right after its host step, before the other half is read.
    steps = TINY.rollout_len
    expected = [("dispatch", 0, 0), ("dispatch", 1, 0)]
    for t in range(steps):
        for h in (0, 1):
            expected += [("host_start", h, t), ("host_end", h, t)]
            expected += [("dispatch", h, t + 1)] if t + 1 < steps else []
    assert [event[:3] for event in schedule] == expected
    # While the host steps a half, the other half's actor call is in flight: always, except
    # during the very last host step of the rollout (nothing left to compute).
    in_flight = [e[3] is not None for e in schedule if e[0] == "host_start"]
    assert in_flight == [True] * (2 * steps - 1) + [False]


def test_device_computes_one_half_while_the_host_steps_the_other(schedule):
    # Real overlap, shown without timing thresholds: the other half's actions were not ready
    # when the host began stepping this half, and were ready when it finished, so the device
    # computed them during the host step. Only "at least once" is asserted, so that load on the
    # machine is most unlikely to fail it (typically every half-step with work in flight
    # qualifies: 15 of 15 here). A serial schedule never qualifies: nothing is in flight.
    starts = [e for e in schedule if e[0] == "host_start"]
    ends = [e for e in schedule if e[0] == "host_end"]
    overlapped = [s[3] is False and e[3] is True for s, e in zip(starts, ends, strict=True)]
    assert sum(overlapped) >= 1, schedule

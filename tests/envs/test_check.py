"""``check_env``: every kind of broken contract is found, by the check named for it, on a small
environment broken on purpose; built-in and wrapped environments pass.

The toy environment counts: its position starts in [0, 1), moves by 0.1 on action 1, and its
episode terminates after 5 steps. Each broken variant changes one thing."""

import random
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import jaxrl_fdg as rl
from jaxrl_fdg import envs
from jaxrl_fdg.envs import Box, Dict, Discrete, Environment
from jaxrl_fdg.envs.check import CHECKS, Problem, Report, check_env
from jaxrl_fdg.envs.host import HostSimulator

SIZES = {"steps": 16, "num_envs": 2}


class ToyState(NamedTuple):
    position: jax.Array  # float32
    count: jax.Array  # int32: steps taken in the episode


@struct.dataclass
class ToyParams:
    max_steps: int = struct.field(pytree_node=False, default=50)


class Toy(Environment):
    name = "Toy-v0"
    length = 5  # the episode terminates after this many steps

    @property
    def default_params(self):
        return ToyParams()

    def observe(self, state):
        return jnp.stack([state.position, state.count.astype(jnp.float32)])

    def reset_env(self, key, params):
        state = ToyState(jax.random.uniform(key, (), jnp.float32), jnp.zeros((), jnp.int32))
        return state, self.observe(state)

    def step_env(self, key, state, action, params):
        state = ToyState(state.position + 0.1 * action, state.count + 1)
        terminated = state.count >= self.length
        return state, self.observe(state), jnp.float32(1.0), terminated

    def observation_space(self, params):
        return Box(0.0, 10.0, (2,), jnp.float32)

    def action_space(self, params):
        return Discrete(2)


def _check(env, **sizes):
    return check_env(env, **{**SIZES, **sizes})


def _failed_alone(report: Report, check: str, needle: str) -> None:
    """``check`` failed, with ``needle`` in its message."""
    assert check in report.failed, str(report)
    assert any(needle in p.message for p in report.problems if p.check == check), str(report)


def test_the_toy_passes_every_check_that_applies():
    report = _check(Toy())
    assert report.ok, str(report)
    assert set(report.passed) == set(CHECKS) - {"action_mask", "info"}
    assert dict(report.skipped).keys() == {"action_mask", "info"}


class Float64Observation(Toy):
    def observe(self, state):
        return super().observe(state).astype(jnp.float64)


def test_a_float64_observation_is_named_with_its_fix():
    with jax.enable_x64(True):
        report = _check(Float64Observation())
    _failed_alone(report, "spaces", "dtype float64 but observation_space says float32")
    assert "jnp.asarray(obs, jnp.float32)" in str(report)
    assert "declare Box(..., dtype=float64)" in str(report)


class IntObservation(Toy):
    def observe(self, state):
        return jnp.stack([state.count, state.count])


def test_an_integer_observation_of_a_float_space_is_named():
    _failed_alone(_check(IntObservation()), "spaces", "dtype int32 but observation_space says")


class WrongShape(Toy):
    def observe(self, state):
        return jnp.stack([state.position, state.position, state.position])


def test_a_wrong_shape_is_named():
    report = _check(WrongShape())
    _failed_alone(report, "spaces", "has shape (3,) but observation_space says (2,)")


class MissingKey(Toy):
    def observation_space(self, params):
        return Dict({"position": Box(0.0, 10.0, (), jnp.float32), "count": Discrete(100)})

    def observe(self, state):
        return {"position": state.position}


class DictToy(MissingKey):
    def observe(self, state):
        return {"position": state.position, "count": state.count}


def test_a_dict_observation_is_checked_by_structure():
    assert _check(DictToy()).ok
    _failed_alone(_check(MissingKey()), "spaces", "has keys ['position'], its space")


class OutOfBounds(Toy):
    def observe(self, state):
        return super().observe(state) + jnp.where(state.count >= 3, 20.0, 0.0)


def test_an_observation_outside_its_box_is_named_with_where():
    report = _check(OutOfBounds())
    _failed_alone(report, "bounds", "outside Box bounds [0, 10]")
    assert "after step 3 (env 0)" in str(report)


class OutOfRange(DictToy):
    def observe(self, state):
        return {"position": state.position, "count": state.count * 40}


def test_a_discrete_observation_out_of_range_is_named():
    _failed_alone(_check(OutOfRange()), "bounds", "outside Discrete(100) (0 to 99)")


class NanReward(Toy):
    def step_env(self, key, state, action, params):
        state, obs, reward, terminated = super().step_env(key, state, action, params)
        return state, obs, jnp.where(state.count == 2, jnp.nan, reward), terminated


def test_a_nan_reward_is_named():
    report = _check(NanReward())
    _failed_alone(report, "finite", "reward is nan after step 2 (env 0)")


class PythonRandomReset(Toy):
    def reset_env(self, key, params):
        state = ToyState(jnp.float32(random.random()), jnp.zeros((), jnp.int32))
        return state, self.observe(state)


class CountingReset(Toy):
    resets = 0

    def reset_env(self, key, params):
        self.resets += 1
        state = ToyState(jnp.float32(self.resets / 1000), jnp.zeros((), jnp.int32))
        return state, self.observe(state)


@pytest.mark.parametrize(
    "env", [PythonRandomReset(), CountingReset()], ids=lambda e: type(e).__name__
)
def test_a_reset_not_drawn_from_its_key_is_not_deterministic(env):
    _failed_alone(_check(env), "determinism", "two runs from the same key differ at reset")


class TracedCounter(Toy):
    """A step whose reward is a Python counter: eager steps count, a compiled one does not."""

    calls = 0

    def step_env(self, key, state, action, params):
        self.calls += 1
        state, obs, _, terminated = super().step_env(key, state, action, params)
        return state, obs, jnp.float32(self.calls), terminated


def test_a_value_frozen_when_traced_is_found_by_jit_and_vmap():
    report = _check(TracedCounter())
    _failed_alone(report, "jit", "jax.jit(env.step) differs from eager env.step")
    _failed_alone(report, "vmap", "jax.jit(step_batch) differs from eager step_batch")
    assert "determinism" in report.failed


class PythonBranch(Toy):
    def step_env(self, key, state, action, params):
        if state.count > 2:  # a Python branch on an array: cannot be traced
            action = 0
        return super().step_env(key, state, action, params)


def test_code_that_cannot_be_traced_is_named_with_the_fix():
    report = _check(PythonBranch())
    _failed_alone(report, "actions", "TracerBoolConversionError")
    assert "use jnp.where, jax.lax.cond" in str(report)
    assert "jit" in dict(report.skipped) or "jit" in report.failed


class OwnTimeLimit(Toy):
    """No terminal state, but step_env ends the episode at max_steps itself."""

    def step_env(self, key, state, action, params):
        state, obs, reward, _ = super().step_env(key, state, action, params)
        return state, obs, reward, state.count >= params.max_steps


@pytest.mark.parametrize("max_steps", [6, 1000])
def test_terminating_at_the_time_limit_is_named(max_steps):
    """Both where the rollout reaches the limit and where the check must lower it."""
    env = OwnTimeLimit()
    report = check_env(env, ToyParams(max_steps=max_steps), steps=20, num_envs=2)
    _failed_alone(report, "termination", "also terminated on that step")
    assert "time_limit" in report.passed


class KeepsState(Toy):
    def auto_reset_env(self, key, state, params):
        return state, self.observe(state)


def test_an_auto_reset_that_keeps_the_episode_is_named():
    report = _check(KeepsState())
    _failed_alone(report, "auto_reset", "still its final one")


class FloatCount(Toy):
    def step_env(self, key, state, action, params):
        state, obs, reward, terminated = super().step_env(key, state, action, params)
        return state._replace(count=state.count.astype(jnp.float32)), obs, reward, terminated


def test_a_state_whose_dtype_changes_is_named():
    report = _check(FloatCount())
    _failed_alone(report, "state", "step_env's state.count is float32[], reset_env's int32[]")


class BadOutputs(Toy):
    def step_env(self, key, state, action, params):
        state, obs, _, terminated = super().step_env(key, state, action, params)
        return state, obs, state.count.reshape(1), terminated.astype(jnp.int32)


def test_a_reward_and_terminated_of_the_wrong_kind_are_named():
    report = _check(BadOutputs())
    _failed_alone(report, "step_outputs", "reward has shape (1,), must be a scalar")
    _failed_alone(report, "step_outputs", "reward has dtype int32, must be float")
    _failed_alone(report, "step_outputs", "terminated has dtype int32, must be bool")


class Masked(Toy):
    """Action 1 is legal only while the count is even; never none."""

    def action_mask(self, state, params):
        return jnp.stack([jnp.bool_(True), state.count % 2 == 0])


class EmptyMask(Toy):
    def action_mask(self, state, params):
        return jnp.broadcast_to(state.count != 2, (2,))


def test_an_action_mask_with_no_legal_action_is_named():
    assert "action_mask" in _check(Masked()).passed
    report = _check(EmptyMask())
    _failed_alone(report, "action_mask", "no legal action in info['action_mask'] after step 2")


class IntMask(Toy):
    def action_mask(self, state, params):
        return jnp.ones((2,), jnp.int32)


def test_a_mask_that_is_not_bool_is_named():
    _failed_alone(_check(IntMask()), "action_mask", "action_mask returns int32[2], must be bool[2]")


class Info(Toy):
    def info_env(self, state, params):
        return {"position": state.position}


class ChangingInfo(Toy):
    calls = 0

    def info_env(self, state, params):
        self.calls += 1
        return {"position": state.position, **({"late": state.count} if self.calls > 1 else {})}


class ClashingInfo(Toy):
    def info_env(self, state, params):
        return {"action_mask": state.count}


def test_info_keeps_its_keys_and_shapes():
    assert "info" in _check(Info()).passed
    _failed_alone(_check(ChangingInfo()), "info", "info's keys change after step 1")
    _failed_alone(_check(ClashingInfo()), "info", "are the base class's (the masks)")


class NotASpace(Toy):
    def observation_space(self, params):
        return (0.0, 10.0)


def test_a_space_that_is_not_one_is_named():
    _failed_alone(_check(NotASpace()), "spaces", "returns a tuple, not a space")


class RaisingReset(Toy):
    def reset_env(self, key, params):
        raise RuntimeError("no board to start from")


def test_a_reset_that_raises_is_one_problem_and_the_rest_is_skipped():
    report = _check(RaisingReset())
    assert report.problems == (
        Problem("reset", "reset_env raised RuntimeError: no board to start from"),
    )
    assert "cannot run: the reset check failed" in dict(report.skipped)["bounds"]


def test_the_report_prints_a_line_per_check_and_a_summary():
    text = str(_check(NanReward()))
    lines = text.splitlines()
    assert len(lines) == len(CHECKS) + 1
    assert lines[0].startswith("pass  reset ")
    assert any(line.startswith("FAIL  finite ") for line in lines)
    assert any(line.startswith("skip  info ") for line in lines)
    assert lines[-1] == "Toy-v0: 1 of 13 checks failed (finite), 2 skipped"


@pytest.mark.parametrize("name", ["CartPole-v1", "Catch-bsuite"])
def test_built_in_environments_pass(name):
    report = rl.check_env(name, steps=64)
    assert report.ok, str(report)
    assert report.env == name and {"auto_reset", "time_limit", "termination"} <= set(report.passed)


def test_a_wrapped_environment_passes():
    env = envs.FrameStack(envs.NormalizeObservation(envs.EpisodeStatistics(envs.Catch())), 2)
    report = envs.check_env(env, steps=32)
    assert report.ok, str(report)
    assert report.env == "FrameStack<NormalizeObservation<EpisodeStatistics<Catch-bsuite>>>"


class FakeBatch:
    """A host batch whose observations leave their Box from the second step."""

    def __init__(self, num_envs, seed):
        self.num_envs, self.t = num_envs, 0

    def reset(self):
        return np.zeros((self.num_envs, 2), np.float32)

    def send(self, actions):
        self.t += 1

    def recv(self):
        obs = np.full((self.num_envs, 2), 5.0 * self.t, np.float32)
        done = np.full(self.num_envs, self.t % 4 == 0)
        return obs, np.ones(self.num_envs, np.float32), done, ~done & False, obs

    def close(self):
        pass


def test_a_host_simulator_is_checked_on_what_it_returns():
    simulator = HostSimulator("fake", FakeBatch, Box(0.0, 7.0, (2,), jnp.float32), Discrete(2))
    report = check_env(simulator, steps=8, num_envs=2)
    _failed_alone(report, "bounds", "observation[0] = 10 after step 2 (env 0) is outside")
    _failed_alone(report, "auto_reset", "still its final one")
    assert set(report.passed) == {
        "reset",
        "spaces",
        "actions",
        "step_outputs",
        "finite",
        "determinism",
    }
    assert "a host simulator" in dict(report.skipped)["jit"]


def test_a_gymnasium_environment_passes():
    pytest.importorskip("gymnasium")
    report = check_env("gym/CartPole-v1", steps=32)
    assert report.ok, str(report)
    assert "auto_reset" in report.passed


@pytest.mark.parametrize(
    "sizes, message",
    [
        ({"steps": 0}, "steps must be an integer in [1, 100,000], got 0"),
        ({"num_envs": 1.5}, "num_envs must be an integer"),
        ({"seed": -1}, "seed must be an integer in [0, "),
    ],
)
def test_bad_sizes_are_refused(sizes, message):
    with pytest.raises(ValueError) as error:
        check_env(Toy(), **sizes)
    assert message in str(error.value)


def test_what_is_not_an_environment_is_refused():
    with pytest.raises(TypeError, match="check_env takes an Environment"):
        check_env(object())

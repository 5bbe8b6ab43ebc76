"""The step body and its one driver (``jaxrl_fdg.core.step``): every call in the schedule's order
on the state its fragment has when it runs; two halves of the env batch as two streams that
share the other fragments' states; a stream parked before the calls ``parks`` names while the
other takes its turn, computing the same transitions either way. On the toy loop of
``conftest.py`` (run op by op)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.core.step import (
    Driver,
    RolloutCarry,
    Stream,
    close_streams,
    join_halves,
    open_streams,
    step_body,
    transition,
    unroll,
)

ACTOR, ENV = 0, 1  # the toy schedule's calls: the actor acts, then the env steps


def _started(loop, seed=0):
    """``(state after begin, rollout key)`` of the loop's first iteration."""
    state, k_rollout, _ = loop.begin(loop.init(jax.random.key(seed)))
    return state, k_rollout


def _recording(loop, log: list, driver_of=lambda: None):
    """A ``run`` hook that calls the loop's pure call and logs ``(index, stream, step, the
    call another stream is parked at)`` (the driver's own view while the call runs)."""

    def run(index, state, inputs, key, *args):
        driver = driver_of()
        if driver is not None:
            stream, step = driver.position
            other = driver.waiting(1 - stream)
            log.append((index, stream, step, None if other is None else other.index))
        else:
            log.append(index)
        return loop.calls[index](state, inputs, key, *args)

    return run


def test_the_body_yields_each_call_in_schedule_order_with_the_inputs_it_declares(toy):
    loop = toy()
    state, key = _started(loop)
    fixed = loop.fixed_edges(state.fragments)
    assert set(fixed) == {"params"}  # the learner's, read once for the rollout
    (stream,) = open_streams(loop.info, loop.carry(state.fragments, key))
    body = step_body(loop.info, fixed, stream)
    first = next(body)
    assert (first.index, first.fragment, sorted(first.inputs)) == (
        0,
        "actor",
        ["observation", "params"],
    )
    assert first.key is key  # the first call gets the stream's key and splits the step's keys
    out, keys, next_key = loop.calls[0](stream["actor"], first.inputs, first.key)[1:]
    second = body.send((out, keys, next_key))
    assert (second.index, second.fragment, list(second.inputs)) == (1, "env", ["action"])
    assert second.key is keys[0]
    np.testing.assert_array_equal(second.inputs["action"], np.ones(4))  # params start at 1
    with pytest.raises(StopIteration) as finished:
        body.send(loop.calls[1](stream["env"], second.inputs, second.key)[1:])
    step = finished.value.value  # the StopIteration's value: the step's transition
    assert stream.key is next_key
    assert sorted(step.extras) == ["calls"] and step.info == {}
    np.testing.assert_array_equal(step.observation, np.zeros(4))  # every walk starts at 0


def test_transition_records_what_the_actor_and_env_saw_and_made():
    edges = {
        "observation": 1,
        "action": 2,
        "reward": 3,
        "terminated": 4,
        "truncated": 5,
        "next_observation": 6,
    }
    outputs = {"actor": {"action": 2, "log_prob": 7}, "env": {"reward": 3}, "bonus": {"r": 8}}
    step = transition("actor", edges, outputs)
    assert step[:6] == (1, 2, 3, 4, 5, 6)
    assert step.extras == {"log_prob": 7} and step.info == {"r": 8}


def test_one_step_runs_the_calls_in_order_and_the_halves_one_after_another(toy):
    for halves, expected in ((1, [ACTOR, ENV]), (2, [ACTOR, ENV, ACTOR, ENV])):
        loop, log = toy(halves=halves), []
        state, key = _started(loop)
        driver = Driver(loop.info, _recording(loop, log))
        carry, step = driver.step(
            loop.fixed_edges(state.fragments), loop.carry(state.fragments, key)
        )
        assert log == expected
        assert step.reward.shape == (4,)  # the halves' joined: the whole batch
        # The actor's state passes from half 0 to half 1: one call per stream.
        assert int(carry.states["actor"]) == halves
        np.testing.assert_array_equal(
            step.extras["calls"], [1] * 4 if halves == 1 else [1, 1, 2, 2]
        )


def test_two_halves_compute_what_one_stream_does_for_the_same_keys(toy):
    # One stream of 2 envs, twice (each with its own key), equals the two halves of 4 envs
    # driven together: half h's envs are the stream's with half h's key; halves join, half 0's
    # environments first; the actor is called once per half.
    loop2 = toy(halves=2)
    state, keys = _started(loop2)
    fixed = loop2.fixed_edges(state.fragments)
    carry, joined = Driver(loop2.info, lambda i, *a: loop2.calls[i](*a)).step(
        fixed, loop2.carry(state.fragments, keys)
    )
    alone = toy(num_envs=2)
    halves = []
    for h, key in enumerate(keys):
        states = {**state.fragments, "env": state.fragments["env"][h], "actor": jnp.int32(h)}
        driver = Driver(alone.info, lambda i, *a: alone.calls[i](*a))
        one, step = driver.step(fixed, RolloutCarry(states, key))
        testing.assert_same_bits(one.states["env"], carry.states["env"][h], f"half {h}")
        testing.assert_same_bits(one.key, carry.key[h], f"half {h}'s next key")
        halves.append(step)
    testing.assert_same_bits(join_halves(halves), joined)


def test_a_parked_stream_waits_while_the_other_takes_its_turn(toy):
    loop, log, parked = toy(halves=2), [], []
    state, keys = _started(loop)
    driver = None
    driver = Driver(
        loop.info,
        _recording(loop, log, lambda: driver),
        parks=lambda index: index == ENV,  # as a host call would
        on_park=lambda stream, step: parked.append((stream, step)),
    )
    fixed = loop.fixed_edges(state.fragments)
    carry, done = driver.rollout(fixed, loop.carry(state.fragments, keys), steps=2)
    # (call, stream, step, the call the other stream is parked at): each stream runs up to its
    # env call and parks; then in turn each finishes its step and begins the next.
    assert log == [
        (ACTOR, 0, 0, None),
        (ACTOR, 1, 0, ENV),
        (ENV, 0, 0, ENV),
        (ACTOR, 0, 1, ENV),
        (ENV, 1, 0, ENV),
        (ACTOR, 1, 1, ENV),
        (ENV, 0, 1, ENV),
        (ENV, 1, 1, None),
    ]
    assert parked == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert driver.waiting(0) is None and driver.waiting(1) is None and driver.waiting(5) is None
    # Parking reorders the streams' calls, never what each computes.
    plain = Driver(loop.info, lambda i, *a: loop.calls[i](*a))
    carry2, done2 = plain.rollout(fixed, loop.carry(state.fragments, keys), steps=2)
    assert [len(d) for d in done] == [2, 2]
    testing.assert_same_bits((carry.states, carry.key, done), (carry2.states, carry2.key, done2))


def test_a_rollout_from_python_equals_the_steps_one_by_one(toy):
    loop = toy()
    state, key = _started(loop)
    driver = Driver(loop.info, lambda i, *a: loop.calls[i](*a))
    after, (steps,) = unroll(loop, state, key, driver)
    assert len(steps) == loop.info.rollout_len == 3
    carry = loop.carry(state.fragments, key)
    fixed = loop.fixed_edges(state.fragments)
    by_hand = []
    for _ in range(3):
        carry, step = driver.step(fixed, carry)
        by_hand.append(step)
    testing.assert_same_bits(steps, by_hand)
    testing.assert_same_bits(after.fragments, loop.end_rollout(state.fragments, carry))


def test_streams_write_their_own_half_and_share_the_rest():
    whole = Stream({"actor": 0}, None, env="env", halves=["h0", "h1"])
    zero, one = whole.half(0, "k0"), whole.half(1, "k1")
    one["env"] = "h1'"
    zero["actor"] = 5
    assert (zero["env"], one["env"], one["actor"], zero.key, one.key) == (
        "h0",
        "h1'",
        5,
        "k0",
        "k1",
    )


def test_close_streams_undoes_open_streams(toy):
    for halves in (1, 2):
        loop = toy(halves=halves)
        state, key = _started(loop)
        carry = loop.carry(state.fragments, key)
        testing.assert_same_bits(close_streams(loop.info, open_streams(loop.info, carry)), carry)

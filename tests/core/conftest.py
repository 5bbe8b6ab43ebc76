"""A toy algorithm for the core's tests: fragments small enough to run op by op (nothing to
compile but a few tiny ops), whose every number can be worked out by hand.

- ``env`` (:func:`walker`): environments on a line, each starting at 0 and moving by its action
  plus a noise in ``[0, 0.5)`` drawn from the step's key; the reward is the move; an episode ends
  (terminated) on reaching ``goal``, the next one starting at 0.
- ``actor``: acts ``params`` (the learner's) everywhere; its state counts its calls, which it
  also outputs as the extra ``calls`` (so a transition shows the order of calls).
- ``learner``: ``params`` start at 1 and grow by a tenth of the rollout's mean reward; its
  metrics are that mean and ``draw``, a uniform number drawn from its key.
"""

from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.core.names import (
    ACTION,
    METRICS,
    NEXT_OBSERVATION,
    OBSERVATION,
    PARAMS,
    REWARD,
    TERMINATED,
    TRAJECTORY,
    TRUNCATED,
)

GOAL = 3.0


class Walk(NamedTuple):
    position: jax.Array  # float32 [B]


def walker(num_envs: int, goal: float = GOAL) -> rl.Fragment:
    def init(key):
        del key
        return Walk(jnp.zeros(num_envs, jnp.float32))

    def apply(state, inputs, key):
        move = inputs[ACTION] + 0.5 * jax.random.uniform(key, (num_envs,))
        reached = state.position + move
        done = reached >= goal
        outputs = {
            REWARD: move,
            TERMINATED: done,
            TRUNCATED: jnp.zeros_like(done),
            NEXT_OBSERVATION: reached,
        }
        return Walk(jnp.where(done, 0.0, reached)), outputs

    return rl.fragment(
        "env",
        "env",
        apply,
        init=init,
        inputs=(ACTION,),
        outputs=(REWARD, TERMINATED, TRUNCATED, NEXT_OBSERVATION),
        publish=lambda state: {OBSERVATION: state.position},
        published=(OBSERVATION,),
    )


def actor() -> rl.Fragment:
    def apply(calls, inputs, key):
        del key
        shape = inputs[OBSERVATION].shape
        action = jnp.broadcast_to(inputs[PARAMS], shape)
        return calls + 1, {ACTION: action, "calls": jnp.broadcast_to(calls + 1, shape)}

    return rl.fragment(
        "actor",
        "actor",
        apply,
        init=lambda key: jnp.zeros((), jnp.int32),
        inputs=(OBSERVATION, PARAMS),
        outputs=(ACTION, "calls"),
    )


def learner() -> rl.Fragment:
    def apply(params, inputs, key):
        mean = inputs[TRAJECTORY].reward.mean()
        metrics = {"mean_reward": mean, "draw": jax.random.uniform(key)}
        return params + 0.1 * mean, {METRICS: metrics}

    return rl.fragment(
        "learner",
        "learner",
        apply,
        init=lambda key: jnp.ones((), jnp.float32),
        inputs=(TRAJECTORY,),
        outputs=(METRICS,),
        publish=lambda params: {PARAMS: params},
        published=(PARAMS,),
    )


def toy_algorithm(*extra: rl.Fragment) -> rl.Algorithm:
    return rl.Algorithm("toy", actor(), learner(), extra=extra)


def toy_loop(num_envs: int = 4, rollout_len: int = 3, halves: int = 1, extra=()) -> rl.Loop:
    """The toy loop; with ``halves = 2``, the env fragment is half the batch's."""
    return rl.make_loop(walker(num_envs // halves), toy_algorithm(*extra), rollout_len, halves)


@pytest.fixture
def toy():
    """``toy(num_envs=4, rollout_len=3, halves=1, extra=())``: the toy loop."""
    return toy_loop


@pytest.fixture
def toy_parts():
    """The toy's pieces: ``walker(num_envs)``, ``actor()``, ``learner()`` and
    ``algorithm(*extra)``."""
    return SimpleNamespace(walker=walker, actor=actor, learner=learner, algorithm=toy_algorithm)

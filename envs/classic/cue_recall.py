"""CueRecall-v0: remember a cue shown once, answer it ``delay`` steps later.

A minimal memory task. An episode lasts ``delay + 1`` steps:

- reset: a cue ``c`` is drawn uniformly from ``0 .. num_cues-1``; the first observation shows it;
- the next ``delay - 1`` observations are blank, and the last one (after ``delay`` steps) carries
  only a "decide now" flag;
- actions are ``0 .. num_cues-1``. Actions taken before the decision step are ignored (reward 0);
  the action taken on the decision observation ends the episode (``terminated``) with reward +1
  if it equals ``c`` and -1 otherwise.

The observation is a float32 vector of ``num_cues + 1`` entries, ``[one_hot(c) · [t = 0],
[t = delay]]`` with ``t`` the steps taken in the episode. With ``num_cues = 2, delay = 4``
(the default) the observations of an episode with cue 1 are::

    t = 0: [0, 1, 0]    the cue
    t = 1..3: [0, 0, 0]
    t = 4: [0, 0, 1]    decide: action 1 earns +1, action 0 earns -1
    t = 5: [0, 0, 0]    the terminal observation (``final_observation``)

Everything an agent needs except the cue is in the current observation (the flag says when to
answer), so the cue is the only thing to remember. Returns, per episode:

- optimal: +1 (recall the cue);
- best memoryless policy: ``2 / num_cues - 1`` in expectation (0 for two cues). The decision
  observation is the same whatever the cue, so any policy of it alone answers correctly with
  probability ``1 / num_cues``: return ``1/k - (1 - 1/k)``.

The task is the T-maze of Bakker (2001), "Reinforcement Learning with Long Short-Term Memory"
(NIPS 14), without the corridor: there the signal seen at the start of a corridor says which way
to turn at its end. bsuite's memory-length experiment (Osband et al., 2020, "Behaviour Suite for
Reinforcement Learning") poses the same question as a context shown first and a query at the end.
The default delay is short so that a small recurrent policy learns it in a few tens of thousands
of steps; a larger ``delay`` asks for a longer memory. There is no time limit in the task;
``max_steps`` is set far above ``delay + 1`` so truncation never fires.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.spaces import Box, Discrete


class CueRecallState(NamedTuple):
    cue: jax.Array  # int32, 0 .. num_cues-1
    time: jax.Array  # int32, steps taken in this episode: 0 .. delay (delay + 1 once over)


@struct.dataclass
class CueRecallParams:
    # The number of cues fixes the observation's and the action space's size, so it is static;
    # the delay is a count checked when the environment is built, static like Catch's board.
    num_cues: int = struct.field(pytree_node=False, default=2)
    delay: int = struct.field(pytree_node=False, default=4)
    max_steps: int = struct.field(pytree_node=False, default=1000)


class CueRecall(Environment[CueRecallState, CueRecallParams]):
    """See a cue at the first step, answer it with the matching action ``delay`` steps later."""

    name = "CueRecall-v0"

    @property
    def default_params(self) -> CueRecallParams:
        return CueRecallParams()

    def reset_env(
        self, key: jax.Array, params: CueRecallParams
    ) -> tuple[CueRecallState, jax.Array]:
        _check(params)
        state = CueRecallState(
            cue=jax.random.randint(key, (), 0, params.num_cues, jnp.int32),
            time=jnp.zeros((), jnp.int32),
        )
        return state, _observation(state, params)

    def step_env(
        self, key: jax.Array, state: CueRecallState, action: jax.Array, params: CueRecallParams
    ) -> tuple[CueRecallState, jax.Array, jax.Array, jax.Array]:
        del key  # deterministic once the cue is drawn
        _check(params)
        terminated = state.time == params.delay
        correct = jnp.asarray(action, jnp.int32) == state.cue
        reward = jnp.where(terminated, jnp.where(correct, 1.0, -1.0), 0.0).astype(jnp.float32)
        # After the decision the time is delay + 1: the terminal observation is blank.
        new = CueRecallState(state.cue, state.time + 1)
        return new, _observation(new, params), reward, terminated

    def observation_space(self, params: CueRecallParams) -> Box:
        return Box(0.0, 1.0, (params.num_cues + 1,), jnp.float32)

    def action_space(self, params: CueRecallParams) -> Discrete:
        return Discrete(params.num_cues)


def _check(params: CueRecallParams) -> None:
    # One cue is nothing to remember; a delay of 0 shows the cue and the flag together.
    if params.num_cues < 2 or params.delay < 1:
        raise ValueError(
            f"CueRecall needs num_cues >= 2 and delay >= 1; "
            f"got num_cues={params.num_cues}, delay={params.delay}"
        )


def _observation(state: CueRecallState, params: CueRecallParams) -> jax.Array:
    shown = state.time == 0
    cue = jax.nn.one_hot(state.cue, params.num_cues, dtype=jnp.float32) * shown
    decide = (state.time == params.delay).astype(jnp.float32)
    return jnp.concatenate([cue, decide[None]])

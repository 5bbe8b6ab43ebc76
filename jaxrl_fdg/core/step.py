"""The step body, and the one driver that carries it out, in every fusion mode.

The step body (:func:`step_body`) is a generator: it yields each call of the schedule's rollout
in order (a :class:`StepCall`), is sent back what the call returned, and returns the step's
:class:`~jaxrl_fdg.core.types.Transition`. It holds no fragment state: the :class:`Driver`
does, in the rollout carry, and hands each call the state of its fragment as it is when the
call runs. How a call is carried out is the driver's ``run`` hook: the pure function, traced
into whatever program is being compiled (the fused modes), or a compiled program of its own
dispatched from Python (``step``), or the fragment's numpy ``host_apply`` (a host fragment).

One rollout may hold several *streams*, each a step body over its share of the carry: the two
halves of a host simulator's env batch (``LoopInfo.halves``), which have env states and keys of
their own and share every other step fragment's state. The driver runs the streams of a step
one after another; with a ``parks`` hook, a stream stops before each call the hook names (a
host call) and the next stream takes its turn, so the host steps one half while the device
computes the other half's calls (the double-buffered plan of placement ``host_env``). Either
way every call runs in the same order on the same states with the same keys.

Keys: each step, the carry's key gives (next key, one key per call of the step body), split by
the first call (``Loop.calls[0]`` returns them), so a split mode compiles no extra program.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.fragment import published
from jaxrl_fdg.core.names import (
    ACTION,
    ACTION_MASK,
    NEXT_OBSERVATION,
    OBSERVATION,
    REWARD,
    TERMINATED,
    TRUNCATED,
)
from jaxrl_fdg.core.record import LoopInfo
from jaxrl_fdg.core.types import Transition

_ENV_FIELDS = (REWARD, TERMINATED, TRUNCATED, NEXT_OBSERVATION)
_RECORDED = (OBSERVATION, ACTION, *_ENV_FIELDS)

# How a driver carries out call ``index``: ``run(index, state, inputs, key, *args)``, returning
# what ``Loop.calls[index]`` returns.
StepRunner = Callable[..., tuple]


class RolloutCarry(NamedTuple):
    """What changes during a rollout: the step fragments' states and the key stream (under
    halves, the env's state and the key are tuples with one entry per half)."""

    states: dict[str, Any]
    key: Any


class StepCall(NamedTuple):
    """A call the step body asks for: call ``index`` of the rollout, of ``fragment``, on
    ``inputs`` with ``key``; the driver supplies the fragment's state."""

    index: int
    fragment: str
    inputs: dict[str, Any]
    key: jax.Array


class Stream:
    """One stream's view of a rollout carry: the shared states, and under halves its own half
    of the env's state; ``key`` is the stream's key."""

    def __init__(self, shared: dict, key: Any, env: str | None = None, halves: list | None = None):
        self.shared, self.key = shared, key
        self._env, self._halves, self._half = env, halves, 0

    def half(self, index: int, key: Any) -> Stream:
        """The view of half ``index`` (sharing this one's states)."""
        view = Stream(self.shared, key, self._env, self._halves)
        view._half = index
        return view

    def __getitem__(self, fragment: str) -> Any:
        if fragment == self._env:
            return self._halves[self._half]
        return self.shared[fragment]

    def __setitem__(self, fragment: str, state: Any) -> None:
        if fragment == self._env:
            self._halves[self._half] = state
        else:
            self.shared[fragment] = state


def open_streams(info: LoopInfo, carry: RolloutCarry) -> list[Stream]:
    """The streams of ``carry``: one, or one per half."""
    if info.halves == 1:
        return [Stream(dict(carry.states), carry.key)]
    env = info.env.name
    shared = {k: v for k, v in carry.states.items() if k != env}
    whole = Stream(shared, None, env, list(carry.states[env]))
    return [whole.half(h, carry.key[h]) for h in range(info.halves)]


def close_streams(info: LoopInfo, streams: list[Stream]) -> RolloutCarry:
    """The rollout carry the streams have made."""
    if info.halves == 1:
        (stream,) = streams
        return RolloutCarry(stream.shared, stream.key)
    env = info.env.name
    states = {**streams[0].shared, env: tuple(streams[0]._halves)}
    return RolloutCarry(states, tuple(s.key for s in streams))


def join_halves(halves: list[Transition]) -> Transition:
    """The halves' transitions as one of the whole batch (half 0's environments first)."""
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *halves)


def step_body(
    info: LoopInfo, fixed: dict, stream: Stream
) -> Generator[StepCall, tuple, Transition]:
    """One step of ``stream``: yields each call, is sent back the call's outputs (and, for the
    first call, the other calls' keys and the next key), sets the stream's next key and returns
    the step's transition. Edges read at the start of the step are ``fixed`` ones and those the
    step fragments publish from their states in ``stream``."""
    edges = dict(fixed)
    for frag in info.step_fragments:
        edges.update(published(frag, stream[frag.name]))
    outputs: dict[str, dict] = {}
    key, keys = stream.key, ()
    for i, c in enumerate(info.schedule.rollout.calls):
        inputs = {name: edges[name] for name in c.inputs}
        result = yield StepCall(i, c.fragment, inputs, key if i == 0 else keys[i - 1])
        if i == 0:
            out, keys, key = result
        else:
            (out,) = result
        outputs[c.label] = out
        edges.update(out)
    stream.key = key
    return transition(info.actor.name, edges, outputs)


def transition(actor: str, edges: dict, outputs: dict[str, dict]) -> Transition:
    """A step's record: the edges the actor and env saw and made (after any rewrite); the
    actor's other outputs are ``extras``, every other call's ``info``, and the ``action_mask``
    the actor acted under, where the environment publishes one, ``info["action_mask"]``."""
    extras = {k: v for k, v in outputs[actor].items() if k != ACTION}
    info = {
        k: v
        for label, out in outputs.items()
        if label != actor
        for k, v in out.items()
        if k not in _RECORDED
    }
    if ACTION_MASK in edges:
        info[ACTION_MASK] = edges[ACTION_MASK]
    fields = {k: edges[k] for k in _ENV_FIELDS}
    return Transition(edges[OBSERVATION], edges[ACTION], extras=extras, info=info, **fields)


class _Parked(NamedTuple):
    """A stream's step body waiting before a call."""

    body: Generator
    request: StepCall


class Driver:
    """Carries out the step body of a loop, each call by ``run``.

    Args:
      info: the loop's description.
      run: ``run(index, state, inputs, key, *args)``, how each call is carried out.
      parks: the scheduling hook, ``parks(index) -> bool``: whether a stream waits before call
        ``index`` while the other streams take their turn (:meth:`rollout`); never by default.
      on_park: called with ``(stream, step)`` whenever a stream parks.

    While a call runs, :attr:`position` is ``(stream, step)`` and :meth:`waiting` gives the call
    another stream is parked at: what a ``run`` hook may record about the schedule.
    """

    def __init__(
        self,
        info: LoopInfo,
        run: StepRunner,
        parks: Callable[[int], bool] | None = None,
        on_park: Callable[[int, int], None] | None = None,
    ):
        self.info, self.run = info, run
        self.parks = parks or (lambda index: False)
        self.on_park = on_park
        self.position = (0, 0)
        self._parked: list[_Parked | None] = []

    def waiting(self, stream: int) -> StepCall | None:
        """The call stream ``stream`` is parked at, if it is."""
        if not 0 <= stream < len(self._parked):
            return None
        parked = self._parked[stream]
        return parked.request if parked is not None else None

    # -- one step, every stream to its end (traced into the fused modes' programs) -----------

    def step(self, fixed: dict, carry: RolloutCarry, args: tuple = ()) -> tuple[Any, Transition]:
        """One step of every stream, one after another: ``(carry, transition)``, the halves'
        transitions joined along the env axis."""
        streams = open_streams(self.info, carry)
        transitions = []
        for h, stream in enumerate(streams):
            self.position = (h, 0)
            transitions.append(self._to_end(stream, self._begin(fixed, stream, args), args))
        joined = transitions[0] if len(transitions) == 1 else join_halves(transitions)
        return close_streams(self.info, streams), joined

    def scan_step(self, fixed: dict, carry: RolloutCarry, _: Any = None):
        """:meth:`step` as a ``lax.scan`` body."""
        return self.step(fixed, carry)

    # -- a whole rollout from Python, streams interleaved by ``parks`` -----------------------

    def rollout(
        self, fixed: dict, carry: RolloutCarry, steps: int, args: tuple = ()
    ) -> tuple[RolloutCarry, list[list[Transition]]]:
        """``steps`` steps of every stream: ``(carry, transitions [stream][step])``.

        Each stream first runs its first step up to a call it parks at (or to its end); then,
        stream by stream in turn, a parked stream finishes its step (the parked call first) and
        begins its next, again up to a call it parks at."""
        streams = open_streams(self.info, carry)
        done: list[list[Transition]] = [[] for _ in streams]
        self._parked = [None] * len(streams)
        for h, stream in enumerate(streams):
            self._place(h, stream, done, self._begin(fixed, stream, args), args)
        while any(len(d) < steps or p for d, p in zip(done, self._parked, strict=True)):
            for h, stream in enumerate(streams):
                parked = self._parked[h]
                if parked is not None:
                    self._parked[h] = None
                    self.position = (h, len(done[h]))
                    done[h].append(self._to_end(stream, parked, args, resume=True))
                if len(done[h]) < steps:
                    self._place(h, stream, done, self._begin(fixed, stream, args), args)
        return close_streams(self.info, streams), done

    def _place(self, h: int, stream: Stream, done: list, started: _Parked, args: tuple) -> None:
        """Record what a stream's step came to once begun: parked, or a finished transition."""
        self.position = (h, len(done[h]))
        outcome = self._advance(stream, started, args)
        if isinstance(outcome, _Parked):
            self._parked[h] = outcome
            self._parks_here()
        else:
            done[h].append(outcome)

    def _parks_here(self) -> None:
        if self.on_park is not None:
            self.on_park(*self.position)

    # -- carrying out calls ------------------------------------------------------------------

    def _begin(self, fixed: dict, stream: Stream, args: tuple) -> _Parked:
        body = step_body(self.info, fixed, stream)
        return _Parked(body, next(body))

    def _to_end(self, stream: Stream, at: _Parked, args: tuple, resume: bool = False):
        """Carry out the body from ``at`` to its end (through any call it would park at)."""
        outcome = self._advance(stream, at, args, resume)
        while isinstance(outcome, _Parked):  # another call it waits at, in the same step
            self._parks_here()
            outcome = self._advance(stream, outcome, args, resume=True)
        return outcome

    def _advance(self, stream: Stream, at: _Parked, args: tuple, resume: bool = False):
        """Carry out the body's calls from ``at`` (the first one even if it parks, with
        ``resume``) up to a call it parks at (returned, parked) or its end (its transition)."""
        body, request = at
        try:
            while True:
                if not resume and self.parks(request.index):
                    return _Parked(body, request)
                resume = False
                state = stream[request.fragment]
                result = self.run(request.index, state, request.inputs, request.key, *args)
                stream[request.fragment] = result[0]
                request = body.send(result[1:])
        except StopIteration as finished:
            return finished.value


def unroll(loop: Any, state: Any, key: Any, driver: Driver, steps: int | None = None):
    """``steps`` steps (default: the loop's ``rollout_len``) of ``loop``'s step body from rollout
    key ``key``, driven from Python by ``driver``: ``(state after them, transitions
    [stream][step])``. ``state`` is the loop state after ``begin``."""
    fixed = loop.fixed_edges(state.fragments)
    carry = loop.carry(state.fragments, key)
    steps = loop.info.rollout_len if steps is None else steps
    carry, done = driver.rollout(fixed, carry, steps, loop.call_args(state))
    return state._replace(fragments=loop.end_rollout(state.fragments, carry)), done


__all__ = [
    "Driver",
    "RolloutCarry",
    "StepCall",
    "StepRunner",
    "Stream",
    "close_streams",
    "join_halves",
    "open_streams",
    "step_body",
    "transition",
    "unroll",
]

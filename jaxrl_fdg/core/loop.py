"""The RL loop as pure functions that interpret the graph's :class:`~jaxrl_fdg.core.graph.Schedule`.

One iteration is the schedule tree run once::

    iteration = begin ; rollout (the step body × T, stacked) ; the nodes after the rollout

There is one step body (:meth:`Loop.step_calls`) and one learn body (:meth:`Loop.learn`).
Every fusion mode and placement runs these two; they differ only in where the compilation
boundaries fall and in how each call of the step body is carried out (traced into a program,
dispatched as a program of its own, stepped on the host): :meth:`Loop.step` takes that as an
argument.

Random keys are split inside these functions, never by the caller, so the key stream does not
depend on how the pieces are compiled:

* ``begin``: the loop key gives (next loop key, rollout key, learn key);
* each step: the carry's key gives (next key, one key per call of the step body);
* after the rollout: the learn key goes to the node, or is split into one per node; a node of
  evaluators only takes ``fold_in(learn key, ...)`` instead, outside the split, so adding an
  in-graph evaluator leaves every other key, and what training computes, as it was;
* a node of calls: its key goes to the call, or is split into one per call;
* rounds: one key per round, split into (a key every method call of the round shares, the key
  of its ``apply`` calls, split among them if several);
* a periodic node: its key, as a node of calls, whether or not it runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import rng
from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.fragment import Fragment, Role, call, published
from jaxrl_fdg.core.graph import ENV_STEPS, ITERATION_EDGE, TRAJECTORY, Graph
from jaxrl_fdg.core.learn import RUNS, Learn
from jaxrl_fdg.core.types import LoopState, Metrics, Transition
from jaxrl_fdg.errors import GraphError

_ENV_FIELDS = ("reward", "terminated", "truncated", "next_observation")
_OBSERVERS = 0x4F425356  # folded into the learn key for the nodes of evaluators
_RECORDED = ("observation", "action", *_ENV_FIELDS)


class RolloutCarry(NamedTuple):
    """What changes during a rollout: the step phase's fragment states and the key stream."""

    states: dict[str, Any]
    key: jax.Array


class StepCall(NamedTuple):
    """A call the step body asks for: step call ``index`` (of ``Schedule.rollout.calls``) on
    ``state`` with ``inputs`` and ``key``. :meth:`Loop.step_fn` is what it computes."""

    index: int
    state: Any
    inputs: dict[str, Any]
    key: jax.Array


# How a plan carries out a step call: ``run(index, state, inputs, key)`` returning what
# ``Loop.step_fn(index)`` returns.
StepRunner = Callable[[int, Any, dict, jax.Array], tuple]


class Loop:
    """A rollout of ``rollout_len`` steps of the step body, then the nodes after it."""

    def __init__(self, env: Fragment, algorithm: Algorithm, rollout_len: int):
        algorithm.check()
        envs = [f.name for f in algorithm.fragments if f.role is Role.ENV]
        if envs:
            raise GraphError(
                f"algorithm {algorithm.name!r} declares env fragment(s) {envs}; the environment "
                "comes from --env"
            )
        self.algorithm = algorithm
        self.env_frag = env
        self.rollout_len = rollout_len
        self.fragments = (env, *algorithm.fragments)
        self.graph = Graph.build(algorithm.name, self.fragments, rollout_len)
        self.schedule = self.graph.schedule
        self._by_name = {f.name: f for f in self.fragments}
        self.step_fragments = tuple(self._by_name[n] for n in self.graph.step_fragments)
        for frag in (env, algorithm.actor):
            if frag not in self.step_fragments:
                raise GraphError(f"fragment {frag.name!r} ({frag.role.value}) must run every step")
        self._step_fns = [
            self._with_keys(i, functools.partial(call, self._by_name[c.fragment], method=c.method))
            for i, c in enumerate(self.schedule.rollout.calls)
        ]

    @property
    def actor(self) -> Fragment:
        return self.algorithm.actor

    @property
    def learner(self) -> Fragment:
        """The primary learner (unprefixed metrics; its ``params`` are evaluated)."""
        return self.algorithm.learner

    @property
    def policy(self) -> Callable | None:
        return self.algorithm.policy

    @property
    def policy_memory(self) -> Callable | None:
        return self.algorithm.policy_memory

    @property
    def learner_side(self) -> tuple[str, ...]:
        """The fragments an actor/learner placement keeps with the learner: all but the step
        body's, which stay with the actors."""
        return tuple(f.name for f in self.fragments if f not in self.step_fragments)

    # -- state -------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        key, *keys = rng.split(key, 1 + len(self.fragments))
        states = {f.name: f.init(k) for f, k in zip(self.fragments, keys, strict=True)}
        return LoopState(states, key, jnp.zeros((), jnp.int32))

    def check_state(self, state: LoopState) -> None:
        self.graph.check_state(state.fragments)

    # -- the rollout -------------------------------------------------------------------------

    def begin(self, state: LoopState) -> tuple[LoopState, jax.Array, jax.Array]:
        """Split the iteration's keys: ``(state with next key, rollout key, learn key)``."""
        key, k_rollout, k_learn = rng.split(state.key, 3)
        return state._replace(key=key), k_rollout, k_learn

    def fixed_edges(self, states: dict) -> dict[str, Any]:
        """Edges the step body reads from fragments outside it (the learner's ``params``): they
        stay constant for a whole rollout, so the rollout reads them once instead of carrying
        the learner's state (optimizer moments and all) through every step."""
        reads = {e for c in self.schedule.rollout.calls for e in c.inputs}
        edges: dict[str, Any] = {}
        for frag in self.fragments:
            outside = frag not in self.step_fragments and frag.name in states
            if outside and reads & set(frag.published):
                edges.update(
                    {k: v for k, v in self.published_by(frag.name, states).items() if k in reads}
                )
        return edges

    def step_edges(self, fixed: dict, carry: RolloutCarry) -> dict[str, Any]:
        """Every edge visible at the start of a step: fixed ones plus the step fragments'."""
        edges = dict(fixed)
        for frag in self.step_fragments:
            edges.update(published(frag, carry.states[frag.name]))
        return edges

    def step_fn(self, index: int) -> Callable:
        """Step call ``index`` as a pure function ``(state, inputs, key)``.

        The first one also splits the step's keys, so a split mode compiles no extra program
        for them: it returns ``(state, outputs, the other calls' keys, next key)``; the others
        return ``(state, outputs)``."""
        return self._step_fns[index]

    def host_step_fn(self, index: int) -> Callable:
        """:meth:`step_fn` for a host fragment's call, computed in numpy by its ``host_apply``
        outside any program (``step_fn`` itself where the fragment has none)."""
        c = self.schedule.rollout.calls[index]
        frag = self._by_name[c.fragment]
        if frag.host_apply is None or c.method != "apply":
            return self._step_fns[index]
        return self._with_keys(index, frag.host_apply)

    def _with_keys(self, index: int, run: Callable) -> Callable:
        """``run(state, inputs, key)`` as step call ``index``: the first call splits the keys."""
        if index:
            return run
        n = len(self.schedule.rollout.calls)

        def first(state: Any, inputs: dict, key: jax.Array):
            key, *keys = rng.split(key, 1 + n)
            state, outputs = run(state, inputs, keys[0])
            return state, outputs, tuple(keys[1:]), key

        return first

    def step_calls(
        self, fixed: dict, carry: RolloutCarry
    ) -> Generator[StepCall, tuple, tuple[RolloutCarry, Transition]]:
        """The step body, as a generator: it yields each :class:`StepCall` in schedule order,
        is sent back what :meth:`step_fn` returns for it, and returns ``(carry, transition)``.
        Whoever drives it decides how each call is carried out (:meth:`step`)."""
        edges, states, outputs = self.step_edges(fixed, carry), dict(carry.states), {}
        key, keys = carry.key, ()
        for i, c in enumerate(self.schedule.rollout.calls):
            inputs = {name: edges[name] for name in c.inputs}
            result = yield StepCall(i, states[c.fragment], inputs, key if i == 0 else keys[i - 1])
            if i == 0:
                states[c.fragment], out, keys, key = result
            else:
                states[c.fragment], out = result
            outputs[c.label] = out
            edges.update(out)
        return RolloutCarry(states, key), self.transition(edges, outputs)

    def step(
        self, fixed: dict, carry: RolloutCarry, run: StepRunner | None = None
    ) -> tuple[RolloutCarry, Transition]:
        """One step of the step body, each call carried out by ``run`` (by default: the pure
        function, traced into whatever program the caller compiles)."""
        return drive(self.step_calls(fixed, carry), run or self._run_step)

    def _run_step(self, index: int, state: Any, inputs: dict, key: jax.Array) -> tuple:
        return self._step_fns[index](state, inputs, key)

    def rollout_step(self, fixed: dict, carry: RolloutCarry, _: Any = None):
        """:meth:`step` as a ``lax.scan`` body."""
        return self.step(fixed, carry)

    def rollout_carry(self, states: dict, key: jax.Array) -> RolloutCarry:
        return RolloutCarry({f.name: states[f.name] for f in self.step_fragments}, key)

    def end_rollout(self, states: dict, carry: RolloutCarry) -> dict:
        return {**states, **carry.states}

    def transition(self, edges: dict, outputs: dict[str, dict]) -> Transition:
        """A step's record: the edges the actor and env saw and made (after any rewrite)."""
        actor = self.actor.name
        extras = {k: v for k, v in outputs[actor].items() if k != "action"}
        info = {
            k: v
            for label, out in outputs.items()
            if label != actor
            for k, v in out.items()
            if k not in _RECORDED
        }
        fields = {k: edges[k] for k in _ENV_FIELDS}
        return Transition(edges["observation"], edges["action"], extras=extras, info=info, **fields)

    @staticmethod
    def stack(transitions: Sequence[Transition]) -> Transition:
        return jax.tree.map(lambda *xs: jnp.stack(xs), *transitions)

    def rollout(
        self, state: LoopState, fixed: dict | None = None
    ) -> tuple[LoopState, Transition, jax.Array]:
        """``begin``, then ``rollout_len`` steps in a ``lax.scan``.

        ``fixed``: the edges from outside the step body, when ``state`` holds only the actors'
        side (an actor/learner placement); read from ``state`` otherwise.
        Returns ``(state, trajectory, learn key)``.
        """
        state, k_rollout, k_learn = self.begin(state)
        if fixed is None:
            fixed = self.fixed_edges(state.fragments)
        step = functools.partial(self.rollout_step, fixed)
        carry, trajectory = jax.lax.scan(
            step, self.rollout_carry(state.fragments, k_rollout), length=self.rollout_len
        )
        states = self.end_rollout(state.fragments, carry)
        return state._replace(fragments=states), trajectory, k_learn

    def unroll(
        self, state: LoopState, key: jax.Array, run: StepRunner, steps: int | None = None
    ) -> tuple[LoopState, list[Transition]]:
        """The rollout driven from Python, for the split modes: ``steps`` (default
        ``rollout_len``) steps of the step body from rollout key ``key``, each call carried
        out by ``run``. Returns the state after them and the steps' transitions."""
        fixed = self.fixed_edges(state.fragments)
        carry, transitions = self.rollout_carry(state.fragments, key), []
        for _ in range(self.rollout_len if steps is None else steps):
            carry, transition = self.step(fixed, carry, run)
            transitions.append(transition)
        return state._replace(fragments=self.end_rollout(state.fragments, carry)), transitions

    # -- after the rollout -------------------------------------------------------------------

    def learn(
        self, state: LoopState, trajectory: Transition, key: jax.Array
    ) -> tuple[LoopState, Metrics]:
        """The nodes after the rollout, in order; metrics include completed-episode statistics."""
        env_steps = (state.iteration + 1) * trajectory.reward.size
        edges = {TRAJECTORY: trajectory, ENV_STEPS: env_steps, ITERATION_EDGE: state.iteration + 1}
        learn = Learn(self, state.fragments, edges)
        metrics: Metrics = {}
        for node, k in zip(self.schedule.after, self._node_keys(key), strict=True):
            metrics.update(learn.node(node, k, state.iteration))
        metrics.update(episode_metrics(trajectory))
        return state._replace(fragments=learn.states, iteration=state.iteration + 1), metrics

    def _node_keys(self, key: jax.Array) -> list[jax.Array]:
        """One key per node after the rollout: the learn key itself for the one node that
        trains, else a split among those nodes; a node of evaluators only folds its position
        into the learn key instead, so adding one changes nothing the others compute."""
        nodes = self.schedule.after
        observes = [
            all(self._by_name[n].role is Role.EVALUATOR for n in x.fragments) for x in nodes
        ]
        trains = observes.count(False)
        split = iter([key] if trains == 1 else list(rng.split(key, trains)))
        return [
            jax.random.fold_in(key, _OBSERVERS + i) if observer else next(split)
            for i, observer in enumerate(observes)
        ]

    def iteration(self, state: LoopState, _: Any = None) -> tuple[LoopState, Metrics]:
        state, trajectory, k_learn = self.rollout(state)
        return self.learn(state, trajectory, k_learn)

    # -- helpers -----------------------------------------------------------------------------

    def fragment(self, name: str) -> Fragment:
        return self._by_name[name]

    def published_by(self, name: str, states: dict) -> dict[str, Any]:
        """What fragment ``name`` publishes from its state in ``states``."""
        return published(self._by_name[name], states[name])


def drive(body: Generator, run: StepRunner) -> Any:
    """Run a step body (:meth:`Loop.step_calls`) to its end, each call carried out by ``run``."""
    try:
        request = next(body)
        while True:
            request = body.send(run(*request))
    except StopIteration as done:
        return done.value


def iterations_done(state: LoopState) -> int:
    """The iterations ``state`` has completed (on the host; one count for all lanes of a
    replicated run, which advance together)."""
    return int(np.asarray(state.iteration).reshape(-1)[0])


def episode_metrics(trajectory: Transition) -> Metrics:
    """Sums over the episodes that ended inside the trajectory (their count may be zero)."""
    done = jnp.logical_or(trajectory.terminated, trajectory.truncated)
    info = trajectory.info
    metrics = {"episodes": done.sum().astype(jnp.float32)}
    if "episode_return" in info:
        metrics["episode_return_sum"] = jnp.where(done, info["episode_return"], 0.0).sum()
        metrics["episode_length_sum"] = (
            jnp.where(done, info["episode_length"], 0).sum().astype(jnp.float32)
        )
    return metrics


__all__ = [
    "RUNS",
    "Loop",
    "RolloutCarry",
    "StepCall",
    "drive",
    "episode_metrics",
    "iterations_done",
]

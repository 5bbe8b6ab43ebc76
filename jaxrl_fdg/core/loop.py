"""The RL loop of a graph, as pure functions that interpret its
:class:`~jaxrl_fdg.core.graph.Schedule`: :func:`make_loop` builds the
:class:`~jaxrl_fdg.core.record.Loop` record.

One iteration is the schedule tree run once::

    iteration = begin ; rollout (the step body × T, stacked) ; the nodes after the rollout

There is one step body (:func:`jaxrl_fdg.core.step.step_body`) and one learn body
(:mod:`jaxrl_fdg.core.learn`). Every fusion mode and placement runs these two; they differ only
in where the compilation boundaries fall and in how each call of the step body is carried out
(traced into a program, dispatched as a program of its own, stepped on the host): that is the
:class:`~jaxrl_fdg.core.step.Driver`'s ``run`` hook.

Random keys are split inside these functions, never by the caller, so the key stream does not
depend on how the pieces are compiled:

* ``begin``: the loop key gives (next loop key, rollout key, learn key); with the env batch in
  halves, the rollout key is split once more, one per half;
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
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import rng
from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.env_fragment import info_outputs
from jaxrl_fdg.core.fragment import Fragment, Role, call, published
from jaxrl_fdg.core.graph import ENV_STEPS, ITERATION_EDGE, TRAJECTORY, Graph
from jaxrl_fdg.core.learn import RUNS, Learn
from jaxrl_fdg.core.names import (
    EPISODE_LENGTH,
    EPISODE_LENGTH_SUM,
    EPISODE_RETURN,
    EPISODE_RETURN_SUM,
    EPISODES,
)
from jaxrl_fdg.core.record import Loop, LoopInfo
from jaxrl_fdg.core.step import Driver, RolloutCarry, join_halves
from jaxrl_fdg.core.types import LoopState, Metrics, Transition
from jaxrl_fdg.errors import GraphError

_OBSERVERS = 0x4F425356  # folded into the learn key for the nodes of evaluators


def make_loop(env: Fragment, algorithm: Algorithm, rollout_len: int, halves: int = 1) -> Loop:
    """The loop record of ``algorithm``'s fragments with the env fragment ``env``, rollouts of
    ``rollout_len`` steps. With ``halves = 2``, ``env`` is the fragment of half the env batch:
    the graph state's entry for it is a pair of states, each half with its own key stream;
    the step body runs for half 0, then half 1 (the other step fragments' states passed from
    one to the next), and the trajectory is the halves' joined along the env axis, half 0's
    environments first, so the learner sees ``[T, num_envs]`` as usual."""
    return _Pieces(env, algorithm, rollout_len, halves).record()


class _Pieces:
    """The pure functions of one graph's loop, bound to it (the record's entries)."""

    def __init__(self, env: Fragment, algorithm: Algorithm, rollout_len: int, halves: int):
        algorithm.check()
        envs = [f.name for f in algorithm.fragments if f.role is Role.ENV]
        if envs:
            raise GraphError(
                f"algorithm {algorithm.name!r} declares env fragment(s) {envs}; the environment "
                "comes from --env"
            )
        fragments = (env, *algorithm.fragments)
        graph = Graph.build(algorithm.name, fragments, rollout_len)
        self.info = LoopInfo(
            graph,
            env,
            algorithm.actor,
            algorithm.learner,
            algorithm.policy,
            algorithm.policy_memory,
            halves,
        )
        self.graph, self.halves = graph, halves
        self._env_info = info_outputs(env)
        self._by_name = {f.name: f for f in fragments}
        step = self.info.step_fragments
        for frag in (env, algorithm.actor):
            if frag not in step:
                raise GraphError(f"fragment {frag.name!r} ({frag.role.value}) must run every step")
        calls = graph.schedule.rollout.calls
        self.calls = tuple(
            self._with_keys(i, functools.partial(call, self._by_name[c.fragment], method=c.method))
            for i, c in enumerate(calls)
        )
        self.driver = Driver(self.info, self._run_pure)

    def record(self) -> Loop:
        return Loop(
            info=self.info,
            init=self.init,
            begin=self.begin,
            calls=self.calls,
            host_calls=tuple(self._host_call(i) for i in range(len(self.calls))),
            stack=stack,
            rollout=self.rollout,
            learn=self.learn,
            iteration=self.iteration,
            fixed_edges=self.fixed_edges,
            carry=self.carry,
            end_rollout=end_rollout,
        )

    # -- what Learn reads of the loop ---------------------------------------------------------

    @property
    def learner(self) -> Fragment:
        return self.info.learner

    def fragment(self, name: str) -> Fragment:
        return self._by_name[name]

    def published_by(self, name: str, states: dict) -> dict[str, Any]:
        """What fragment ``name`` publishes from its state in ``states`` (the env's halves'
        edges joined, under halves)."""
        if self.halves > 1 and name == self.info.env.name:
            halves = [published(self.info.env, s) for s in states[name]]
            return jax.tree.map(lambda *xs: jnp.concatenate(xs), *halves)
        return published(self._by_name[name], states[name])

    # -- state and keys ----------------------------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        """Each fragment's initial state from a key of its own (under halves, the env's key is
        split once more: one per half)."""
        key, *keys = rng.split(key, 1 + len(self.graph.fragments))
        states = {}
        for frag, k in zip(self.graph.fragments, keys, strict=True):
            if self.halves > 1 and frag is self.info.env:
                states[frag.name] = tuple(frag.init(h) for h in rng.split(k, self.halves))
            else:
                states[frag.name] = frag.init(k)
        return LoopState(states, key, jnp.zeros((), jnp.int32))

    def begin(self, state: LoopState) -> tuple[LoopState, Any, jax.Array]:
        """Split the iteration's keys: ``(state with next key, rollout key, learn key)``."""
        key, k_rollout, k_learn = rng.split(state.key, 3)
        if self.halves > 1:
            k_rollout = tuple(rng.split(k_rollout, self.halves))
        return state._replace(key=key), k_rollout, k_learn

    # -- the rollout -------------------------------------------------------------------------

    def fixed_edges(self, states: dict) -> dict[str, Any]:
        """Edges the step body reads from fragments outside it (the learner's ``params``): they
        stay constant for a whole rollout, so the rollout reads them once instead of carrying
        the learner's state (optimizer moments and all) through every step."""
        reads = {e for c in self.graph.schedule.rollout.calls for e in c.inputs}
        step = set(self.graph.step_fragments)
        edges: dict[str, Any] = {}
        for frag in self.graph.fragments:
            outside = frag.name not in step and frag.name in states
            if outside and reads & set(frag.published):
                edges.update(
                    {k: v for k, v in self.published_by(frag.name, states).items() if k in reads}
                )
        return edges

    def carry(self, states: dict, key: Any) -> RolloutCarry:
        return RolloutCarry({name: states[name] for name in self.graph.step_fragments}, key)

    def _with_keys(self, index: int, run: Callable) -> Callable:
        """``run(state, inputs, key)`` as step call ``index``: the first call also splits the
        step's keys and returns ``(state, outputs, the other calls' keys, next key)``."""
        if index:
            return run
        n = len(self.graph.schedule.rollout.calls)

        def first(state: Any, inputs: dict, key: jax.Array):
            key, *keys = rng.split(key, 1 + n)
            state, outputs = run(state, inputs, keys[0])
            return state, outputs, tuple(keys[1:]), key

        return first

    def _host_call(self, index: int) -> Callable:
        c = self.graph.schedule.rollout.calls[index]
        frag = self._by_name[c.fragment]
        if frag.host_apply is None or c.method != "apply":
            return self.calls[index]
        return self._with_keys(index, frag.host_apply)

    def _run_pure(self, index: int, state: Any, inputs: dict, key: jax.Array) -> tuple:
        return self.calls[index](state, inputs, key)

    def rollout(
        self, state: LoopState, fixed: dict | None = None
    ) -> tuple[LoopState, Transition, jax.Array]:
        """``begin``, then ``rollout_len`` steps in a ``lax.scan``; ``fixed`` as
        :attr:`Loop.rollout` says. Returns ``(state, trajectory, learn key)``."""
        state, k_rollout, k_learn = self.begin(state)
        if fixed is None:
            fixed = self.fixed_edges(state.fragments)
        carry, trajectory = jax.lax.scan(
            functools.partial(self.driver.scan_step, fixed),
            self.carry(state.fragments, k_rollout),
            length=self.graph.rollout_len,
        )
        return state._replace(fragments=end_rollout(state.fragments, carry)), trajectory, k_learn

    # -- after the rollout -------------------------------------------------------------------

    def learn(
        self, state: LoopState, trajectory: Transition, key: jax.Array
    ) -> tuple[LoopState, Metrics]:
        """The nodes after the rollout, in order; metrics include completed-episode statistics."""
        # One env step per game: a multi-agent env's rows are its games' agents.
        env_steps = (state.iteration + 1) * (trajectory.reward.size // self.info.env.agents)
        edges = {TRAJECTORY: trajectory, ENV_STEPS: env_steps, ITERATION_EDGE: state.iteration + 1}
        learn = Learn(self, state.fragments, edges)
        metrics: Metrics = {}
        for node, k in zip(self.graph.schedule.after, self._node_keys(key), strict=True):
            metrics.update(learn.node(node, k, state.iteration))
        metrics.update(episode_metrics(trajectory, self._env_info, self.info.env.agents))
        return state._replace(fragments=learn.states, iteration=state.iteration + 1), metrics

    def _node_keys(self, key: jax.Array) -> list[jax.Array]:
        """One key per node after the rollout: the learn key itself for the one node that
        trains, else a split among those nodes; a node of evaluators only folds its position
        into the learn key instead, so adding one changes nothing the others compute."""
        nodes = self.graph.schedule.after
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


def stack(transitions: Sequence[Transition]) -> Transition:
    """The steps' transitions as one trajectory ``[T, ...]``."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *transitions)


def end_rollout(states: dict, carry: RolloutCarry) -> dict:
    """The fragment states with the rollout carry's put back."""
    return {**states, **carry.states}


def iterations_done(state: LoopState) -> int:
    """The iterations ``state`` has completed (on the host; one count for all lanes of a
    replicated run, which advance together)."""
    return int(np.asarray(state.iteration).reshape(-1)[0])


INFO_SUM = "info_sum/"
"""The prefix of an environment info key's metric: ``info_sum/<key>``, its sum over the episodes
that ended (:func:`episode_metrics`)."""


def episode_metrics(
    trajectory: Transition, env_info: Sequence[str] = (), agents: int = 1
) -> Metrics:
    """Sums over the episodes that ended inside the trajectory (their count may be zero).

    ``env_info`` names keys of the environment's info (``Environment.info_env``), each summed
    over the steps that ended an episode as ``info_sum/<key>`` (an info of several numbers, their
    mean first): the run's rows divide by the episodes, giving e.g. the fraction of episodes
    that ended with an achievement unlocked.

    For a game of ``agents`` agents (rows game-major, the game's end on each of its rows) an
    episode is a game: every sum is over games, each game's return and info its agents' mean,
    and each agent's return is summed apart as ``info_sum/episode_return_agent_<i>``, which the
    rows' division by the games makes agent ``i``'s mean return."""
    done = jnp.logical_or(trajectory.terminated, trajectory.truncated)
    info = trajectory.info
    share = 1.0 / agents  # each of a game's rows counts for 1/N of it

    def over_ended(value: jax.Array) -> jax.Array:
        return jnp.where(done, value, 0.0).sum() * share

    metrics = {EPISODES: done.sum().astype(jnp.float32) * share}
    if EPISODE_RETURN in info:
        metrics[EPISODE_RETURN_SUM] = over_ended(info[EPISODE_RETURN])
        lengths = jnp.where(done, info[EPISODE_LENGTH], 0).sum().astype(jnp.float32)
        metrics[EPISODE_LENGTH_SUM] = lengths * share
    for key in env_info:
        value = jnp.asarray(info[key], jnp.float32)
        metrics[INFO_SUM + key] = over_ended(value.reshape(*done.shape, -1).mean(axis=-1))
    if agents > 1 and EPISODE_RETURN in info:  # [T, games, agents]: each agent's column
        ended = jnp.where(done, info[EPISODE_RETURN], 0.0).reshape(*done.shape[:-1], -1, agents)
        for i in range(agents):
            metrics[f"{INFO_SUM}episode_return_agent_{i}"] = ended[..., i].sum()
    return metrics


__all__ = [
    "RUNS",
    "Loop",
    "LoopInfo",
    "RolloutCarry",
    "end_rollout",
    "episode_metrics",
    "iterations_done",
    "join_halves",
    "make_loop",
    "stack",
]

"""The RL loop as pure functions, in the order the graph's :class:`~jaxrl_fdg.core.graph.Schedule`
gives: the step phase at every env step, the learn phase once per iteration.

Every fusion mode is built from exactly these functions, so every mode computes the same thing;
the modes differ only in where the compilation boundaries fall:

    iteration = begin ; step × T (each = the step phase's fragments in order) ; stack ; learn

For an on-policy algorithm ``learn`` runs the learn phase (the learner, after any fragment that
rewrites the trajectory). For an off-policy one it stores the trajectory in the replay, then
(after the warm-up) runs ``updates_per_iteration`` rounds of replay ``sample`` → learner →
replay ``update``.

Random keys are split inside these functions, never by the caller, so the key stream does not
depend on how the pieces are compiled.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.fragment import Fragment, call, published
from jaxrl_fdg.core.graph import ENV_STEPS, TD_ERROR, TRAJECTORY, Graph
from jaxrl_fdg.core.types import LoopState, Metrics, Transition

_ENV_FIELDS = ("reward", "terminated", "truncated", "next_observation")
_RECORDED = ("observation", "action", *_ENV_FIELDS)


class RolloutCarry(NamedTuple):
    """What changes during a rollout: the step phase's fragment states and the key stream."""

    states: dict[str, Any]
    key: jax.Array


class Loop:
    """A rollout of ``rollout_len`` steps of the step phase, then the learn phase."""

    def __init__(self, env: Fragment, algorithm: Algorithm, rollout_len: int):
        algorithm.check()
        self.algorithm = algorithm
        self.env_frag = env
        self.actor = algorithm.actor
        self.learner = algorithm.learner
        self.off_policy = algorithm.off_policy
        self.policy = algorithm.policy
        self.policy_memory = algorithm.policy_memory
        self.rollout_len = rollout_len
        self.fragments = (env, *algorithm.fragments)
        self.graph = Graph.build(algorithm.name, self.fragments, rollout_len)
        self.schedule = self.graph.schedule
        self._by_name = {f.name: f for f in self.fragments}
        self.step_fragments = tuple(self._by_name[n] for n in self.schedule.step)

    # -- state -------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        key, *keys = jax.random.split(key, 1 + len(self.fragments))
        states = {f.name: f.init(k) for f, k in zip(self.fragments, keys, strict=True)}
        return LoopState(states, key, jnp.zeros((), jnp.int32))

    def check_state(self, state: LoopState) -> None:
        self.graph.check_state(state.fragments)

    # -- the step phase ----------------------------------------------------------------------

    def begin(self, state: LoopState) -> tuple[LoopState, jax.Array, jax.Array]:
        """Split the iteration's keys: ``(state with next key, rollout key, learn key)``."""
        key, k_rollout, k_learn = jax.random.split(state.key, 3)
        return state._replace(key=key), k_rollout, k_learn

    def fixed_edges(self, states: dict) -> dict[str, Any]:
        """Edges the step phase reads from fragments outside it (the learner's ``params``): they
        stay constant for a whole rollout, so the rollout reads them once instead of carrying
        the learner's state (optimizer moments and all) through every step."""
        reads = {e for f in self.step_fragments for e in f.inputs}
        edges: dict[str, Any] = {}
        for frag in self.fragments:
            if frag not in self.step_fragments and frag.name in states:
                edges.update(
                    {k: v for k, v in published(frag, states[frag.name]).items() if k in reads}
                )
        return edges

    def step_edges(self, fixed: dict, carry: RolloutCarry) -> dict[str, Any]:
        """Every edge visible at the start of a step: fixed ones plus the step fragments'."""
        edges = dict(fixed)
        for frag in self.step_fragments:
            edges.update(published(frag, carry.states[frag.name]))
        return edges

    def step_fn(self, index: int) -> Callable:
        """The call of step fragment ``index`` as a pure function ``(state, inputs, key)``.

        The first one also splits the step's keys, so a split mode compiles no extra program
        for them: it returns ``(state, outputs, the other fragments' keys, next key)``; the
        others return ``(state, outputs)``."""
        frag = self.step_fragments[index]
        if index:
            return functools.partial(call, frag)
        n = len(self.step_fragments)

        def first(state: Any, inputs: dict, key: jax.Array):
            key, *keys = jax.random.split(key, 1 + n)
            state, outputs = call(frag, state, inputs, keys[0])
            return state, outputs, tuple(keys[1:]), key

        return first

    def rollout_step(self, fixed: dict, carry: RolloutCarry, _: Any = None):
        """One step of the step phase: ``(carry, transition)``; ``fixed`` from
        :meth:`fixed_edges`."""
        edges, states, outputs = self.step_edges(fixed, carry), dict(carry.states), {}
        key, *keys = jax.random.split(carry.key, 1 + len(self.step_fragments))
        for frag, k in zip(self.step_fragments, keys, strict=True):
            states[frag.name], outputs[frag.name] = call(frag, states[frag.name], edges, k)
            edges.update(outputs[frag.name])
        return RolloutCarry(states, key), self.transition(edges, outputs)

    def rollout_carry(self, states: dict, key: jax.Array) -> RolloutCarry:
        return RolloutCarry({f.name: states[f.name] for f in self.step_fragments}, key)

    def end_rollout(self, states: dict, carry: RolloutCarry) -> dict:
        return {**states, **carry.states}

    def transition(self, edges: dict, outputs: dict[str, dict]) -> Transition:
        """A step's record: the edges the actor and env saw and made (after any rewrite)."""
        extras = {k: v for k, v in outputs[self.actor.name].items() if k != "action"}
        info = {
            k: v
            for name, out in outputs.items()
            if name != self.actor.name
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

        ``fixed``: the edges from outside the step phase, when ``state`` holds only the actors'
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

    # -- the learn phase ---------------------------------------------------------------------

    def learn(
        self, state: LoopState, trajectory: Transition, key: jax.Array
    ) -> tuple[LoopState, Metrics]:
        """The learn phase of an iteration; metrics include completed-episode statistics."""
        env_steps = (state.iteration + 1) * trajectory.reward.size
        edges = {
            **self.published_edges(state.fragments),
            TRAJECTORY: trajectory,
            ENV_STEPS: env_steps,
        }
        if self.off_policy is not None:
            k_store, k_updates = jax.random.split(key)
            states, outputs = self._phase(self.schedule.learn, state.fragments, edges, k_store)
            # The updates read what the learn phase's fragments publish now, after this rollout
            # (e.g. observation moments that include its observations).
            learned = {name: states[name] for name in self.schedule.learn}
            edges = {**edges, **self.published_edges(learned)}
            states, metrics = self._updates(states, edges, env_steps, k_updates)
        else:
            states, outputs = self._phase(self.schedule.learn, state.fragments, edges, key)
            metrics = {}
        metrics = {**_metrics(outputs, self.learner.name), **metrics}
        metrics.update(episode_metrics(trajectory))
        return state._replace(fragments=states, iteration=state.iteration + 1), metrics

    def _phase(self, order: Sequence[str], states: dict, edges: dict, key: jax.Array):
        """Call the fragments named in ``order``, each on the edges so far; one key each (the
        phase's key itself when there is one fragment)."""
        states, edges, outputs = dict(states), dict(edges), {}
        keys = [key] if len(order) == 1 else list(jax.random.split(key, len(order)))
        for name, k in zip(order, keys, strict=True):
            states[name], outputs[name] = call(self._by_name[name], states[name], edges, k)
            edges.update(outputs[name])
        return states, outputs

    def _updates(self, states: dict, edges: dict, env_steps: jax.Array, key: jax.Array):
        """``updates_per_iteration`` rounds of sample → update phase → new priorities, once the
        warm-up is over. Metrics are means over the rounds (zeros, with ``updates = 0``, during
        the warm-up)."""
        off, schedule = self.off_policy, self.schedule
        replay = schedule.sample[0]
        round_states = {n: states[n] for n in sorted({*schedule.update, replay})}

        def one_update(carry: dict, key: jax.Array):
            k_sample, k_learn = jax.random.split(key)
            carry, out = self._call_method(carry, schedule.sample, edges, k_sample)
            carry, outputs = self._phase(schedule.update, carry, {**edges, **out}, k_learn)
            if schedule.feedback is not None:  # the last update-phase writer of td_error
                td_error = next(o[TD_ERROR] for o in reversed(outputs.values()) if TD_ERROR in o)
                feedback = {**out, TD_ERROR: td_error}
                carry, _ = self._call_method(carry, schedule.feedback, feedback, k_sample)
            return carry, _metrics(outputs, self.learner.name)

        keys = jax.random.split(key, off.updates_per_iteration)
        metric_names = sorted(jax.eval_shape(one_update, round_states, keys[0])[1])

        def updates(carry):
            # Metrics are summed in the carry (see fragments.minibatch for why not stacked).
            def body(inner, key):
                carry, sums = inner
                carry, metrics = one_update(carry, key)
                return (carry, sums + jnp.stack([metrics[k] for k in metric_names])), None

            sums = jnp.zeros(len(metric_names), jnp.float32)
            (carry, sums), _ = jax.lax.scan(body, (carry, sums), keys)
            return carry, sums / off.updates_per_iteration

        def warm_up(carry):
            return carry, jnp.zeros(len(metric_names), jnp.float32)

        ready = (env_steps >= off.learning_starts) & off.can_sample(states[replay])
        round_states, means = jax.lax.cond(ready, updates, warm_up, round_states)
        metrics = {k: means[i] for i, k in enumerate(metric_names)}
        metrics["updates"] = jnp.where(ready, off.updates_per_iteration, 0).astype(jnp.float32)
        return {**states, **round_states}, metrics

    def _call_method(self, states: dict, where: tuple[str, str], edges: dict, key: jax.Array):
        name, method = where
        state, out = call(self._by_name[name], states[name], edges, key, method)
        return {**states, name: state}, out

    def iteration(self, state: LoopState, _: Any = None) -> tuple[LoopState, Metrics]:
        state, trajectory, k_learn = self.rollout(state)
        return self.learn(state, trajectory, k_learn)

    # -- helpers -----------------------------------------------------------------------------

    def published_edges(self, states: dict) -> dict[str, Any]:
        """Every edge the fragments in ``states`` publish from their current state (no
        computation). ``states`` may hold one side only (the learner's, on its own devices)."""
        edges: dict[str, Any] = {}
        for frag in self.fragments:
            if frag.name in states:
                edges.update(published(frag, states[frag.name]))
        return edges

    @property
    def learner_side(self) -> tuple[str, ...]:
        """The fragments an actor/learner placement keeps with the learner: all but the step
        phase's, which stay with the actors."""
        return tuple(f.name for f in self.fragments if f not in self.step_fragments)


def _metrics(outputs: dict[str, dict], learner: str) -> Metrics:
    """The learner's ``metrics`` output, plus any other fragment's, prefixed by its name."""
    metrics = dict(outputs.get(learner, {}).get("metrics", {}))
    for name, out in outputs.items():
        if name != learner and "metrics" in out:
            metrics.update({f"{name}/{k}": v for k, v in out["metrics"].items()})
    return metrics


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


__all__ = ["Loop", "RolloutCarry", "episode_metrics", "iterations_done"]

"""The RL loop as pure functions: one policy call, one env step, a rollout, an update.

Every fusion mode is built from exactly these functions, so every mode computes the same thing;
the modes differ only in where the compilation boundaries fall:

    iteration = begin ; rollout_step × T (each = act ; env) ; stack ; learn

For an on-policy algorithm ``learn`` is one learner call on the trajectory. For an off-policy one
it stores the trajectory in the replay fragment, then (after the warm-up) runs
``updates_per_iteration`` rounds of sample → learner → priority update.

Random keys are split inside these functions, never by the caller, so the key stream does not
depend on how the pieces are compiled.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.algorithm import Algorithm
from jaxrl_fdg.env_fragment import ENV_OUTPUTS
from jaxrl_fdg.fragment import Fragment, call, published
from jaxrl_fdg.graph import Graph

Metrics = dict[str, jax.Array]

_ENV_FIELDS = ("reward", "terminated", "truncated", "next_observation")


class Transition(NamedTuple):
    """One step of experience; a trajectory is a ``Transition`` of arrays ``[T, B, ...]``.

    ``next_observation`` is the observation the step actually reached (the final one of an episode
    that ended), so a learner can bootstrap on truncation. ``extras`` holds the actor's outputs
    besides the action (log-probabilities, values, ...); ``info`` the env's other outputs.
    """

    observation: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_observation: jax.Array
    extras: dict[str, jax.Array]
    info: dict[str, jax.Array]


class RolloutCarry(NamedTuple):
    """What changes during a rollout: the actor's and env's states and the key stream."""

    actor: Any
    env: Any
    key: jax.Array


class Pending(NamedTuple):
    """A rollout collected but not yet learned from (see :class:`LaggedLoop`): the trajectory,
    its learn key, and ``version``, the number of updates the parameters that collected it had
    had."""

    trajectory: Transition
    key: jax.Array
    version: jax.Array


class LoopState(NamedTuple):
    """The graph state (``{fragment name: state}``), the key stream and the iteration counter;
    ``pending`` holds the rollout a :class:`LaggedLoop` learns from next (``None`` otherwise)."""

    fragments: dict[str, Any]
    key: jax.Array
    iteration: jax.Array
    pending: Pending | None = None


class Loop:
    """Rollout of ``rollout_len`` steps of env∘actor, then one learner update, as pure functions."""

    def __init__(self, env: Fragment, algorithm: Algorithm, rollout_len: int):
        algorithm.check()
        self.env_frag = env
        self.actor = algorithm.actor
        self.learner = algorithm.learner
        self.off_policy = algorithm.off_policy
        self.policy = algorithm.policy
        self.rollout_len = rollout_len
        self.fragments = (env, self.actor, self.learner)
        if self.off_policy is not None:
            self.fragments += (self.off_policy.replay.fragment,)
        self.graph = Graph.build(algorithm.name, self.fragments, rollout_len)

    # -- state -------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        key, *keys = jax.random.split(key, 1 + len(self.fragments))
        states = {f.name: f.init(k) for f, k in zip(self.fragments, keys, strict=True)}
        return LoopState(states, key, jnp.zeros((), jnp.int32))

    def check_state(self, state: LoopState) -> None:
        self.graph.check_state(state.fragments)

    # -- the pieces every fusion mode is built from -----------------------------------------

    def begin(self, state: LoopState) -> tuple[LoopState, jax.Array, jax.Array]:
        """Split the iteration's keys: ``(state with next key, rollout key, learn key)``."""
        key, k_rollout, k_learn = jax.random.split(state.key, 3)
        return state._replace(key=key), k_rollout, k_learn

    def act(self, actor_state: Any, inputs: dict, key: jax.Array):
        """One policy call on the actor's declared inputs only.

        Returns ``(actor state, actor outputs, env key, next key)``.
        """
        key, k_act, k_env = jax.random.split(key, 3)
        actor_state, out = call(self.actor, actor_state, inputs, k_act)
        return actor_state, out, k_env, key

    def env_step(self, env_state: Any, inputs: dict, key: jax.Array):
        """One vectorised env step on the env's declared inputs: ``(env state, outputs)``."""
        return call(self.env_frag, env_state, inputs, key)

    def fixed_edges(self, states: dict) -> dict[str, Any]:
        """Edges published by fragments outside the rollout (the learner's ``params``): they stay
        constant for a whole rollout, so the rollout reads them once instead of carrying the
        learner's state (optimizer moments and all) through every step."""
        return published(self.learner, states[self.learner.name])

    def step_edges(self, fixed: dict, carry: RolloutCarry) -> dict[str, Any]:
        """Every edge visible at the start of a step: fixed ones plus the actor's and env's."""
        return {
            **fixed,
            **published(self.env_frag, carry.env),
            **published(self.actor, carry.actor),
        }

    def actor_inputs(self, fixed: dict, carry: RolloutCarry) -> dict[str, Any]:
        edges = self.step_edges(fixed, carry)
        return {name: edges[name] for name in self.actor.inputs}

    def env_inputs(self, fixed: dict, carry: RolloutCarry, actor_out: dict) -> dict[str, Any]:
        edges = {**self.step_edges(fixed, carry), **actor_out}
        return {name: edges[name] for name in self.env_frag.inputs}

    def rollout_step(self, fixed: dict, carry: RolloutCarry, _: Any = None):
        """One step of env∘actor: ``(carry, transition)``; ``fixed`` from :meth:`fixed_edges`."""
        observation = self.observation(carry)
        actor_state, actor_out, k_env, key = self.act(
            carry.actor, self.actor_inputs(fixed, carry), carry.key
        )
        carry = carry._replace(actor=actor_state)
        env_state, env_out = self.env_step(
            carry.env, self.env_inputs(fixed, carry, actor_out), k_env
        )
        return RolloutCarry(actor_state, env_state, key), self.transition(
            observation, actor_out, env_out
        )

    def observation(self, carry: RolloutCarry) -> jax.Array:
        """The observation the actor acts on at this step."""
        return published(self.env_frag, carry.env)["observation"]

    def rollout_carry(self, states: dict, key: jax.Array) -> RolloutCarry:
        return RolloutCarry(states[self.actor.name], states[self.env_frag.name], key)

    def end_rollout(self, states: dict, carry: RolloutCarry) -> dict:
        return {**states, self.actor.name: carry.actor, self.env_frag.name: carry.env}

    @staticmethod
    def transition(observation: jax.Array, actor_out: dict, env_out: dict) -> Transition:
        extras = {k: v for k, v in actor_out.items() if k != "action"}
        info = {k: v for k, v in env_out.items() if k not in _ENV_FIELDS}
        fields = {k: env_out[k] for k in _ENV_FIELDS}
        return Transition(observation, actor_out["action"], extras=extras, info=info, **fields)

    @staticmethod
    def stack(transitions: list[Transition]) -> Transition:
        return jax.tree.map(lambda *xs: jnp.stack(xs), *transitions)

    def rollout(
        self, state: LoopState, fixed: dict | None = None
    ) -> tuple[LoopState, Transition, jax.Array]:
        """``begin``, then ``rollout_len`` steps in a ``lax.scan``.

        ``fixed``: the learner's published edges, when ``state`` holds only the actor's side (an
        actor/learner placement); read from ``state`` otherwise.
        Returns ``(state, trajectory, learn key)``.
        """
        state, k_rollout, k_learn = self.begin(state)
        if fixed is None:
            fixed = self.fixed_edges(state.fragments)
        step = functools.partial(self.rollout_step, fixed)
        carry, trajectory = jax.lax.scan(
            step, self.rollout_carry(state.fragments, k_rollout), length=self.rollout_len
        )
        return (
            state._replace(fragments=self.end_rollout(state.fragments, carry)),
            trajectory,
            k_learn,
        )

    def learn(
        self, state: LoopState, trajectory: Transition, key: jax.Array
    ) -> tuple[LoopState, Metrics]:
        """The learner's part of an iteration; metrics include completed-episode statistics."""
        if self.off_policy is not None:
            states, metrics = self._learn_from_replay(state, trajectory, key)
        else:
            states = state.fragments
            edges = {**self.published_edges(states), "trajectory": trajectory}
            learner_state, out = call(self.learner, states[self.learner.name], edges, key)
            states = {**states, self.learner.name: learner_state}
            metrics = out["metrics"]
        metrics = {**metrics, **episode_metrics(trajectory)}
        return state._replace(fragments=states, iteration=state.iteration + 1), metrics

    def _learn_from_replay(self, state: LoopState, trajectory: Transition, key: jax.Array):
        """Store the rollout, then ``updates_per_iteration`` rounds of sample → update → new
        priorities, once the warm-up is over. Metrics are means over the rounds (zeros, with
        ``updates = 0``, during the warm-up)."""
        off, states = self.off_policy, state.fragments
        replay, learner = off.replay, self.learner
        k_store, k_updates = jax.random.split(key)
        replay_state, _ = call(
            replay.fragment, states[replay.fragment.name], {"trajectory": trajectory}, k_store
        )
        env_steps = (state.iteration + 1) * trajectory.reward.size

        def one_update(carry, key):
            learner_state, replay_state = carry
            k_sample, k_learn = jax.random.split(key)
            batch = replay.sample(replay_state, k_sample, env_steps)
            learner_state, out = call(learner, learner_state, {"batch": batch}, k_learn)
            replay_state = replay.update(replay_state, batch, out["td_error"])
            return (learner_state, replay_state), out["metrics"]

        learner_state = states[learner.name]
        keys = jax.random.split(k_updates, off.updates_per_iteration)
        shapes = jax.eval_shape(one_update, (learner_state, replay_state), keys[0])[1]
        names = sorted(shapes)

        def updates(carry):
            # Metrics are summed in the carry (see fragments.minibatch for why not stacked).
            def body(inner, key):
                carry, sums = inner
                carry, metrics = one_update(carry, key)
                return (carry, sums + jnp.stack([metrics[k] for k in names])), None

            sums = jnp.zeros(len(names), jnp.float32)
            (carry, sums), _ = jax.lax.scan(body, (carry, sums), keys)
            return carry, sums / off.updates_per_iteration

        def warm_up(carry):
            return carry, jnp.zeros(len(names), jnp.float32)

        ready = (env_steps >= off.learning_starts) & replay.can_sample(replay_state)
        (learner_state, replay_state), means = jax.lax.cond(
            ready, updates, warm_up, (learner_state, replay_state)
        )
        metrics = {k: means[i] for i, k in enumerate(names)}
        metrics["updates"] = jnp.where(ready, off.updates_per_iteration, 0).astype(jnp.float32)
        states = {**states, learner.name: learner_state, replay.fragment.name: replay_state}
        return states, metrics

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
        """The fragments an actor/learner placement keeps with the learner (replay included);
        the env and the actor stay with the actors."""
        return tuple(f.name for f in self.fragments if f not in (self.env_frag, self.actor))


class LaggedLoop:
    """A :class:`Loop` whose learner trains on the rollout collected one iteration earlier.

    Iteration ``i`` collects rollout ``i + 1`` with the parameters of iteration ``i`` while the
    learner trains on rollout ``i``: the two no longer depend on each other, so an actor/learner
    placement runs them at the same time on different devices. The policy lag is bounded by one
    iteration's updates and reported as metric ``policy_lag`` (updates between the parameters
    that collected the trajectory and those that start learning from it). The learner corrects
    for it as the algorithm already does for its own epochs: PPO's ratio is taken against the
    behaviour policy's stored log-probabilities and clipped; off-policy learners learn from
    replay regardless.

    ``init`` collects the first rollout (``num_envs × rollout_len`` env steps more than the
    iterations count). The pending rollout is part of :class:`LoopState`, so checkpoints and
    resumes carry it.
    """

    def __init__(self, loop: Loop):
        self.loop = loop

    def init(self, key: jax.Array) -> LoopState:
        state = self.loop.init(key)
        state, trajectory, k_learn = self.loop.rollout(state)
        return state._replace(pending=Pending(trajectory, k_learn, state.iteration))

    def learn(
        self, state: LoopState, trajectory: Transition, key: jax.Array
    ) -> tuple[LoopState, Metrics]:
        """Learn from the pending rollout; ``trajectory`` (just collected) becomes pending."""
        collected = Pending(trajectory, key, state.iteration)
        state, metrics = self.learn_pending(state._replace(pending=None), state.pending)
        return state._replace(pending=collected), metrics

    def learn_pending(self, state: LoopState, pending: Pending) -> tuple[LoopState, Metrics]:
        """The learner's step on ``pending`` (``state`` may hold the learner's side only)."""
        lag = (state.iteration - pending.version).astype(jnp.float32)
        state, metrics = self.loop.learn(state, pending.trajectory, pending.key)
        return state, {**metrics, "policy_lag": lag}

    def iteration(self, state: LoopState, _: Any = None) -> tuple[LoopState, Metrics]:
        state, trajectory, k_learn = self.loop.rollout(state)
        return self.learn(state, trajectory, k_learn)

    def __getattr__(self, name: str) -> Any:
        # Everything else (begin, act, env_step, rollout, edge plumbing, graph, ...) as the loop.
        return getattr(self.loop, name)


def iterations_done(state: LoopState) -> int:
    """The iterations ``state`` has completed (on the host; one count for all seeds of a
    :class:`~jaxrl_fdg.seeds.SeedLoop`, whose lanes advance together)."""
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
    "ENV_OUTPUTS",
    "LaggedLoop",
    "Loop",
    "LoopState",
    "Pending",
    "Transition",
    "episode_metrics",
]

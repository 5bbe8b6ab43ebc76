"""A loop whose learner trains on the rollout collected one iteration earlier."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.protocol import LoopLike, LoopWrapper
from jaxrl_fdg.core.types import LoopState, Metrics, Pending, Transition

POLICY_LAGS = (0, 1)  # iterations the learner may trail the actors by


class LaggedLoop(LoopWrapper):
    """Iteration ``i`` collects rollout ``i + 1`` with the parameters of iteration ``i`` while the
    learner trains on rollout ``i``.

    The two no longer depend on each other, so an actor/learner placement runs them at the same
    time on different devices. The policy lag is bounded by one iteration's updates and reported
    as metric ``policy_lag`` (updates between the parameters that collected the trajectory and
    those that start learning from it). The learner corrects for it as the algorithm already
    does for its own epochs: PPO's ratio is taken against the behaviour policy's stored
    log-probabilities and clipped; off-policy learners learn from replay regardless.

    ``init`` collects the first rollout (``num_envs × rollout_len`` env steps more than the
    iterations count). The pending rollout is part of :class:`LoopState`, so checkpoints and
    resumes carry it.
    """

    def __init__(self, loop: LoopLike):
        super().__init__(loop)

    def init(self, key: jax.Array) -> LoopState:
        state = self.inner.init(key)
        state, trajectory, k_learn = self.inner.rollout(state)
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
        state, metrics = self.inner.learn(state, pending.trajectory, pending.key)
        return state, {**metrics, "policy_lag": lag}

    def iteration(self, state: LoopState, _: Any = None) -> tuple[LoopState, Metrics]:
        state, trajectory, k_learn = self.inner.rollout(state)
        return self.learn(state, trajectory, k_learn)

"""A loop whose learner trains on the rollout collected one iteration earlier."""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState, Metrics, Pending, Transition

POLICY_LAGS = (0, 1)  # iterations the learner may trail the actors by


def lagged(loop: Loop) -> Loop:
    """``loop`` with iteration ``i`` collecting rollout ``i + 1`` with the parameters of
    iteration ``i`` while the learner trains on rollout ``i``.

    The two no longer depend on each other, so an actor/learner placement runs them at the same
    time on different devices (through :attr:`Loop.learn_pending`). The policy lag is bounded by
    one iteration's updates and reported as metric ``policy_lag`` (updates between the
    parameters that collected the trajectory and those that start learning from it). The
    learner corrects for it as the algorithm already does for its own epochs: PPO's ratio is
    taken against the behaviour policy's stored log-probabilities and clipped; off-policy
    learners learn from replay regardless.

    ``init`` collects the first rollout (``num_envs × rollout_len`` env steps more than the
    iterations count). The pending rollout is part of :class:`LoopState`, so checkpoints and
    resumes carry it.
    """

    def init(key: jax.Array) -> LoopState:
        state = loop.init(key)
        state, trajectory, k_learn = loop.rollout(state)
        return state._replace(pending=Pending(trajectory, k_learn, state.iteration))

    def learn_pending(state: LoopState, pending: Pending) -> tuple[LoopState, Metrics]:
        """The learner's step on ``pending`` (``state`` may hold the learner's side only)."""
        lag = (state.iteration - pending.version).astype(jnp.float32)
        state, metrics = loop.learn(state, pending.trajectory, pending.key)
        return state, {**metrics, "policy_lag": lag}

    def learn(state: LoopState, trajectory: Transition, key: jax.Array):
        """Learn from the pending rollout; ``trajectory`` (just collected) becomes pending."""
        collected = Pending(trajectory, key, state.iteration)
        state, metrics = learn_pending(state._replace(pending=None), state.pending)
        return state._replace(pending=collected), metrics

    def iteration(state: LoopState, _: Any = None) -> tuple[LoopState, Metrics]:
        state, trajectory, k_learn = loop.rollout(state)
        return learn(state, trajectory, k_learn)

    return loop._replace(
        info=loop.info._replace(lagged=True),
        init=init,
        learn=learn,
        iteration=iteration,
        learn_pending=learn_pending,
    )


def LaggedLoop(loop: Loop) -> Loop:  # noqa: N802 (the deprecated class name)
    """Deprecated: :func:`lagged`."""
    warnings.warn(
        "LaggedLoop(loop) is deprecated; use jaxrl_fdg.core.lagged.lagged(loop)",
        DeprecationWarning,
        stacklevel=2,
    )
    return lagged(loop)

"""Placement ``actor_learner``: the rollout on one device, the learner on another.

The loop's pure functions are split along the graph: the step phase (env, actor, and the key
stream) lives on the *actor* device, the learn phase (learner, replay, ...) on the *learner*
device. Each
iteration runs two programs, compiled apart as in the ``fragment`` fusion mode:

* ``rollout`` on the actor device, reading the edges the learner side publishes for it (its
  ``params``, a copy moved there after every update);
* ``learner`` on the learner device, reading the trajectory and its learn key (moved there).

Synchronous (``policy_lag = 0``): rollout, then update, as in every other placement. The result
equals the ``single`` placement for the same seed: the same functions run in the same order on
the same inputs.

Asynchronous (``policy_lag = 1``): the loop is lagged (:func:`~jaxrl_fdg.core.lagged.lagged`). The
learner trains on the rollout collected the iteration before, so iteration ``i``'s two programs
share no input: the host dispatches both, and the actor device collects rollout ``i + 1`` with the
parameters of iteration ``i`` while the learner device trains on rollout ``i``. The result
equals a lagged loop's run in any fusion mode on one device.

At host boundaries the plan hands the runner one :class:`~jaxrl_fdg.core.types.LoopState` on the
actor device (the default one), so checkpoints, evaluation and resumes see the usual state.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxrl_fdg.core.names import BATCH, BATCH_SLOTS, ENV_STEPS, TD_ERROR, TRAJECTORY
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState, Pending
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies.base import BasePlacement, Devices, EnvKind, Supports, register, visible
from jaxrl_fdg.policies.plan import Plan
from jaxrl_fdg.profiling.timers import Timings

DEVICES = 2  # one for the actors, one for the learner
# What the learner's side may read besides its own edges: what crosses to its device each
# iteration (the trajectory), the loop's counters, and what its own replay's calls write.
CROSSING = frozenset({TRAJECTORY, ENV_STEPS, BATCH, BATCH_SLOTS, TD_ERROR})


def check(loop: Loop) -> None:
    """The learner side may read only what crosses to its device: trajectories, replay batches,
    the loop's counters and its own side's edges (not an edge the step phase publishes)."""
    side = set(loop.info.learner_side)
    fragments = loop.info.graph.fragments
    own = {e for f in fragments if f.name in side for e in (*f.published, *f.outputs)}
    for frag in fragments:
        if frag.name not in side:
            continue
        reads = {e for m in (frag.method("apply"), *frag.methods) for e in m.inputs}
        foreign = reads - own - CROSSING
        if foreign:
            raise ConfigError(
                f"placement actor_learner: {frag.name!r} reads "
                f"{', '.join(sorted(foreign))}, published on the actors' device"
            )


def actor_learner_devices() -> tuple[jax.Device, jax.Device]:
    actors, learner = visible(DEVICES, "")
    return actors, learner


class ActorLearnerPlan(Plan):
    """Rollout and learner programs on two devices; ``loop`` is a :class:`Loop` (synchronous)
    or a lagged one (asynchronous: its ``learn_pending`` is set)."""

    mode = "fragment"

    def __init__(self, loop: Loop, timings: Timings | None = None, chunk: int = 1):
        super().__init__(loop, timings)
        self.lagged = loop.learn_pending is not None
        check(loop)
        self.actor_device, self.learner_device = actor_learner_devices()
        self._learner_names = set(loop.info.learner_side)

    # -- the state, split and merged ---------------------------------------------------------

    def _split(self, state: LoopState) -> tuple[LoopState, LoopState, Pending | None]:
        """``(actor side, learner side, pending)``, each committed to its device."""
        frags = state.fragments
        actor = state._replace(
            fragments={k: v for k, v in frags.items() if k not in self._learner_names},
            pending=None,
        )
        learner = state._replace(
            fragments={k: v for k, v in frags.items() if k in self._learner_names},
            pending=None,
        )
        with self.timings.scope("transfer"):
            actor = jax.device_put(actor, self.actor_device)
            learner, pending = jax.device_put((learner, state.pending), self.learner_device)
        return actor, learner, pending

    def _merge(self, actor: LoopState, learner: LoopState, pending: Pending | None) -> LoopState:
        with self.timings.scope("transfer"):
            learner, pending = jax.device_put((learner, pending), self.actor_device)
        return LoopState(
            {**actor.fragments, **learner.fragments}, actor.key, learner.iteration, pending
        )  # no population: a run of several lanes is replicated, not split

    def _params(self, learner: LoopState) -> dict[str, Any]:
        """The learner side's edges the rollout reads, moved to the actor device."""
        edges = self.loop.fixed_edges(learner.fragments)
        with self.timings.scope("transfer"):
            return jax.device_put(edges, self.actor_device)

    # -- the Plan interface ------------------------------------------------------------------

    def _signatures(self, state):
        actor, learner, pending = self._split(state)
        fixed = self._params(learner)
        _, trajectory, k_learn = jax.eval_shape(self.loop.rollout, actor, fixed)
        on_learner = jax.sharding.SingleDeviceSharding(self.learner_device)
        trajectory, k_learn = jax.tree.map(
            lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=on_learner),
            (trajectory, k_learn),
        )
        if self.lagged:
            learn = self.loop.learn_pending
            learn_args = (learner, pending)
        else:
            learn = self.loop.learn
            learn_args = (learner, trajectory, k_learn)
        return {"rollout": (self.loop.rollout, (actor, fixed)), "learner": (learn, learn_args)}

    def _advance(self, state, n):
        actor, learner, pending = self._split(state)
        fixed = self._params(learner)
        per_iteration = []
        for _ in range(n):
            actor, trajectory, k_learn = self._call("rollout", actor, fixed)
            if self.lagged:  # independent of the rollout just dispatched: both run at once
                collected = Pending(trajectory, k_learn, learner.iteration)
                learner, metrics = self._call("learner", learner, pending)
                with self.timings.scope("transfer"):
                    pending = jax.device_put(collected, self.learner_device)
            else:
                with self.timings.scope("transfer"):
                    moved = jax.device_put((trajectory, k_learn), self.learner_device)
                learner, metrics = self._call("learner", learner, *moved)
            fixed = self._params(learner)
            per_iteration.append(metrics)
        return self._merge(actor, learner, pending), per_iteration


class ActorLearner(BasePlacement):
    """The rollout on one device, the learn phase on another (``policy_lag`` 0 or 1)."""

    name = "actor_learner"
    summary = "rollout on one device, learner on another; sync or async (policy_lag 1)"
    supports = Supports(
        devices=Devices.PAIR,
        envs=frozenset({EnvKind.JAX}),
        policy_lags=(0, 1),
        why={"fusion": "it compiles the rollout and the learner apart, one per device"},
    )
    plans = {"fragment": ActorLearnerPlan}


ACTOR_LEARNER = register(ActorLearner())

"""The loop of placement ``host_env``: the env batch as two halves, each with its own host
simulators and key stream (see :mod:`jaxrl_fdg.policies.host_env`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import rng
from jaxrl_fdg.core.algorithm import Algorithm
from jaxrl_fdg.core.fragment import Fragment, published
from jaxrl_fdg.core.loop import Loop, RolloutCarry
from jaxrl_fdg.core.types import LoopState, Transition
from jaxrl_fdg.errors import ConfigError

HALVES = 2

# Fusion modes placement host_env accepts: ``step`` runs the double-buffered plan; the fused modes
# run HalvedLoop with the simulators called back from inside the program (no overlap).
FUSION_MODES = ("step", "fragment", "iteration", "scan")


class HalvedLoop(Loop):
    """A :class:`Loop` over two halves of the env batch, each with its own env state and keys.

    ``env`` is the fragment of one half (``num_envs / 2`` environments); the graph state's entry
    for it is a pair ``(half 0's state, half 1's state)``. The learner (and any replay) is built
    for the whole batch: trajectories are ``[T, num_envs]``, half 0's environments first.
    """

    def __init__(
        self, env: Fragment, algorithm: Algorithm, rollout_len: int, simulator: Any = None
    ):
        super().__init__(env, algorithm, rollout_len)
        self.simulator = simulator  # the host simulator behind ``env``, if it is one

    @classmethod
    def for_simulator(
        cls, simulator: Any, num_envs: int, algorithm: Algorithm, rollout_len: int
    ) -> HalvedLoop:
        """``num_envs`` environments of a host ``simulator``, as two halves."""
        from jaxrl_fdg.core.env_fragment import host_env_fragment

        if num_envs % HALVES or num_envs < HALVES:
            raise ConfigError(
                f"placement 'host_env' splits the envs into two halves: num_envs must be even "
                f"(valid: 2, 4, 6, ...), got {num_envs}"
            )
        env = host_env_fragment(simulator, num_envs // HALVES)
        return cls(env, algorithm, rollout_len, simulator)

    # -- state -------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        """As :meth:`Loop.init`, the env's key split once more: one per half."""
        key, *keys = rng.split(key, 1 + len(self.fragments))
        states = {}
        for frag, k in zip(self.fragments, keys, strict=True):
            if frag is self.env_frag:
                states[frag.name] = tuple(frag.init(k_half) for k_half in _split(k))
            else:
                states[frag.name] = frag.init(k)
        return LoopState(states, key, jnp.zeros((), jnp.int32))

    # -- the pure pieces ---------------------------------------------------------------------

    def begin(self, state: LoopState) -> tuple[LoopState, tuple[jax.Array, ...], jax.Array]:
        """As :meth:`Loop.begin`; the rollout key comes split into one key per half."""
        state, k_rollout, k_learn = super().begin(state)
        return state, _split(k_rollout), k_learn

    def half(self, carry: RolloutCarry, h: int) -> RolloutCarry:
        """Half ``h``'s view of a rollout carry: the shared states of the other step fragments
        (the actor's), its env state and key."""
        env = self.env_frag.name
        return RolloutCarry({**carry.states, env: carry.states[env][h]}, carry.key[h])

    def rollout_step(self, fixed: dict, carry: RolloutCarry, _: Any = None):
        """Half 0's step, then half 1's (the other step fragments' states, the actor's, passed
        from one to the next); the step's transition is the two halves' concatenated along the
        env axis."""
        env = self.env_frag.name
        states, envs, keys, transitions = dict(carry.states), [], [], []
        for h in range(HALVES):
            view, transition = self.step(fixed, self.half(carry._replace(states=states), h))
            states.update({name: s for name, s in view.states.items() if name != env})
            envs.append(view.states[env])
            keys.append(view.key)
            transitions.append(transition)
        states[env] = tuple(envs)
        return RolloutCarry(states, tuple(keys)), self.join(transitions)

    @staticmethod
    def join(halves: list[Transition]) -> Transition:
        """Transitions of the halves as one of the whole batch (half 0's environments first)."""
        return jax.tree.map(lambda *xs: jnp.concatenate(xs), *halves)

    def published_by(self, name: str, states: dict) -> dict[str, Any]:
        """As :meth:`Loop.published_by`; the env's edges are its halves' concatenated."""
        if name != self.env_frag.name:
            return super().published_by(name, states)
        halves = [published(self.env_frag, s) for s in states[name]]
        return jax.tree.map(lambda *xs: jnp.concatenate(xs), *halves)


def _split(key: jax.Array) -> tuple[jax.Array, ...]:
    return tuple(rng.split(key, HALVES))


def simulator_handles(loop: Loop, state: LoopState) -> list[int]:
    """The handles of the host simulators in ``state`` (one per half for a :class:`HalvedLoop`),
    for :func:`jaxrl_fdg.envs.host.close`."""
    env_state = state.fragments[loop.env_frag.name]
    halves = env_state if isinstance(loop, HalvedLoop) else (env_state,)
    return [int(np.asarray(half.env)) for half in halves]

"""Several seeds in one program: the loop's pure functions, vmapped over a leading seed axis.

``SeedLoop(loop, n)`` offers the :class:`~jaxrl_fdg.loop.Loop` interface the fusion plans use,
with every piece that computes ``jax.vmap``-ed, so each fusion mode runs ``n`` independent runs
in one program per boundary. Seed ``i`` starts from ``jax.random.key(seed + i)``, the key the run
with ``seed + i`` alone starts from, so each lane computes that run (to float32 rounding: batched
matrix products may round differently from unbatched ones). The restructuring helpers (which edge
goes where) are shape-agnostic and are used as they are.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl_fdg.loop import Loop


class SeedLoop:
    """A :class:`Loop` over ``num_seeds`` independent runs; state leaves gain a leading axis."""

    # Loop methods that compute: each is vmapped over the seed axis (every argument batched).
    _VMAPPED = ("begin", "act", "env_step", "stack", "learn", "rollout", "iteration")

    def __init__(self, loop: Loop, num_seeds: int):
        self.loop = loop
        self.num_seeds = num_seeds
        for name in self._VMAPPED:
            setattr(self, name, jax.vmap(getattr(loop, name)))

    def init(self, keys: jax.Array):
        """``keys``: one key per seed, ``[num_seeds]`` (see :func:`seed_keys`)."""
        return jax.vmap(self.loop.init)(keys)

    def __getattr__(self, name: str) -> Any:
        # Edge plumbing (fixed_edges, actor_inputs, transition, ...), graph, fragments, sizes.
        return getattr(self.loop, name)


def seed_keys(seed: int, num_seeds: int) -> jax.Array:
    """``[key(seed), key(seed + 1), ...]``: each lane starts where its single-seed run does."""
    return jax.vmap(jax.random.key)(jnp.arange(seed, seed + num_seeds, dtype=jnp.int32))

"""Several runs in one program: the loop's pure functions, vmapped over a leading run axis.

``SeedLoop(loop, n)`` offers the :class:`~jaxrl_fdg.loop.Loop` interface the fusion plans use,
with every piece that computes ``jax.vmap``-ed, so each fusion mode runs ``n`` independent runs
in one program per boundary. Run ``i`` starts from ``jax.random.key(seed_i)``, the key the run
with that seed alone starts from, so each lane computes that run (to float32 rounding: batched
matrix products may round differently from unbatched ones). The restructuring helpers (which edge
goes where) are shape-agnostic and are used as they are.

A hyperparameter sweep is the same vmap with one more input per lane: the swept values. Each lane
builds its loop, inside the vmap, from the algorithm's hyperparameters with the swept fields set
to that lane's (traced) values, so one program trains every combination. Only float
hyperparameters can be swept this way (see :func:`jaxrl_fdg.config.split_sweep`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.loop import Loop

# Builds a lane's loop from its swept hyperparameter values (traced scalars).
Builder = Callable[[Mapping[str, jax.Array]], Loop]


class SeedLoop:
    """A :class:`Loop` over ``num_seeds`` independent runs; state leaves gain a leading axis.

    Args:
      loop: the loop every lane runs (with ``sweep``: the loop of the first lane's values, used
        for the shape-agnostic edge plumbing only).
      num_seeds: the number of lanes (runs).
      sweep: per swept hyperparameter, its value in each lane (``[num_seeds]``).
      build: a lane's loop from its swept values; required with ``sweep``.
    """

    # Loop methods that compute: each is vmapped over the run axis (every argument batched).
    _VMAPPED = ("init", "begin", "act", "env_step", "stack", "learn", "rollout", "iteration")

    def __init__(
        self,
        loop: Loop,
        num_seeds: int,
        sweep: Mapping[str, Sequence[float]] | None = None,
        build: Builder | None = None,
    ):
        self.loop = loop
        self.num_seeds = num_seeds
        if sweep and build is None:
            raise ValueError("a sweep needs build: the loop of a lane's hyperparameter values")
        values = {k: np.asarray(v, np.float32) for k, v in (sweep or {}).items()}
        for name in self._VMAPPED:
            if values:
                setattr(self, name, _swept(build, name, values))
            else:
                setattr(self, name, jax.vmap(getattr(loop, name)))

    def __getattr__(self, name: str) -> Any:
        # Edge plumbing (fixed_edges, actor_inputs, transition, ...), graph, fragments, sizes.
        return getattr(self.loop, name)


def _swept(build: Builder, method: str, values: dict[str, np.ndarray]) -> Callable:
    """``method`` of each lane's own loop, vmapped over the lanes and their values."""

    def per_lane(lane_values, *args):
        return getattr(build(lane_values), method)(*args)

    batched = jax.vmap(per_lane)
    return lambda *args: batched({k: jnp.asarray(v) for k, v in values.items()}, *args)


def seed_keys(seed: int | Sequence[int], num_seeds: int | None = None) -> jax.Array:
    """``[key(seed), key(seed + 1), ...]`` (or the keys of the given seeds): each lane starts
    where its single-seed run does."""
    seeds = np.arange(seed, seed + num_seeds) if num_seeds is not None else np.asarray(seed)
    return jax.vmap(jax.random.key)(jnp.asarray(seeds, jnp.int32))

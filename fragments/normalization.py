"""Observation normalisation held by the learner, as Brax's trainers do it.

With ``normalize_observations`` an algorithm's network sees every observation standardised by the
running moments (mean and variance per observation feature) of all the observations its learner
has trained on: every environment's and, in a data-parallel run, every shard's, pooled into one
estimate. The moments are a collection of the network's variables beside ``params``
(:data:`COLLECTION`), so they travel with the parameters wherever those go: to the actor through
the ``params`` edge, into evaluation, into checkpoints. The optimizer never sees them
(:func:`trainable`); the learner folds each rollout's observations in (:meth:`ObservationMoments.
update`).

This differs from the env wrapper :class:`~jaxrl_fdg.envs.NormalizeObservation`, whose moments
live in each environment's state and are updated at every step of that environment alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs.observation_wrappers import standardize, update_running_moments

# The variables collection holding the moments, beside flax's ``params``.
COLLECTION = "observation_moments"


class Moments(NamedTuple):
    mean: jax.Array  # float32, one observation's shape
    var: jax.Array  # float32, one observation's shape (population variance)
    count: jax.Array  # float32 scalar: observations folded in + the initial pseudo-count


class ObservationMoments:
    """Running moments of observations of ``shape``, and the standardisation they define:
    ``clip((x - mean) / sqrt(var + epsilon), -clip, clip)``.

    They start at mean 0, variance 1 with pseudo-count ``count_epsilon`` (the env wrapper's
    defaults, gymnasium's ``RunningMeanStd``), so the first rollout all but replaces them."""

    def __init__(
        self,
        shape: tuple[int, ...],
        clip: float = 10.0,
        epsilon: float = 1e-8,
        count_epsilon: float = 1e-4,
    ):
        self.shape = tuple(shape)
        self.clip = clip
        self.epsilon = epsilon
        self.count_epsilon = count_epsilon

    def init(self) -> Moments:
        return Moments(
            jnp.zeros(self.shape, jnp.float32),
            jnp.ones(self.shape, jnp.float32),
            jnp.float32(self.count_epsilon),
        )

    def standardize(self, moments: Moments, observation: jax.Array) -> jax.Array:
        """``observation`` (any leading batch axes) standardised by ``moments``."""
        x = jnp.asarray(observation, jnp.float32)
        return standardize(x, moments.mean, moments.var, self.epsilon, self.clip)

    def update(
        self, moments: Moments, observations: jax.Array, pool: Callable[[Any], Any]
    ) -> Moments:
        """``moments`` with ``observations`` (any leading batch axes) folded in.

        ``pool`` is the mean over the learner's copies (``AlgorithmContext.pool``): the identity
        on one device, a mean over shards in a data-parallel run. The batch's mean is pooled
        first, then its variance about that pooled mean, so every copy folds in the moments of
        all copies' observations, exactly (every shard holds as many). Each copy counts its own
        observations: only the ratio of a batch's count to the total weighs, and it is the same
        whichever count both use (up to the pseudo-count)."""
        x = jnp.asarray(observations, jnp.float32).reshape(-1, *self.shape)
        mean = pool(x.mean(axis=0))
        var = pool(jnp.square(x - mean).mean(axis=0))
        return Moments(*update_running_moments(*moments, mean, var, jnp.float32(x.shape[0])))


def trainable(variables: Any) -> Any:
    """The part of a network's ``variables`` the optimizer trains: ``{"params": ...}``, without
    the moments (which the learner updates itself). For variables without moments it is
    ``variables`` as they are."""
    return {"params": variables["params"]}


def with_trainable(variables: Any, params: Any) -> Any:
    """``variables`` with their trained part replaced by ``params`` (``{"params": ...}``)."""
    return {**variables, **params}

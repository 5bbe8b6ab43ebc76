"""Observation normalisation held by the learner, as Brax's trainers do it.

With ``normalize_observations`` an algorithm's network sees every observation standardised by the
running moments (mean and variance per observation feature) of all the observations its learner
has trained on: every environment's and, in a data-parallel run, every shard's, pooled into one
estimate. The moments are a collection of the network's variables beside ``params``
(:data:`COLLECTION`), so they travel with the parameters wherever those go: to the actor through
the ``params`` edge, into evaluation, into checkpoints. The optimizer never sees them
(:func:`trainable`); the learner folds each rollout's observations in (:meth:`ObservationMoments.
update`).

An off-policy learner trains on replayed batches, not on the rollout it folds in: there a
fragment of its own folds each rollout's observations in and publishes the moments, and the
learner standardises every batch by them (:func:`normalized_observations`, as Brax's SAC does).

This differs from the env wrapper :class:`~jaxrl_fdg.envs.NormalizeObservation`, whose moments
live in each environment's state and are updated at every step of that environment alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.core.fragment import Fragment, Role, fragment
from jaxrl_fdg.core.names import BATCH, OBSERVATION_MOMENTS, TRAJECTORY
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.observation_wrappers import standardize, update_running_moments

# The variables collection holding the moments, beside flax's ``params``.
COLLECTION = "observation_moments"


class Moments(NamedTuple):
    mean: Any  # float32, one observation's shape (a pytree of them for a structured one)
    var: Any  # float32, one observation's shape (population variance), or a pytree of them
    count: jax.Array  # float32 scalar: observations folded in + the initial pseudo-count


class ObservationMoments:
    """Running moments of observations of ``shape``, and the standardisation they define:
    ``clip((x - mean) / sqrt(var + epsilon), -clip, clip)``.

    ``shape`` is one observation's shape, or an observation space: a structured one
    (:class:`~jaxrl_fdg.envs.spaces.Dict`, :class:`~jaxrl_fdg.envs.spaces.Tuple`) keeps the
    moments of each leaf apart, in pytrees of the observation's structure.

    They start at mean 0, variance 1 with pseudo-count ``count_epsilon`` (the env wrapper's
    defaults, gymnasium's ``RunningMeanStd``), so the first rollout all but replaces them."""

    def __init__(
        self,
        shape: tuple[int, ...],
        clip: float = 10.0,
        epsilon: float = 1e-8,
        count_epsilon: float = 1e-4,
    ):
        if isinstance(shape, spaces.Space):  # spaces are named tuples: tell them apart first
            self.shape = tuple(getattr(shape, "shape", ()))
            self.structure: Any = spaces.structure(shape)
        else:
            self.shape = tuple(shape)
            self.structure = jax.ShapeDtypeStruct(self.shape, jnp.float32)
        self.clip = clip
        self.epsilon = epsilon
        self.count_epsilon = count_epsilon

    def init(self) -> Moments:
        return Moments(
            jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), self.structure),
            jax.tree.map(lambda s: jnp.ones(s.shape, jnp.float32), self.structure),
            jnp.float32(self.count_epsilon),
        )

    def standardize(self, moments: Moments, observation: Any) -> Any:
        """``observation`` (any leading batch axes) standardised by ``moments``, leaf by leaf."""

        def leaf(x, mean, var):
            x = jnp.asarray(x, jnp.float32)
            return standardize(x, mean, var, self.epsilon, self.clip)

        return jax.tree.map(leaf, observation, moments.mean, moments.var)

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

        def leaf(s, x, old_mean, old_var):
            x = jnp.asarray(x, jnp.float32).reshape(-1, *s.shape)
            mean = pool(x.mean(axis=0))
            var = pool(jnp.square(x - mean).mean(axis=0))
            count = jnp.float32(x.shape[0])
            return Moments(
                *update_running_moments(old_mean, old_var, moments.count, mean, var, count)
            )

        # One Moments per leaf, the same count in each; then one Moments of pytrees.
        folded = jax.tree.map(leaf, self.structure, observations, moments.mean, moments.var)
        per_leaf = jax.tree.leaves(folded, is_leaf=lambda t: isinstance(t, Moments))
        treedef = jax.tree.structure(self.structure)
        return Moments(
            treedef.unflatten([m.mean for m in per_leaf]),
            treedef.unflatten([m.var for m in per_leaf]),
            per_leaf[0].count,
        )


def trainable(variables: Any) -> Any:
    """The part of a network's ``variables`` the optimizer trains: ``{"params": ...}``, without
    the moments (which the learner updates itself). For variables without moments it is
    ``variables`` as they are."""
    return {"params": variables["params"]}


def with_trainable(variables: Any, params: Any) -> Any:
    """``variables`` with their trained part replaced by ``params`` (``{"params": ...}``)."""
    return {**variables, **params}


# -- off-policy learners ---------------------------------------------------------------------


class Normalized(NamedTuple):
    """An off-policy learner's state with the observation moments its last update used."""

    learner: Any
    moments: Moments


def normalized_observations(
    ctx: AlgorithmContext,
    moments: ObservationMoments,
    init: Any,
    learn: Any,
    params: Any,
) -> tuple[Fragment, Any, Any, Any]:
    """Observation normalisation for an off-policy learner, as Brax's SAC does it.

    Every observation the actors collect is folded, once, into running moments (mean and
    variance per feature, pooled over a data-parallel run's shards) by a fragment of the learn
    phase, which publishes them on the edge ``observation_moments`` after each rollout, before
    the updates. Each update standardises its batch's observations and next observations by them,
    so the wrapped ``learn`` sees standardised observations and needs no change. The learner
    keeps the moments its last update used beside its own state and publishes them with the
    actor's parameters, ``{"params": params(state), "observation_moments": moments}``, so the
    exploring actor, evaluation and checkpoints act on what the networks were trained on
    (:func:`standardized` unpacks them).

    Returns ``(moments fragment, init, learn, params)``: the wrapped learner functions.
    """

    def fold_in(state, inputs, key):
        del key
        return moments.update(state, inputs[TRAJECTORY].observation, ctx.pool), {}

    statistics = fragment(
        OBSERVATION_MOMENTS,
        Role.TRANSFORM,
        fold_in,
        init=lambda key: moments.init(),
        inputs=(TRAJECTORY,),
        publish=lambda state: {OBSERVATION_MOMENTS: state},
        published=(OBSERVATION_MOMENTS,),
    )

    def init_normalized(key):
        return Normalized(init(key), moments.init())

    def learn_normalized(state: Normalized, inputs, key):
        current = inputs[OBSERVATION_MOMENTS]
        sample = inputs[BATCH]
        exp = sample.transitions
        exp = exp._replace(
            observation=moments.standardize(current, exp.observation),
            next_observation=moments.standardize(current, exp.next_observation),
        )
        batch = sample._replace(transitions=exp)
        learner, outputs = learn(state.learner, {**inputs, BATCH: batch}, key)
        return Normalized(learner, current), outputs

    def params_normalized(state: Normalized):
        return {"params": params(state.learner), COLLECTION: state.moments}

    return statistics, init_normalized, learn_normalized, params_normalized


def standardized(
    moments: ObservationMoments | None, params: Any, observation: jax.Array
) -> tuple[Any, jax.Array]:
    """``(network parameters, observations as the networks see them)`` from the parameters an
    off-policy learner publishes: as they are without ``moments``; with them, unpacked from
    :func:`normalized_observations`' ``{"params", "observation_moments"}``, the observations
    standardised by the moments published there."""
    if moments is None:
        return params, observation
    current = params[COLLECTION]
    return params["params"], moments.standardize(current, observation)

"""Placement ``data_parallel``: the environments split into shards, one per device, gradients
averaged across them.

Data parallelism is a wrapper around the unchanged :class:`~jaxrl_fdg.core.loop.Loop`: each shard
runs the loop's pure functions on its own ``num_envs / shards`` environments, its own key stream,
env state and replay, and a copy of the learner. The only collectives are injected here: the
learner's gradients are averaged across shards by the optimizer the context hands every learner
(``AlgorithmContext.optimizer``, whose gradients pass through a ``pmean`` over the shard axis),
so every copy of the learner applies the same update and stays identical; metrics are averaged
(episode counts and sums added). No fragment names an axis.

Three backends run the same per-shard code:

* ``shard_map`` (default): one shard per device of a 1-D device mesh (``jax.shard_map``);
* ``pmap``: the same with ``jax.pmap``;
* ``vmap``: all shards on one device, vmapped with a named axis. With ``N`` shards of ``E``
  environments it computes what ``N`` devices with ``E`` environments each compute: the
  reference that multi-device runs are tested against, runnable anywhere.

Under ``shard_map`` the mesh may span processes (``jaxrl_fdg.policies.distributed``). What the host
reads back (the iteration counter and the reduced metrics) is therefore kept whole on every device,
so that every process can read it without a collective of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.core.fragment import Role
from jaxrl_fdg.core.names import EPISODE_LENGTH_SUM, EPISODE_RETURN_SUM, EPISODES
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies.base import (
    BasePlacement,
    Devices,
    EnvKind,
    LoopSource,
    Request,
    Supports,
    env_fragment,
    register,
    visible,
)

BACKENDS = ("shard_map", "pmap", "vmap")
AXIS = "shards"
# How ``shard_map`` lays out what a shard computes: per shard (split along the leading shard axis),
# or the same on every shard and kept whole on every device (readable by every process when the
# mesh spans several): the iteration counter and the metrics, which the host reads back.
_SHARDED = PartitionSpec(AXIS)
_REPLICATED = PartitionSpec()
_STATE = LoopState(
    fragments=_SHARDED, key=_SHARDED, iteration=_REPLICATED, pending=_SHARDED, population=_SHARDED
)
_SUMMED = (EPISODES, EPISODE_RETURN_SUM, EPISODE_LENGTH_SUM)


def mean_over_shards(tree: Any) -> Any:
    """The gradient hook of a data-parallel learner: the mean over the shard axis, as one
    all-reduce of the flattened tree."""
    flat, unflatten = jax.flatten_util.ravel_pytree(tree)
    return unflatten(jax.lax.pmean(flat, AXIS))


def check_devices(shards: int, backend: str) -> list[jax.Device]:
    """The devices a data-parallel run of ``shards`` uses (all on one device for ``vmap``)."""
    return visible(shards, backend)


def sharded(loop: Loop, shards: int, backend: str = "shard_map") -> Loop:
    """``loop`` with its environments split into ``shards`` data-parallel shards.

    State leaves gain a leading shard axis; metrics come back reduced over shards (one value per
    iteration, as from a single-device loop). The pieces that only move edges about (the fixed
    edges, the rollout carry) are shape-agnostic and kept as they are.
    """
    pieces = _Shards(loop, shards, backend)
    calls = tuple(pieces.wrap(call, _SHARDED) for call in loop.calls)
    pending = None
    if loop.learn_pending is not None:
        pending = pieces.learned(loop.learn_pending)
    return loop._replace(
        init=pieces.init,
        begin=pieces.wrap(loop.begin, (_STATE, _SHARDED, _SHARDED)),
        calls=calls,
        host_calls=calls,
        stack=pieces.wrap(loop.stack, _SHARDED),
        rollout=pieces.rollout,
        learn=pieces.learned(loop.learn),
        iteration=pieces.learned(loop.iteration),
        learn_pending=pending,
    )


class _Shards:
    """The sharded pieces of one loop (see :func:`sharded`)."""

    def __init__(self, loop: Loop, shards: int, backend: str = "shard_map"):
        if backend not in BACKENDS:
            raise ConfigError(f"unknown data-parallel backend {backend!r} (valid: {BACKENDS})")
        self.loop, self.num_shards, self.backend = loop, shards, backend
        self._devices = check_devices(shards, backend)
        self.wrap = self._wrapper()
        self._init = self.wrap(self._init_shard, _STATE)
        self._rollout = self.wrap(loop.rollout, (_STATE, _SHARDED, _SHARDED))

    def _wrapper(self) -> Callable[[Callable, Any], Callable]:
        """``wrap(f, out_specs)``: ``f`` run on every shard. ``out_specs`` (``shard_map`` only)
        says which outputs are per shard and which are the same on every shard."""
        if self.backend == "vmap":
            return lambda f, _: jax.vmap(f, axis_name=AXIS)
        if self.backend == "pmap":
            return lambda f, _: jax.pmap(f, axis_name=AXIS, devices=self._devices)
        mesh = Mesh(np.array(self._devices), (AXIS,))
        shards = self.num_shards

        def wrap(f: Callable, out_specs: Any) -> Callable:
            def per_shard(*args):
                # Each device sees its block [1, ...] of a per-shard leaf and the whole [shards,
                # ...] of a replicated one: row 0 is its own value either way.
                out = f(*jax.tree.map(lambda x: x[0], args))
                return _map_specs(
                    lambda spec, x: (
                        x[None] if spec == _SHARDED else jnp.broadcast_to(x, (shards, *x.shape))
                    ),
                    out_specs,
                    out,
                )

            def call(*args):
                in_specs = jax.tree.map(
                    lambda node: _STATE if isinstance(node, LoopState) else _SHARDED,
                    args,
                    is_leaf=lambda node: isinstance(node, LoopState),
                )
                # check_vma=False: the loop's scans carry values that become shard-varying
                # (metrics summed in a carry), which the varying-axis type check would reject.
                mapped = jax.shard_map(
                    per_shard, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False
                )
                return mapped(*args)

            return call

        return wrap

    # -- the computing pieces, on every shard ------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        """Shard ``d`` starts from ``fold_in(key, d)``; the learner copies from shard 0's."""
        return self._init(
            jax.vmap(lambda d: jax.random.fold_in(key, d))(jnp.arange(self.num_shards))
        )

    def rollout(self, state: LoopState, fixed: dict | None = None):
        return self._rollout(state) if fixed is None else self._rollout(state, fixed)

    def learned(self, piece: Callable) -> Callable:
        """A piece that returns ``(state, metrics)``, on every shard, its metrics reduced over
        the shards (kept once)."""
        wrapped = self.wrap(lambda *args: self._reduced(piece(*args)), (_STATE, _REPLICATED))

        def run(*args):
            state, metrics = wrapped(*args)
            return state, _first(metrics)

        return run

    # -- per shard ---------------------------------------------------------------------------

    def _init_shard(self, key: jax.Array):
        """Every learner starts from shard 0's initial state, so that all copies of it agree."""
        state = self.loop.init(key)
        learners = {
            f.name: jax.tree.map(lambda x: jax.lax.all_gather(x, AXIS)[0], state.fragments[f.name])
            for f in self.loop.info.graph.fragments
            if f.role is Role.LEARNER
        }
        return state._replace(fragments={**state.fragments, **learners})

    @staticmethod
    def _reduced(result):
        state, metrics = result
        reduce = {k: jax.lax.psum if k in _SUMMED else jax.lax.pmean for k in metrics}
        return state, {k: reduce[k](v, AXIS) for k, v in metrics.items()}


def _map_specs(f: Callable[[PartitionSpec, Any], Any], specs: Any, tree: Any) -> Any:
    """``f(spec, leaf)`` over every leaf of ``tree``, ``specs`` being a prefix of it."""
    return jax.tree.map(
        lambda spec, subtree: jax.tree.map(lambda x: f(spec, x), subtree),
        specs,
        tree,
        is_leaf=lambda node: isinstance(node, PartitionSpec),
    )


def _first(metrics: dict) -> dict:
    """Metrics come back once per shard, identical after the reduction: keep one."""
    return jax.tree.map(lambda x: x[0], metrics)


def first_shard(tree: Any) -> Any:
    """Shard 0's part of a sharded state (the learner is the same on every shard)."""
    return jax.tree.map(lambda x: x[0], tree)


class DataParallel(BasePlacement):
    """``num_envs`` split into ``devices`` shards (``dp_backend``: shard_map, pmap or vmap)."""

    name = "data_parallel"
    summary = "envs and batch sharded across devices, gradients all-reduced"
    supports = Supports(
        devices=Devices.SHARDS, envs=frozenset({EnvKind.JAX}), process_backends=("shard_map",)
    )

    def context(self, request: Request, context: AlgorithmContext) -> AlgorithmContext:
        """Each shard's context: its share of the environments, gradients averaged."""
        return dataclasses.replace(
            context,
            num_envs=request.num_envs // request.devices,
            combine_gradients=mean_over_shards,
        )

    def wrap(self, source: LoopSource) -> Loop:
        request = source.request
        return sharded(source.build(env_fragment(source), {}), request.devices, request.backend)

    def evaluation(self, run: Callable) -> Callable:
        return lambda states, key: run(first_shard(states), key)  # every shard holds the learner


DATA_PARALLEL = register(DataParallel())


def ShardedLoop(loop: Loop, shards: int, backend: str = "shard_map") -> Loop:  # noqa: N802
    """Deprecated: :func:`sharded`."""
    import warnings

    warnings.warn(
        "ShardedLoop is deprecated; use jaxrl_fdg.policies.data_parallel.sharded",
        DeprecationWarning,
        stacklevel=2,
    )
    return sharded(loop, shards, backend)

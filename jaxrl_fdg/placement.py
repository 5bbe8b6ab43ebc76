"""Placement: where the loop's fragments run. ``single`` is one device; ``data_parallel`` splits
the environments into shards, one per device, and averages gradients across them.

Data parallelism is a wrapper around the unchanged :class:`~jaxrl_fdg.loop.Loop`: each shard runs
the loop's pure functions on its own ``num_envs / shards`` environments, its own key stream, env
state and replay, and a copy of the learner. The only collectives are injected here: the
learner's gradients are averaged across shards through ``AlgorithmContext.mean_gradients`` (a
``pmean`` over the shard axis), so every copy of the learner applies the same update and stays
identical; metrics are averaged (episode counts and sums added). No fragment names an axis.

Three backends run the same per-shard code:

* ``shard_map`` (default): one shard per device of a 1-D device mesh (``jax.shard_map``);
* ``pmap``: the same with ``jax.pmap``;
* ``vmap``: all shards on one device, vmapped with a named axis. With ``N`` shards of ``E``
  environments it computes what ``N`` devices with ``E`` environments each compute: the
  reference that multi-device runs are tested against, runnable anywhere.

Under ``shard_map`` the mesh may span processes (``jaxrl_fdg.distributed``). What the host reads
back (the iteration counter and the reduced metrics) is therefore kept whole on every device, so
that every process can read it without a collective of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.loop import Loop, LoopState

PLACEMENTS = ("single", "data_parallel", "actor_learner", "host_env")
BACKENDS = ("shard_map", "pmap", "vmap")
AXIS = "shards"
# How ``shard_map`` lays out what a shard computes: per shard (split along the leading shard axis),
# or the same on every shard and kept whole on every device (readable by every process when the
# mesh spans several): the iteration counter and the metrics, which the host reads back.
_SHARDED = PartitionSpec(AXIS)
_REPLICATED = PartitionSpec()
_STATE = LoopState(fragments=_SHARDED, key=_SHARDED, iteration=_REPLICATED, pending=_SHARDED)
_SUMMED = ("episodes", "episode_return_sum", "episode_length_sum")


def mean_over_shards(tree: Any) -> Any:
    """The gradient hook of a data-parallel learner: the mean over the shard axis, as one
    all-reduce of the flattened tree."""
    flat, unflatten = jax.flatten_util.ravel_pytree(tree)
    return unflatten(jax.lax.pmean(flat, AXIS))


def check_devices(shards: int, backend: str) -> list[jax.Device]:
    """The devices a data-parallel run of ``shards`` uses (all on one device for ``vmap``)."""
    devices = jax.devices()
    if backend != "vmap" and shards > len(devices):
        raise ConfigError(
            f"devices = {shards} but this process sees {len(devices)} "
            f"{devices[0].platform} device(s) (valid: 1..{len(devices)}); on a CPU, "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={shards} makes {shards}"
        )
    return devices[:shards]


class ShardedLoop:
    """A :class:`Loop` whose environments are split into ``shards`` data-parallel shards.

    State leaves gain a leading shard axis; metrics come back reduced over shards (one value per
    iteration, as from a single-device loop).
    """

    def __init__(self, loop: Loop, shards: int, backend: str = "shard_map"):
        if backend not in BACKENDS:
            raise ConfigError(f"unknown data-parallel backend {backend!r} (valid: {BACKENDS})")
        self.loop, self.num_shards, self.backend = loop, shards, backend
        self._devices = check_devices(shards, backend)
        wrap = self._wrapper()
        for name in ("act", "env_step", "stack"):
            setattr(self, name, wrap(getattr(loop, name), _SHARDED))
        for name in ("begin", "rollout"):  # (state, ..., key)
            setattr(self, name, wrap(getattr(loop, name), (_STATE, _SHARDED, _SHARDED)))
        self._init = wrap(self._init_shard, _STATE)
        learned = (_STATE, _REPLICATED)  # (state, metrics reduced over shards)
        self._learn = wrap(lambda *args: self._reduced(loop.learn(*args)), learned)
        self._iteration = wrap(lambda state: self._reduced(loop.iteration(state)), learned)

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

    # -- the Loop interface the fusion plans use ---------------------------------------------

    def init(self, key: jax.Array):
        """Shard ``d`` starts from ``fold_in(key, d)``; the learner copies from shard 0's."""
        return self._init(
            jax.vmap(lambda d: jax.random.fold_in(key, d))(jnp.arange(self.num_shards))
        )

    def learn(self, state, trajectory, key):
        state, metrics = self._learn(state, trajectory, key)
        return state, _first(metrics)

    def iteration(self, state, _: Any = None):
        state, metrics = self._iteration(state)
        return state, _first(metrics)

    def __getattr__(self, name: str) -> Any:
        # Edge plumbing (fixed_edges, actor_inputs, transition, ...), graph, fragments, sizes.
        return getattr(self.loop, name)

    # -- per shard ---------------------------------------------------------------------------

    def _init_shard(self, key: jax.Array):
        state = self.loop.init(key)
        name = self.loop.learner.name
        learner = jax.tree.map(lambda x: jax.lax.all_gather(x, AXIS)[0], state.fragments[name])
        return state._replace(fragments={**state.fragments, name: learner})

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

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
from typing import TYPE_CHECKING, Any

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import AlgorithmContext, AlgorithmSpec
from jaxrl_fdg.core.fragment import Role
from jaxrl_fdg.core.protocol import LoopLike, LoopWrapper
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies import distributed
from jaxrl_fdg.policies.base import (
    BasePlacement,
    LoopBuilder,
    env_fragment,
    refuse_host_env,
    register,
)

if TYPE_CHECKING:  # types only: config and envs sit above policies
    from jaxrl_fdg.config import Resolved, TrainConfig
    from jaxrl_fdg.envs import Environment
    from jaxrl_fdg.envs.host import HostSimulator

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


class ShardedLoop(LoopWrapper):
    """A loop whose environments are split into ``shards`` data-parallel shards.

    State leaves gain a leading shard axis; metrics come back reduced over shards (one value per
    iteration, as from a single-device loop).
    """

    def __init__(self, loop: LoopLike, shards: int, backend: str = "shard_map"):
        super().__init__(loop)
        if backend not in BACKENDS:
            raise ConfigError(f"unknown data-parallel backend {backend!r} (valid: {BACKENDS})")
        self.num_shards, self.backend = shards, backend
        self._devices = check_devices(shards, backend)
        self._wrap = self._wrapper()
        learned = (_STATE, _REPLICATED)  # (state, metrics reduced over shards)
        self._init = self._wrap(self._init_shard, _STATE)
        self._begin = self._wrap(loop.begin, (_STATE, _SHARDED, _SHARDED))
        self._rollout = self._wrap(loop.rollout, (_STATE, _SHARDED, _SHARDED))
        self._stack = self._wrap(loop.stack, _SHARDED)
        self._learn = self._wrap(lambda *args: self._reduced(loop.learn(*args)), learned)
        self._iteration = self._wrap(lambda state: self._reduced(loop.iteration(state)), learned)

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

    def begin(self, state: LoopState):
        return self._begin(state)

    def rollout(self, state: LoopState, fixed: dict | None = None):
        return self._rollout(state) if fixed is None else self._rollout(state, fixed)

    def step_fn(self, index: int) -> Callable:
        return self._wrap(self.inner.step_fn(index), _SHARDED)

    def stack(self, transitions):
        return self._stack(transitions)

    def learn(self, state, trajectory, key):
        state, metrics = self._learn(state, trajectory, key)
        return state, _first(metrics)

    def iteration(self, state, _: Any = None):
        state, metrics = self._iteration(state)
        return state, _first(metrics)

    # -- per shard ---------------------------------------------------------------------------

    def _init_shard(self, key: jax.Array):
        """Every learner starts from shard 0's initial state, so that all copies of it agree."""
        state = self.inner.init(key)
        learners = {
            f.name: jax.tree.map(lambda x: jax.lax.all_gather(x, AXIS)[0], state.fragments[f.name])
            for f in self.fragments
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

    def check(
        self, config: TrainConfig, env: Environment | HostSimulator, spec: AlgorithmSpec
    ) -> None:
        super().check(config, env, spec)
        refuse_host_env(self, config, env)
        validate.divides("devices", config.devices, "num_envs", config.num_envs)
        if config.policy_lag:
            raise ConfigError(
                f"policy_lag = {config.policy_lag} needs placement 'single' or 'actor_learner' "
                f"(got {self.name!r})"
            )
        distributed.check_mesh(config)
        check_devices(config.devices, config.dp_backend)

    def context(self, config: TrainConfig, context: AlgorithmContext) -> AlgorithmContext:
        """Each shard's context: its share of the environments, gradients averaged."""
        return dataclasses.replace(
            context,
            num_envs=config.num_envs // config.devices,
            combine_gradients=mean_over_shards,
        )

    def wrap(self, resolved: Resolved, build: LoopBuilder) -> LoopLike:
        config = resolved.config
        return ShardedLoop(build(env_fragment(resolved), {}), config.devices, config.dp_backend)

    def evaluation(self, run: Callable) -> Callable:
        return lambda states, key: run(first_shard(states), key)  # every shard holds the learner

    def auto_devices(self, config: TrainConfig) -> int | None:
        if config.devices > 1:
            return config.devices
        visible = len(jax.devices())  # every device, or none: one shard would be ``single``
        return visible if visible > 1 else None


DATA_PARALLEL = register(DataParallel())

"""XLand-MiniGrid behind this package's :class:`Environment` API: ``xminigrid/<id>``.

XLand-MiniGrid (Nikulin et al. 2024) steps dm_env-style time steps that hold the state
(``env.reset(params, key) -> timestep``, ``env.step(params, timestep, action) -> timestep``),
so :class:`XMiniGridEnv` is :class:`~jaxrl_fdg.envs.timestep_adapter.TimeStepAdapter` with the
time step as the state, plus XLand's specifics:

* **Ids.** ``xminigrid.registered_environments()``: the XLand meta-RL grids
  (``XLand-MiniGrid-R1-9x9`` ... ``R9-25x25``) and MiniGrid's tasks ported to JAX
  (``MiniGrid-Empty-5x5``, ``MiniGrid-DoorKey-8x8``, ...). Six actions.
* **Time limit.** XLand ends an episode at ``params.max_steps`` (a LAST with discount 1) and
  when the goal is reached (a LAST with discount 0, and a reward of ``1 - 0.9 * step /
  max_steps``). The adapter's params *are* XLand's params, so the base class's
  ``params.max_steps`` is XLand's ``max_steps``, one number: the goal is ``terminated``, the
  limit ``truncated``. XLand's params are static fields (its own design: changing one
  recompiles), all but ``ruleset``, which is an array pytree: a ``jax.vmap`` over params with
  different rulesets trains on several tasks at once.
* **Observations.** An egocentric ``[view, view, 2]`` uint8 image (tile id, colour id; the
  view is 5×5 in XLand grids, 7×7 in MiniGrid's). With ``direction=True`` (XLand's
  ``DirectionObservationWrapper``) it is a dict ``{"img": ..., "direction": float32 [4]}``
  (one-hot), declared as a :class:`~jaxrl_fdg.envs.spaces.Dict`; ``rules_and_goals=True``
  (``RulesAndGoalsObservationWrapper``) adds the task's ``goal_encoding`` and
  ``rule_encoding``, which meta-RL agents read.
* **Benchmarks.** ``benchmark=<name>`` (``trivial-21k``, ``small-1m``, ... from
  ``xminigrid.registered_benchmarks()``, downloaded once to ``~/.xland_minigrid`` or
  ``$XLAND_MINIGRID_DATA``) or ``benchmark=<path>`` (a file saved by XLand's
  ``save_bz2_pickle``), with ``ruleset_index=<i>`` (default 0), puts that ruleset into the
  params of an ``XLand-MiniGrid-*`` id; :func:`with_ruleset` builds such params for many
  indices (a batch to ``vmap`` over).
* **Rendering.** XLand's own renderer (``xminigrid.rendering.rgb_render.render``, numpy, which
  does not trace): the whole grid, :data:`TILE_PIXELS` pixels a tile, the agent's view
  highlighted, drawn on the host from each played state (:attr:`render_on_host`).
* **Keys.** The base class's ``reset(key)`` is XLand's ``reset(params, key)``; XLand's step
  takes no key (its randomness is in its state), so the step keys go unused.

Any other keyword replaces a field of XLand's params (``view_size=7``, ``max_steps=100``,
``height``/``width`` of the MiniGrid tasks), as ``xminigrid.make(id, **kwargs)`` does.
xminigrid is imported only when an environment is built.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.spaces import Box, Dict, Discrete, Space
from jaxrl_fdg.envs.spec_spaces import unbounded_box
from jaxrl_fdg.envs.timestep_adapter import Reading, TimeStepAdapter, dm_reading


@struct.dataclass
class XMiniGridParams:
    """Parameters of an XLand-MiniGrid environment: XLand's own.

    Attributes:
      xland: XLand's ``EnvParams`` (``XLandEnvParams`` for the XLand grids, with a
        ``ruleset``).
    """

    xland: Any

    @property
    def max_steps(self) -> Any:
        """The time limit the base class applies: XLand's ``max_steps``."""
        return self.xland.max_steps


TILE_PIXELS = 16
"""Pixels a side of one tile in :meth:`XMiniGridEnv.render` (XLand draws 32 by default)."""


class XMiniGridEnv(TimeStepAdapter):
    """An XLand-MiniGrid environment by id (the module docstring says what maps to what).

    Args:
      env_id: one of ``xminigrid.registered_environments()``.
      direction: observe ``{"img", "direction"}`` (XLand's ``DirectionObservationWrapper``).
      rules_and_goals: observe the task's encodings too (``RulesAndGoalsObservationWrapper``).
      **overrides: fields of XLand's params, given to ``xminigrid.make``.

    Raises:
      UnknownEnvironmentError: an id XLand-MiniGrid does not register (close matches named).
      ValueError: an override that is no field of XLand's params (the message lists them).
    """

    def __init__(
        self, env_id: str, direction: bool = False, rules_and_goals: bool = False, **overrides
    ):
        import xminigrid
        from xminigrid import wrappers

        if env_id not in xminigrid.registered_environments():
            raise UnknownEnvironmentError(
                unknown("XLand-MiniGrid environment", env_id, xminigrid.registered_environments())
            )
        try:
            env, params = xminigrid.make(env_id, **overrides)
        except TypeError:
            env, params = xminigrid.make(env_id)
            fields = sorted(params.__dataclass_fields__)
            bad = sorted(set(overrides) - set(fields))
            raise ValueError(
                f"unknown XLand-MiniGrid parameter(s) {bad} for {env_id!r}; valid: "
                f"{', '.join(fields)}"
            ) from None
        if direction:
            env = wrappers.DirectionObservationWrapper(env)
        if rules_and_goals:
            env = wrappers.RulesAndGoalsObservationWrapper(env)
        self._env = env
        self._default = XMiniGridParams(params)
        self.env_id = env_id
        super().__init__(f"xminigrid-{env_id}")

    render_on_host = True

    def render(self, state: Any, params: XMiniGridParams) -> np.ndarray:
        """XLand's picture of the state: the whole grid, the agent and its view highlighted,
        :data:`TILE_PIXELS` a tile (``uint8 [H * 16, W * 16, 3]``). Numpy on the host:
        ``state`` is one environment's, of numpy arrays."""
        from xminigrid.rendering.rgb_render import render as rgb_render

        xland = state.env.state  # the TimeStep's State
        grid = np.asarray(xland.grid)
        agent = jax.tree.map(np.asarray, xland.agent)
        image = rgb_render(grid, agent, params.xland.view_size, TILE_PIXELS)
        return np.asarray(image, np.uint8)

    @property
    def xland_env(self) -> Any:
        """The wrapped XLand-MiniGrid environment (with its observation wrappers)."""
        return self._env

    @property
    def default_params(self) -> XMiniGridParams:
        return self._default

    def _reset(self, key: jax.Array, params: XMiniGridParams) -> tuple[Any, Reading]:
        timestep = self._env.reset(params.xland, key)
        return timestep, dm_reading(timestep)

    def _step(self, key, state, action, params):
        del key  # XLand steps from the key in its state
        timestep = self._env.step(params.xland, state, action)
        return timestep, dm_reading(timestep)

    def _raw_action_space(self, params: XMiniGridParams) -> Space:
        return Discrete(int(self._env.num_actions(params.xland)))

    def _raw_observation_space(self, params: XMiniGridParams) -> Space:
        """The image's tile and colour ids bounded by XLand's counts, the direction one-hot in
        [0, 1], the encodings as wide as their dtype."""
        from xminigrid.core.constants import NUM_COLORS, NUM_TILES

        shapes = jax.eval_shape(
            lambda key: self._env.reset(params.xland, key).observation, jax.random.key(0)
        )

        def image(leaf: Any) -> Box:
            high = jnp.broadcast_to(
                jnp.asarray([NUM_TILES - 1, NUM_COLORS - 1], leaf.dtype), leaf.shape
            )
            return Box(jnp.zeros(leaf.shape, leaf.dtype), high, tuple(leaf.shape), leaf.dtype)

        if not isinstance(shapes, dict):
            return image(shapes)
        spaces = {}
        for name, leaf in shapes.items():
            if name == "img":
                spaces[name] = image(leaf)
            elif name == "direction":
                spaces[name] = Box(
                    jnp.asarray(0, leaf.dtype),
                    jnp.asarray(1, leaf.dtype),
                    tuple(leaf.shape),
                    leaf.dtype,
                )
            else:
                spaces[name] = unbounded_box(tuple(leaf.shape), leaf.dtype)
        return Dict(spaces)


def make_xminigrid(
    env_id: str,
    *,
    direction: bool = False,
    rules_and_goals: bool = False,
    benchmark: str | None = None,
    ruleset_index: int = 0,
    **overrides: Any,
) -> tuple[XMiniGridEnv, XMiniGridParams]:
    """``(environment, params)`` of XLand-MiniGrid ``env_id``; with ``benchmark``, the params
    hold its ruleset ``ruleset_index``.

    >>> env, params = make_xminigrid("MiniGrid-Empty-5x5", direction=True)
    >>> env, params = make_xminigrid("XLand-MiniGrid-R1-9x9", benchmark="trivial-21k",
    ...                              ruleset_index=3)

    Raises:
      ValueError: a benchmark for an id that takes no ruleset, an unknown benchmark, or an
        index out of its range.
      OSError: the benchmark is not on disk and cannot be downloaded.
    """
    env = XMiniGridEnv(env_id, direction, rules_and_goals, **overrides)
    params = env.default_params
    if benchmark is not None:
        if not hasattr(params.xland, "ruleset"):
            raise ValueError(
                f"benchmark={benchmark!r}: {env_id!r} takes no ruleset; benchmarks are for the "
                "XLand-MiniGrid-* ids"
            )
        params = with_ruleset(params, load_benchmark(benchmark), ruleset_index)
    elif ruleset_index != 0:
        raise ValueError("ruleset_index needs benchmark=<name or path>")
    return env, params


def load_benchmark(benchmark: str) -> Any:
    """XLand's ``Benchmark`` named ``benchmark`` (one of ``xminigrid.registered_benchmarks()``,
    downloaded if absent) or saved at the path ``benchmark``.

    Raises:
      ValueError: neither a benchmark's name nor a file (the message lists the names).
      OSError: a named benchmark that is absent and cannot be downloaded.
    """
    import xminigrid
    from xminigrid.benchmarks import load_benchmark_from_path

    names = xminigrid.registered_benchmarks()
    if benchmark in names:
        try:
            return xminigrid.load_benchmark(benchmark)
        except OSError as e:  # urllib's URLError is an OSError
            raise OSError(
                f"XLand-MiniGrid benchmark {benchmark!r} is not downloaded and cannot be: {e}"
            ) from None
    if os.path.isfile(benchmark):
        return load_benchmark_from_path(benchmark)
    raise ValueError(unknown("XLand-MiniGrid benchmark", benchmark, names, "a file, or one of"))


def with_ruleset(params: XMiniGridParams, benchmark: Any, index: Any) -> XMiniGridParams:
    """``params`` holding ruleset ``index`` of ``benchmark`` (an int, or an int array: then
    every leaf of the params' ruleset gains its leading axis, one task per entry, to
    ``jax.vmap`` over).

    Raises:
      ValueError: an index outside the benchmark (a concrete one; traced ones are not checked).
    """
    count = benchmark.num_rulesets()
    if isinstance(index, int) and not 0 <= index < count:
        raise ValueError(f"ruleset_index={index} is outside the benchmark's 0..{count - 1}")
    ruleset = (
        jax.vmap(benchmark.get_ruleset)(jnp.asarray(index))
        if jnp.ndim(index)
        else benchmark.get_ruleset(index)
    )
    return params.replace(xland=params.xland.replace(ruleset=ruleset))

"""MuJoCo Playground environments behind this package's :class:`Environment` API:
``playground/<name>`` (the DM Control suite on MJX, locomotion and manipulation tasks).

``PlaygroundEnv(name)`` loads ``mujoco_playground.registry.load(name)``; reset and step are the
environment's own ``reset(rng)`` and ``step(state, action)``, and nothing else. Playground's
training wrappers (episode length, auto-reset, action repeat, domain randomisation) are not
used: as for every environment here, the time limit and the auto-reset come from
:class:`~jaxrl_fdg.envs.base.Environment`, once.

* ``terminated`` is the environment's ``done`` of the step (DM Control tasks never end on their
  own; locomotion tasks end when the robot falls).
* ``truncated`` comes from the base class at ``params.max_steps``: the task's ``episode_length``
  (1000 for the DM Control suite) unless ``max_steps`` says otherwise.
* Actions are ``Box(-1, 1, (action_size,))``, passed on unchanged, Playground's convention.
* Observations: a flat array, ``Box(-inf, inf, (n,))``, or for a task whose observation is a
  dict of flat arrays (the locomotion and manipulation tasks' ``state`` beside
  ``privileged_state``) a :class:`~jaxrl_fdg.envs.spaces.Dict` of such boxes: an actor-critic
  reads one key each with ``--actor-observation state --critic-observation
  privileged_state`` (an asymmetric actor-critic, as Playground's own PPO trains them).
  Anything else (an image, a nested dict) is refused with a message.
* Physics: ``impl="jax"`` (MJX in JAX, compiled by XLA for any device) unless an ``impl``
  option says otherwise; Playground's own default, ``warp``, needs NVIDIA Warp. Other keywords
  replace fields of the task's config (``registry.get_default_config(name)``), e.g.
  ``ctrl_dt``. The config's ``action_repeat`` is the training wrapper's and is not applied here.

Playground is imported only when a task is built (the ``playground`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.brax_adapter import conform, step_mjx
from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.spaces import Box, Dict

PREFIX = "playground/"


@struct.dataclass
class PlaygroundParams:
    """The episode length, in environment steps (static: changing it recompiles)."""

    max_steps: int = struct.field(pytree_node=False, default=1000)


class PlaygroundEnvState(NamedTuple):
    """Our environment state: Playground's ``State`` (MJX data, obs, reward, done, metrics,
    info)."""

    playground_state: Any  # mujoco_playground.State; typed loosely so nothing imports Playground


class PlaygroundEnv(Environment[PlaygroundEnvState, PlaygroundParams]):
    """A MuJoCo Playground environment by name, time limit and auto-reset from the base class.

    Raises:
      UnknownEnvironmentError: Playground has no environment ``name`` (close matches named).
      ValueError: a keyword that is no field of the task's config (the message lists them), or
        a task with a non-flat observation.
    """

    def __init__(self, name: str, **options: Any):
        from mujoco_playground import registry

        if name not in registry.ALL_ENVS:
            known = registry.ALL_ENVS
            raise UnknownEnvironmentError(unknown("Playground environment", name, known))
        config = registry.get_default_config(name)
        overrides = {"impl": "jax", **options}
        bad = sorted(set(overrides) - set(config.keys()))
        if bad:
            raise ValueError(
                f"Playground environment {name!r} has no config field(s) {bad}; valid: "
                f"{', '.join(sorted(config.keys()))}"
            )
        self._env = registry.load(name, config_overrides=overrides)
        self.env_name = name
        self.name = f"playground-{name}"
        self.episode_length = int(config.episode_length)
        self._template = jax.eval_shape(self._env.reset, jax.random.key(0))
        obs = self._template.obs
        flat = isinstance(obs, jax.ShapeDtypeStruct) and len(obs.shape) == 1
        flat_dict = isinstance(obs, Mapping) and all(
            isinstance(v, jax.ShapeDtypeStruct) and len(v.shape) == 1 for v in obs.values()
        )
        if not (flat or flat_dict):
            raise ValueError(
                f"Playground environment {name!r} has an observation of shapes "
                f"{jax.tree.map(lambda x: x.shape, obs)}; a flat array or a dict of flat arrays "
                "is supported"
            )
        # The size of the flat observation, or of each key of a dict of them.
        self.observation_size: int | dict[str, int] = (
            int(obs.shape[0]) if flat else {k: int(v.shape[0]) for k, v in obs.items()}
        )
        self.action_size = int(self._env.action_size)

    @property
    def playground_env(self) -> Any:
        """The wrapped Playground environment, with no wrapper around it."""
        return self._env

    @property
    def default_params(self) -> PlaygroundParams:
        return PlaygroundParams(max_steps=self.episode_length)

    def reset_env(
        self, key: jax.Array, params: PlaygroundParams
    ) -> tuple[PlaygroundEnvState, jax.Array]:
        state = self._conform(self._env.reset(key))
        return PlaygroundEnvState(state), state.obs

    def step_env(
        self,
        key: jax.Array,
        state: PlaygroundEnvState,
        action: jax.Array,
        params: PlaygroundParams,
    ) -> tuple[PlaygroundEnvState, jax.Array, jax.Array, jax.Array]:
        del key  # Playground's step draws from the rng its state carries
        new = step_mjx(self.name, self._env, state.playground_state, action, self._template)
        return PlaygroundEnvState(new), new.obs, new.reward, new.done != 0

    def observation_space(self, params: PlaygroundParams) -> Box | Dict:
        if isinstance(self.observation_size, dict):
            return Dict({k: _box(n) for k, n in self.observation_size.items()})
        return _box(self.observation_size)

    def action_space(self, params: PlaygroundParams) -> Box:
        return Box(-1.0, 1.0, (self.action_size,), jnp.float32)

    def _conform(self, state: Any) -> Any:
        return conform(self.name, state, self._template)


def _box(size: int) -> Box:
    return Box(-jnp.inf, jnp.inf, (size,), jnp.float32)


def make_playground(name: str, **options: Any) -> tuple[PlaygroundEnv, PlaygroundParams]:
    """``(environment, params)`` for Playground's ``name``; ``max_steps`` sets the episode
    length, other ``options`` replace fields of the task's config."""
    max_steps = options.pop("max_steps", None)
    env = PlaygroundEnv(name, **options)
    params = env.default_params
    return env, params if max_steps is None else params.replace(max_steps=int(max_steps))

"""Environments that step through dm_env-style time steps, behind this package's
:class:`Environment` API: ``timestep-api/<module>:<factory>`` for anyone's, and the base of the
Jumanji, XLand-MiniGrid and Navix adapters.

Many JAX suites follow dm_env rather than gymnax: ``reset(key) -> (state, timestep)`` and
``step(state, action) -> (state, timestep)``, where the time step carries ``step_type`` (FIRST,
MID, LAST), ``reward``, ``discount``, ``observation`` and, in Jumanji, ``extras``; randomness
lives in the state, so ``step`` takes no key. :class:`TimeStepAdapter` maps one such time step
to this package's terms, once, for every suite; a suite's adapter says only how to reset and
step it (:meth:`TimeStepAdapter._reset`, :meth:`TimeStepAdapter._step`) and what its spaces are.

* **Episode ends.** A LAST time step ends the episode. It is ``terminated`` unless it is a time
  limit, which the base class's ``params.max_steps`` owns: dm_env marks a truncation by a LAST
  with ``discount > 0``, and Jumanji ends episodes at an attribute ``time_limit`` with a
  ``discount`` of 0 (its ``termination``); the adapter counts the steps of each episode and
  takes a LAST at ``time_limit`` for the time limit. Such an end is left to the base class
  (``truncated``, bootstrapped) on the step where ``params.max_steps`` also ends the episode,
  which the default params arrange (``max_steps`` is ``time_limit``). On any other step the
  environment's own limit is reported as ``terminated``: the episode must end where the
  environment says it does, since a dm_env environment is not stepped past a LAST. (A death on
  the very step of the time limit is then ``truncated`` only: the time step cannot tell the
  two apart.) An environment with neither gets :data:`DEFAULT_MAX_STEPS`.
* **Action masks.** An observation with an ``action_mask`` field (a NamedTuple, a dataclass or
  a dict, as Jumanji's are) loses it to :meth:`~jaxrl_fdg.envs.Environment.action_mask`,
  published beside the observation so that every discrete policy respects it; the policy gets
  the other fields as a :class:`~jaxrl_fdg.envs.spaces.Dict`, or that field's array alone where
  one is left (an observation of named fields and no mask stays a ``Dict`` of them all). A mask
  over a ``MultiDiscrete`` action of the same shape (Minesweeper's ``[rows, cols]`` of cells to
  open) makes the action one ``Discrete`` over every combination, row-major (``row * cols +
  col``), which the adapter unravels before stepping (``flatten_action=False`` keeps the
  ``MultiDiscrete`` and leaves the mask in the observation). A mask that fits neither stays in
  the observation. A state with no legal action (Game2048's, at its end) reports every action
  legal, as the base class requires.
* **Info.** Jumanji's ``extras`` (Game2048's ``highest_tile``) are the environment's
  :meth:`~jaxrl_fdg.envs.Environment.info_env`, as float32, read from the state the step
  reached; keys missing from the first time step are 0 there. Nested extras are flattened,
  their keys joined by ``_``.
* **Spaces.** :func:`spec_space` converts dm_env's and Jumanji's specs (``Array``,
  ``BoundedArray``, ``DiscreteArray``, ``MultiDiscreteArray``, Jumanji's nested ``Spec``) to
  our spaces, in one place; observations are cast to the space's dtypes. Rewards must be scalars
  (multi-agent suites are not adapted).

Keys: the base class's ``reset(key)`` is the environment's ``reset(key)``; its step keys go
unused, as the environment steps from the randomness in its state. The step counter the adapter
keeps in its state repeats the base class's (which ``step_env`` cannot see): it is what tells
an environment's own time limit from its other ends.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.gymnax_adapter import DEFAULT_MAX_STEPS, call_factory
from jaxrl_fdg.envs.gymnax_spaces import as_strong, cast_like, cast_to_space
from jaxrl_fdg.envs.spaces import Dict, Discrete, MultiDiscrete, Space
from jaxrl_fdg.envs.spec_spaces import observation_fields, read_spec, shape_space, spec_space

MASK_FIELD = "action_mask"
"""The observation field that holds the legal actions (Jumanji's name)."""

LAST = 2
"""dm_env's and Jumanji's ``StepType.LAST``."""


class Reading(NamedTuple):
    """What the adapter reads of one of the wrapped environment's time steps.

    Attributes:
      observation: the observation as the environment gives it (``action_mask`` included).
      reward: the reward of the transition (0 after a reset).
      last: the environment ended the episode (a LAST time step).
      truncation: the environment says the end is a truncation (dm_env: ``discount > 0``).
      extras: what else it reports (Jumanji's ``extras``), a dict of arrays.
    """

    observation: Any
    reward: Any
    last: Any
    truncation: Any
    extras: Any


@struct.dataclass
class TimeStepState:
    """The state of an adapted environment.

    Attributes:
      env: the wrapped environment's state (XLand-MiniGrid and Navix: their time step, which
        holds it).
      time: the steps taken in this episode, which the wrapped environment's own time limit is
        compared with (int32).
      mask: the legal actions at the observation, bool ``[n]``, or None.
      info: the float32 info of the time step that led here (Jumanji's ``extras``).
    """

    env: Any
    time: jax.Array
    mask: Any = None
    info: Any = None


@struct.dataclass
class TimeStepParams:
    """Parameters of an environment whose own API has none: the time limit alone.

    Attributes:
      max_steps: the episode length at which the base class raises ``truncated``.
    """

    max_steps: Any


class TimeStepAdapter(Environment[TimeStepState, Any]):
    """The mapping of dm_env-style time steps to this package's terms (the module docstring
    says which); subclasses say how to reset and step the environment they wrap.

    A subclass sets what it needs, then calls ``super().__init__``, which traces one reset and
    one step (no compile) to learn the observation's fields, the mask and the info keys.

    Args:
      name: the environment's name.
      flatten_action: whether a ``MultiDiscrete`` action with a mask of its shape becomes one
        ``Discrete`` (None, the default: where that makes the mask usable).

    Raises:
      ValueError: the reward is not a scalar, or ``flatten_action=True`` where the action is
        not ``MultiDiscrete``.
    """

    own_limit: int | None = None
    """The episode length at which the wrapped environment ends episodes itself (Jumanji's
    ``time_limit``), or None."""

    def __init__(self, name: str, flatten_action: bool | None = None):
        self.name = name
        params = self.default_params
        first, after = jax.eval_shape(self._probe, jax.random.key(0), params)
        if np.shape(after.reward) != ():
            raise ValueError(
                f"{name}: rewards of shape {np.shape(after.reward)}; only one scalar reward per "
                "step is supported (not multi-agent rewards)"
            )
        fields = observation_fields(first.observation)
        raw_space = self._raw_observation_space(params) or shape_space(first.observation)
        action_space = self._raw_action_space(params)
        mask = fields.get(MASK_FIELD) if fields is not None else None
        self._nvec: tuple[int, ...] | None = None
        self._masked = False
        if flatten_action and not isinstance(action_space, MultiDiscrete):
            raise ValueError(
                f"{name}: flatten_action=True needs a MultiDiscrete action, not "
                f"{type(action_space).__name__}"
            )
        if isinstance(action_space, MultiDiscrete) and (
            flatten_action
            or (
                flatten_action is None
                and mask is not None
                and tuple(mask.shape) == tuple(action_space.nvec)
            )
        ):
            self._nvec = tuple(action_space.nvec)
            action_space = Discrete(math.prod(self._nvec), action_space.dtype)
        if mask is not None and isinstance(action_space, Discrete):
            flags = mask.dtype == bool or jnp.issubdtype(mask.dtype, jnp.integer)
            self._masked = flags and math.prod(mask.shape) == action_space.n
        self._action_space = action_space
        self._fields = (
            None
            if fields is None
            else [k for k in fields if not (self._masked and k == MASK_FIELD)]
        )
        self._obs_space = self._policy_space(raw_space)
        extras = {**_flat_extras(first.extras), **_flat_extras(after.extras)}
        self._info_shapes = {k: tuple(v.shape) for k, v in extras.items()}

    # -- what subclasses provide ----------------------------------------------------------------

    def _reset(self, key: jax.Array, params: Any) -> tuple[Any, Reading]:
        """The wrapped environment's reset: ``(its state, what its time step says)``."""
        raise NotImplementedError

    def _step(
        self, key: jax.Array, state: Any, action: jax.Array, params: Any
    ) -> tuple[Any, Reading]:
        """The wrapped environment's step without any reset: ``(its state, its time step's
        reading)``; ``action`` in the wrapped environment's own form (unflattened)."""
        raise NotImplementedError

    def _raw_observation_space(self, params: Any) -> Space | None:
        """The space of the wrapped environment's observation, ``action_mask`` included (a
        :class:`Dict` of its fields); None: unbounded boxes of the traced shapes."""
        return None

    def _raw_action_space(self, params: Any) -> Space:
        """The wrapped environment's action space."""
        raise NotImplementedError

    # -- the Environment API --------------------------------------------------------------------

    def reset_env(self, key: jax.Array, params: Any) -> tuple[TimeStepState, Any]:
        env_state, reading = self._reset(key, params)
        obs, mask = self._observe(reading.observation)
        time = jnp.zeros((), jnp.int32)
        state = TimeStepState(as_strong(env_state), time, mask, self._info(reading.extras))
        return state, obs

    def step_env(
        self, key: jax.Array, state: TimeStepState, action: jax.Array, params: Any
    ) -> tuple[TimeStepState, Any, jax.Array, jax.Array]:
        env_state, reading = self._step(key, state.env, self._env_action(action), params)
        time = state.time + 1
        limit = jnp.asarray(reading.truncation, bool)
        if self.own_limit is not None:
            limit = limit | (time >= self.own_limit)
        # A time limit the base class applies on this very step is its (truncated); any other
        # end, the environment's own limit included, is terminated.
        terminated = jnp.asarray(reading.last, bool) & ~(limit & (time >= params.max_steps))
        obs, mask = self._observe(reading.observation)
        new = TimeStepState(cast_like(env_state, state.env), time, mask, self._info(reading.extras))
        return new, obs, reading.reward, terminated

    def action_mask(self, state: TimeStepState, params: Any) -> jax.Array | None:
        del params
        return state.mask

    def info_env(self, state: TimeStepState, params: Any) -> dict[str, jax.Array]:
        del params
        return dict(state.info)

    @property
    def has_action_mask(self) -> bool:
        """Whether the observation holds a mask over the (possibly flattened) actions."""
        return self._masked

    @property
    def has_info(self) -> bool:
        """Whether the environment reports extras."""
        return bool(self._info_shapes)

    def observation_space(self, params: Any) -> Space:
        return self._obs_space

    def action_space(self, params: Any) -> Space:
        return self._action_space

    # -- the mapping ----------------------------------------------------------------------------

    def _probe(self, key: jax.Array, params: Any) -> tuple[Reading, Reading]:
        """One reset and one step of action 0, for their shapes (traced, never run)."""
        env_state, first = self._reset(key, params)
        action = _zeros_of(self._raw_action_space(params))
        _, after = self._step(key, env_state, action, params)
        return first, after

    def _observe(self, raw: Any) -> tuple[Any, jax.Array | None]:
        """The policy's observation (the mask taken out) and the mask, flat and never empty."""
        mask = None
        if self._fields is None:
            obs = raw
        else:
            fields = observation_fields(raw)
            if self._masked:
                mask = jnp.asarray(fields[MASK_FIELD], bool).reshape(-1)
                mask = mask | ~jnp.any(mask)  # no legal action (an episode's end): all of them
            obs = {k: fields[k] for k in self._fields}
            if self._masked and len(self._fields) == 1:
                obs = obs[self._fields[0]]
        return cast_to_space(obs, self._obs_space), mask

    def _policy_space(self, raw: Space) -> Space:
        """The raw observation's space less the mask: a :class:`Dict` of the other fields, or
        the one field's space where the mask leaves one."""
        if self._fields is None:
            return raw
        if not isinstance(raw, Dict):
            raise ValueError(
                f"{self.name}: the observation has fields {list(self._fields)} but its space is "
                f"a {type(raw).__name__}"
            )
        spaces = {k: raw.spaces[k] for k in self._fields}
        return spaces[self._fields[0]] if self._masked and len(spaces) == 1 else Dict(spaces)

    def _env_action(self, action: jax.Array) -> jax.Array:
        """Our action in the wrapped environment's form: a flat index unravelled into the
        ``MultiDiscrete`` vector it stands for."""
        if self._nvec is None:
            return action
        return jnp.stack(jnp.unravel_index(action, self._nvec), axis=-1).astype(action.dtype)

    def _info(self, extras: Any) -> dict[str, jax.Array]:
        flat = _flat_extras(extras)
        return {
            k: jnp.asarray(flat[k], jnp.float32) if k in flat else jnp.zeros(shape, jnp.float32)
            for k, shape in self._info_shapes.items()
        }


class TimeStepApiEnv(TimeStepAdapter):
    """Any object with the dm_env-style JAX API Jumanji has: ``reset(key) -> (state,
    timestep)``, ``step(state, action) -> (state, timestep)``, the time step with
    ``step_type``, ``reward``, ``discount``, ``observation`` (and optionally ``extras``), and
    ``observation_spec``/``action_spec`` (attributes or methods; without an observation spec
    the observation's space is unbounded boxes of its traced shapes).

    An integer attribute ``time_limit`` is the environment's own episode length
    (:attr:`TimeStepAdapter.own_limit`, and the default ``max_steps``).

    Args:
      env: the object.
      name: the environment's name.
      flatten_action: see :class:`TimeStepAdapter`.
    """

    def __init__(self, env: Any, name: str = "timestep-api", flatten_action: bool | None = None):
        missing = [m for m in ("reset", "step") if not callable(getattr(env, m, None))]
        if missing or getattr(env, "action_spec", None) is None:
            lacks = ", ".join(missing + ([] if hasattr(env, "action_spec") else ["action_spec"]))
            raise ValueError(f"{name}: a {type(env).__name__} lacks the time-step API's {lacks}")
        self._env = env
        limit = getattr(env, "time_limit", None)
        self.own_limit = int(limit) if isinstance(limit, int | np.integer) else None
        self._default = TimeStepParams(jnp.int32(self.own_limit or DEFAULT_MAX_STEPS))
        super().__init__(name, flatten_action)

    @property
    def wrapped(self) -> Any:
        """The wrapped environment."""
        return self._env

    @property
    def default_params(self) -> TimeStepParams:
        """The time limit: the environment's ``time_limit``, else :data:`DEFAULT_MAX_STEPS`."""
        return self._default

    def _reset(self, key: jax.Array, params: Any) -> tuple[Any, Reading]:
        state, timestep = self._env.reset(key)
        return state, dm_reading(timestep)

    def _step(self, key, state, action, params):
        state, timestep = self._env.step(state, action)
        return state, dm_reading(timestep)

    def _raw_observation_space(self, params: Any) -> Space | None:
        spec = read_spec(self._env, "observation_spec")
        return None if spec is None else spec_space(spec, self.name)

    def _raw_action_space(self, params: Any) -> Space:
        return spec_space(read_spec(self._env, "action_spec"), self.name)


def make_timestep_api(
    factory: Callable[..., Any],
    name: str = "timestep-api",
    *,
    max_steps: Any = None,
    flatten_action: bool | None = None,
    **kwargs: Any,
) -> tuple[TimeStepApiEnv, TimeStepParams]:
    """``(environment, params)`` of the object ``factory(**kwargs)`` returns (see
    :class:`TimeStepApiEnv`); ``max_steps`` sets the time limit.

    >>> import jumanji
    >>> env, params = make_timestep_api(jumanji.make, id="Game2048-v1")
    """
    env = TimeStepApiEnv(call_factory(factory, name, kwargs), name, flatten_action)
    return env, with_max_steps(env.default_params, max_steps)


def dm_reading(timestep: Any) -> Reading:
    """What a dm_env or Jumanji time step says: LAST ends the episode, and is a truncation where
    its discount is positive."""
    last = jnp.asarray(timestep.step_type) == LAST
    discount = jnp.asarray(timestep.discount)
    extras = getattr(timestep, "extras", None) or {}
    return Reading(timestep.observation, timestep.reward, last, last & (discount > 0), extras)


def _flat_extras(extras: Any) -> dict[str, Any]:
    """A time step's extras as a flat dict: nested keys joined by ``_``; leaves that are not
    numbers (None, strings) left out."""
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(extras or {})[0]:
        if not hasattr(leaf, "dtype") and not isinstance(leaf, int | float | bool):
            continue
        flat["_".join(_key_name(k) for k in path)] = leaf
    return flat


def _key_name(key: Any) -> str:
    for attribute in ("key", "name", "idx"):
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


def _zeros_of(space: Space) -> jax.Array:
    return jnp.zeros(space.shape, space.dtype)


def with_max_steps(params: Any, max_steps: Any) -> Any:
    if max_steps is None:
        return params
    return params.replace(max_steps=jnp.asarray(max_steps, jnp.int32))

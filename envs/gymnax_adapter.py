"""Environments with gymnax's API behind this package's :class:`Environment` API: ``gymnax/<id>``
for gymnax's own, ``gymnax-api/<module>:<factory>`` for anyone's.

gymnax's API is a stateless object with ``reset_env(key, params) -> (obs, state)``,
``step_env(key, state, action, params) -> (obs, state, reward, done, info)``,
``observation_space(params)``, ``action_space(params)`` and ``default_params``. Many JAX suites
copy it (Craftax does, see :mod:`~jaxrl_fdg.envs.craftax_adapter`), so one class,
:class:`GymnaxApiEnv`, adapts any such object, and :class:`GymnaxEnv` is that class plus gymnax's
registry. ``reset_env`` and ``step_env`` are the wrapped object's own; the time limit and the
auto-reset come from :class:`~jaxrl_fdg.envs.base.Environment`, once, as for every other
environment here, and reproduce gymnax's ``step`` exactly (``tests/envs/test_gymnax.py`` checks
every registered id):

* **Keys.** gymnax's ``step(key, ...)`` steps with ``split(key)[0]`` and resets with
  ``split(key)[1]``; the base class's ``step`` does the same, so one key gives one transition.
* **Time limit.** Since gymnax 1.0, ``step_env`` returns ``terminated`` (the MDP's own end,
  never the time limit) and ``step`` adds ``truncated = state.time >= max_steps_in_episode``.
  Every gymnax environment starts ``state.time`` at 0 and adds 1 per step, the count the base
  class keeps, so the base class owns the limit and reads it from the wrapped params:
  ``GymnaxParams.max_steps`` *is* ``params.gymnax.max_steps_in_episode``, one number for both,
  sweepable like any other leaf. Other suites name the field differently (Craftax:
  ``max_timesteps``); :data:`LIMIT_FIELDS` are the names looked for, and params with none of
  them get a limit of their own (:data:`DEFAULT_MAX_STEPS`, ``max_steps=`` to change it).
  A suite whose ``step_env`` folds the time limit into ``done`` (gymnax before 1.0, Craftax)
  is adapted with ``limit_in_done=True``: ``step_env`` then runs with the limit field at its
  largest value, so its ``done`` is the MDP's end alone, and the base class raises
  ``truncated`` at the real limit. gymnax environments that override gymnax's
  ``is_truncated`` or ``step`` (none registered but DeepSea, whose reset keeps two running
  totals: see :data:`_RESET_KEEPS`) get a warning, as their own ``step`` may differ.
* **Spaces.** :func:`gymnax_space` converts gymnax's ``Discrete``, ``Box``, ``Dict`` and
  ``Tuple`` (and look-alikes: it reads attributes, not classes, so Craftax's copies convert
  too) in one place. Observations are cast to their space's dtypes. For gymnax's own
  environments a ``Box`` becomes float32 (FourRooms' int32 positions too), with gymnax's shape
  kept: MinAtar's images are ``[10, 10, C]``, Pong's ``[30, 40, 3]``, ready for a CNN torso.
  FrozenLake's observation is ``Discrete(16)``, an int32 scalar. Actions go to the wrapped
  object unchanged; rewards are cast to float32 (integral in the bandits and UmbrellaChain, so
  exactly).
* **Rendering.** A gymnax environment whose observation is an image ``[H, W, C]`` (MinAtar's
  five, Pong-misc) renders it (:meth:`GymnaxEnv.render`): the observation of the state, each
  channel a colour of :data:`~jaxrl_fdg.envs.render.PALETTE` drawn over the channels before it,
  each cell a square of pixels (16 for MinAtar's 10 × 10). Others do not render (the classic
  set registered here, CartPole-v1 and the rest, draws its own).

**Params** are :class:`GymnaxParams`: the wrapped params pytree, whose every field is a leaf, so
a physics sweep is a ``jax.vmap`` over params:

>>> env = make_gymnax("CartPole-v1")
>>> gravity = jnp.array([4.9, 9.8, 19.6])
>>> params = jax.vmap(lambda g: with_params(env.default_params, gravity=g))(gravity)
>>> states, ts = jax.vmap(env.reset)(jax.random.split(key, 3), params)

MNISTBandit-bsuite downloads MNIST when built; without a network it raises ``OSError``.
gymnax is imported lazily, inside :class:`GymnaxEnv`, so ``import jaxrl_fdg.envs`` does not.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs import render
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.gymnax_imports import gymnax_factory
from jaxrl_fdg.envs.gymnax_spaces import (
    _float_boxes,
    as_strong,
    cast_like,
    cast_to_space,
    gymnax_space,
)
from jaxrl_fdg.envs.spaces import Box, Space

# gymnax classes whose own ``step`` keeps fields of the finished episode's state across the
# auto-reset (gymnax's DeepSea: bsuite's running count of bad episodes and denoised return).
_RESET_KEEPS: dict[str, tuple[str, ...]] = {
    "DeepSea": ("total_bad_episodes", "denoised_return"),
}

LIMIT_FIELDS = ("max_steps_in_episode", "max_timesteps", "max_steps", "max_episode_steps")
"""Names of a params field that holds the episode length, looked for in this order: gymnax's,
Craftax's, and two common ones. The first found is the time limit the base class applies."""

DEFAULT_MAX_STEPS = 10_000
"""The time limit of an environment whose own API names none (no field of :data:`LIMIT_FIELDS`
in its params, no ``time_limit`` attribute): long enough not to cut a sensible episode, finite so
that an evaluation of a policy that never ends an episode still ends. ``max_steps=`` changes it."""

FRAME_SIDE = 160
"""The longer side of a rendered gymnax image observation, in pixels, give or take a cell."""

_NO_LIMIT = 2**31 - 1  # the largest int32: a limit ``state.time >= limit`` never reaches


@struct.dataclass
class GymnaxParams:
    """Parameters of a gymnax-API environment: its own params pytree, and which field of it is
    the episode length.

    Attributes:
      gymnax: the wrapped environment's params (a gymnax ``EnvParams`` dataclass; every field,
        ``max_steps_in_episode`` included, is a pytree leaf). Change fields with
        :func:`with_params`.
      steps: the time limit, where ``gymnax`` has no field for it (``limit`` is None); else None.
      limit: the name of the field of ``gymnax`` that is the time limit (static), or None.
    """

    gymnax: Any  # gymnax.EnvParams; typed loosely so this module never imports gymnax
    steps: Any = None
    limit: str | None = struct.field(pytree_node=False, default="max_steps_in_episode")

    @property
    def max_steps(self) -> Any:
        """The time limit the base class applies: the wrapped params' own field (gymnax's
        ``max_steps_in_episode``), or ``steps`` where they have none."""
        return self.steps if self.limit is None else getattr(self.gymnax, self.limit)


class GymnaxApiEnv(Environment[Any, GymnaxParams]):
    """Any object with gymnax's API, with time limit and auto-reset from the base class.

    Args:
      env: the object: ``reset_env``, ``step_env``, ``observation_space``, ``action_space`` and
        (unless ``params`` is given) ``default_params``, as gymnax has them.
      params: its params; default ``env.default_params``.
      name: the environment's name in messages and run folders.
      time_limit: the field of its params that is the episode length; default the first of
        :data:`LIMIT_FIELDS` it has, else a limit of the adapter's own
        (:data:`DEFAULT_MAX_STEPS`).
      limit_in_done: its ``step_env`` ends episodes at the time limit itself (``done`` includes
        ``time >= limit``, as in gymnax before 1.0 and in Craftax); ``step_env`` is then given
        params whose limit field is the largest int32, so that its ``done`` is the MDP's own
        end and the time limit is reported as ``truncated``.

    Raises:
      ValueError: ``time_limit`` names no field of the params, ``limit_in_done`` without a limit
        field, or a space that :func:`gymnax_space` cannot convert.
    """

    float_boxes: bool = False
    """Whether every ``Box`` space (and its observations) becomes float32: gymnax's own
    environments, whose ``Box`` observations are float32 but for FourRooms' int32 positions."""

    def __init__(
        self,
        env: Any,
        params: Any = None,
        *,
        name: str = "gymnax-api",
        time_limit: str | None = None,
        limit_in_done: bool = False,
    ):
        self._env = env
        wrapped = env.default_params if params is None else params
        field = _limit_field(wrapped, time_limit)
        if limit_in_done and field is None:
            raise ValueError(
                f"{name}: limit_in_done needs the params' time-limit field; name it with "
                f"time_limit= (none of {', '.join(LIMIT_FIELDS)} found)"
            )
        self._default = GymnaxParams(
            wrapped, None if field else jnp.int32(DEFAULT_MAX_STEPS), field
        )
        self._limit_in_done = limit_in_done
        self.name = name
        # Observations take the dtypes of their space; checks that both spaces convert.
        self._obs_space = self.observation_space(self._default)
        self.action_space(self._default)

    @property
    def gymnax_env(self) -> Any:
        """The wrapped environment."""
        return self._env

    @property
    def default_params(self) -> GymnaxParams:
        """The wrapped environment's default params (its episode length included)."""
        return self._default

    def reset_env(self, key: jax.Array, params: GymnaxParams) -> tuple[Any, Any]:
        obs, state = self._env.reset_env(key, params.gymnax)
        # Strong dtypes, so that stepped states (cast to these) and reset states are one type in
        # scan carries and in the base class's select between them.
        return as_strong(state), cast_to_space(obs, self._obs_space)

    def step_env(
        self, key: jax.Array, state: Any, action: jax.Array, params: GymnaxParams
    ) -> tuple[Any, Any, jax.Array, jax.Array]:
        wrapped = params.gymnax
        if self._limit_in_done:
            wrapped = wrapped.replace(**{params.limit: _NO_LIMIT})
        obs, new, reward, terminated, _ = self._env.step_env(key, state, action, wrapped)
        return cast_like(new, state), cast_to_space(obs, self._obs_space), reward, terminated

    def observation_space(self, params: GymnaxParams) -> Space:
        """The wrapped observation space as ours; its bounds may read (traced) params."""
        space = gymnax_space(self._env.observation_space(params.gymnax), self.name)
        return _float_boxes(space) if self.float_boxes else space

    def action_space(self, params: GymnaxParams) -> Space:
        space = gymnax_space(self._env.action_space(params.gymnax), self.name)
        return _float_boxes(space) if self.float_boxes else space


class GymnaxEnv(GymnaxApiEnv):
    """A gymnax environment by id, with time limit and auto-reset from the base class.

    Args:
      env_id: one of ``gymnax.registered_envs``, e.g. ``"Breakout-MinAtar"``.
      **kwargs: passed to the gymnax environment's constructor (``gymnax.make``), e.g.
        ``size=10`` for DeepSea-bsuite.

    Raises:
      UnknownEnvironmentError: ``env_id`` is not registered with gymnax (close matches named).
      ValueError: the constructor refuses ``kwargs``, or a space is not one gymnax has.
    """

    float_boxes = True

    def __init__(self, env_id: str, **kwargs: Any):
        factory = gymnax_factory(env_id)
        try:
            env = factory(**kwargs)
        except TypeError as e:
            raise ValueError(f"gymnax cannot make {env_id!r} with {kwargs}: {e}") from None
        gymnax_params = env.default_params
        self.env_id = env_id
        self._keeps = _RESET_KEEPS.get(type(env).__name__, ())
        _warn_if_own_step(env, env_id, known=bool(self._keeps))
        super().__init__(
            env, gymnax_params, name=f"gymnax-{env_id}", time_limit="max_steps_in_episode"
        )

    def auto_reset_env(
        self, key: jax.Array, state: Any, params: GymnaxParams
    ) -> tuple[Any, jax.Array]:
        """A fresh episode, keeping what the environment's own ``step`` keeps (DeepSea's totals)."""
        new, obs = self.reset_env(key, params)
        if self._keeps:
            new = new.replace(**{name: getattr(state, name) for name in self._keeps})
        return new, obs

    def render(self, state: Any, params: GymnaxParams) -> jax.Array:
        """The image observation of ``state`` (gymnax's ``get_obs``) in colour: channel ``c`` in
        ``render.PALETTE[c]`` over the channels before it, on black, the longer side scaled up
        to about :data:`FRAME_SIDE` pixels (MinAtar: 160 × 160, Pong-misc: 120 × 160).

        Raises:
          NotImplementedError: the observation is not an image ``[H, W, C]``
            (:attr:`can_render` is False).
        """
        if not self.can_render:
            raise NotImplementedError(
                f"{self.name} does not render: only gymnax environments with an image "
                "observation [H, W, C] do (MinAtar's, Pong-misc)"
            )
        obs = self._env.get_obs(state, params=params.gymnax)
        return render.to_uint8(render.enlarge(render.channels(obs), FRAME_SIDE))

    @property
    def can_render(self) -> bool:
        """Whether the observation is an image ``[H, W, C]`` (MinAtar's, Pong-misc's)."""
        space = self._obs_space
        return isinstance(space, Box) and len(space.shape) == 3


def make_gymnax(env_id: str, **kwargs: Any) -> GymnaxEnv:
    """Build :class:`GymnaxEnv` ``env_id``; ``kwargs`` go to gymnax's constructor.

    >>> env = make_gymnax("Breakout-MinAtar")
    >>> state, ts = env.reset(jax.random.key(0))  # ts.observation: float32 [10, 10, 4]
    """
    return GymnaxEnv(env_id, **kwargs)


def make_gymnax_api(
    factory: Callable[..., Any],
    name: str = "gymnax-api",
    *,
    time_limit: str | None = None,
    limit_in_done: bool = False,
    max_steps: Any = None,
    **kwargs: Any,
) -> tuple[GymnaxApiEnv, GymnaxParams]:
    """``(environment, params)`` of what ``factory(**kwargs)`` returns: an object with gymnax's
    API, or a pair ``(object, params)`` as ``gymnax.make`` returns. ``max_steps`` sets the time
    limit; ``time_limit`` and ``limit_in_done`` are :class:`GymnaxApiEnv`'s.

    >>> import gymnax
    >>> env, params = make_gymnax_api(gymnax.make, env_id="CartPole-v1", max_steps=200)

    Raises:
      ValueError: the factory refuses ``kwargs``, or returns no gymnax-API object.
    """
    built = call_factory(factory, name, kwargs)
    env, params = built if isinstance(built, tuple) and len(built) == 2 else (built, None)
    missing = [
        m
        for m in ("reset_env", "step_env", "observation_space", "action_space")
        if not callable(getattr(env, m, None))
    ]
    if params is None and not hasattr(env, "default_params"):
        missing.append("default_params")
    if missing:
        raise ValueError(
            f"{name}: the factory returned a {type(env).__name__}, which lacks gymnax's "
            f"{', '.join(missing)}"
        )
    adapted = GymnaxApiEnv(
        env, params, name=name, time_limit=time_limit, limit_in_done=limit_in_done
    )
    params = adapted.default_params
    return adapted, params if max_steps is None else with_params(params, max_steps=max_steps)


def with_params(params: GymnaxParams, **overrides: Any) -> GymnaxParams:
    """``params`` with fields of the wrapped params replaced; ``max_steps`` is the time-limit
    field (gymnax's ``max_steps_in_episode``).

    >>> params = with_params(env.default_params, gravity=5.0, max_steps=200)

    Raises:
      ValueError: a name that is no field of the wrapped params (the message lists them), or
        both ``max_steps`` and the field it names.
    """
    return replace_fields(params, overrides, "gymnax")


def replace_fields(params: GymnaxParams, overrides: dict[str, Any], what: str) -> GymnaxParams:
    """:func:`with_params`, naming the suite (``what``) in its messages."""
    if not overrides:
        return params
    overrides = dict(overrides)
    limit = params.limit
    if "max_steps" in overrides and limit in overrides:
        raise ValueError(f"give max_steps or {limit}, not both (they are one field)")
    if limit is None and "max_steps" in overrides:
        params = params.replace(steps=jnp.asarray(overrides.pop("max_steps"), jnp.int32))
    renamed = {(limit if k == "max_steps" else k): v for k, v in overrides.items()}
    fields = {f.name for f in dataclasses.fields(params.gymnax)}
    bad = sorted(set(renamed) - fields)
    if bad:
        raise ValueError(
            f"unknown {what} parameter(s) {bad}; valid: max_steps, {', '.join(sorted(fields))}"
        )
    return params.replace(gymnax=params.gymnax.replace(**renamed)) if renamed else params


def _limit_field(params: Any, named: str | None) -> str | None:
    """The field of ``params`` that is the time limit: ``named``, else the first of
    :data:`LIMIT_FIELDS` it has, else None."""
    fields = (
        [f.name for f in dataclasses.fields(params)] if dataclasses.is_dataclass(params) else []
    )
    if named is not None:
        if named not in fields:
            raise ValueError(
                f"time_limit={named!r} is no field of {type(params).__name__}; valid: "
                f"{', '.join(fields) or 'none (not a dataclass)'}"
            )
        return named
    return next((f for f in LIMIT_FIELDS if f in fields), None)


def call_factory(factory: Callable[..., Any], name: str, kwargs: dict[str, Any]) -> Any:
    """``factory(**kwargs)``, a refusal of the keywords as a one-line ``ValueError``."""
    try:
        return factory(**kwargs)
    except TypeError as e:
        raise ValueError(f"{name}: the factory cannot be called with {kwargs}: {e}") from None


def _warn_if_own_step(env: Any, env_id: str, known: bool) -> None:
    """Warn when the environment overrides the gymnax methods this adapter replaces."""
    from gymnax.environments.environment import Environment as GymnaxBase

    for method in ("step", "is_truncated"):
        if getattr(type(env), method) is getattr(GymnaxBase, method):
            continue
        if method == "step" and known:
            continue
        warnings.warn(
            f"gymnax environment {env_id!r} overrides {method}; the time limit and auto-reset "
            "here are gymnax's default ones, so episodes may differ from its own step",
            stacklevel=3,
        )

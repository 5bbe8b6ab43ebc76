"""gymnax environments behind this package's :class:`Environment` API: ``gymnax/<id>``.

``GymnaxEnv(env_id)`` wraps one of ``gymnax.registered_envs`` (classic control, bsuite,
MinAtar, misc). ``reset_env`` and ``step_env`` are gymnax's own ``reset_env``/``step_env``; the
time limit and the auto-reset come from :class:`~jaxrl_fdg.envs.base.Environment`, once, as for
every other environment here, and reproduce gymnax's ``step`` exactly (``tests/envs/
test_gymnax.py`` checks every registered id):

* **Keys.** gymnax's ``step(key, ...)`` steps with ``split(key)[0]`` and resets with
  ``split(key)[1]``; the base class's ``step`` does the same, so one key gives one transition.
* **Time limit.** Since gymnax 1.0, ``step_env`` returns ``terminated`` (the MDP's own end,
  never the time limit) and ``step`` adds ``truncated = state.time >= max_steps_in_episode``.
  Every gymnax environment starts ``state.time`` at 0 and adds 1 per step, the count the base
  class keeps, so the base class owns the limit and reads it from gymnax's params:
  ``GymnaxParams.max_steps`` *is* ``params.gymnax.max_steps_in_episode``, one number for both,
  sweepable like any other leaf. Environments that override gymnax's ``is_truncated`` or
  ``step`` (none registered but DeepSea, whose reset keeps two running totals: see
  :data:`_RESET_KEEPS`) get a warning, as their own ``step`` may differ.
* **Spaces.** ``Discrete`` stays ``Discrete``; ``Box`` becomes a float32 ``Box`` and its
  observations float32 (FourRooms' int32 positions too), with gymnax's shape kept: MinAtar's
  images are ``[10, 10, C]``, Pong's ``[30, 40, 3]``, ready for a CNN torso. FrozenLake's
  observation is ``Discrete(16)``, an int32 scalar. Actions go to gymnax unchanged; rewards are
  cast to float32 (integral in the bandits and UmbrellaChain, so exactly).

**Params** are :class:`GymnaxParams`: gymnax's own params pytree, whose every field is a leaf, so
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
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.spaces import Box, Discrete, Space

# gymnax classes whose own ``step`` keeps fields of the finished episode's state across the
# auto-reset (gymnax's DeepSea: bsuite's running count of bad episodes and denoised return).
_RESET_KEEPS: dict[str, tuple[str, ...]] = {
    "DeepSea": ("total_bad_episodes", "denoised_return"),
}


@struct.dataclass
class GymnaxParams:
    """Parameters of a gymnax environment: gymnax's own params pytree.

    Attributes:
      gymnax: the wrapped environment's params (a gymnax ``EnvParams`` dataclass; every field,
        ``max_steps_in_episode`` included, is a pytree leaf). Change fields with
        :func:`with_params`.
    """

    gymnax: Any  # gymnax.EnvParams; typed loosely so this module never imports gymnax

    @property
    def max_steps(self) -> Any:
        """The time limit the base class applies: gymnax's ``max_steps_in_episode``."""
        return self.gymnax.max_steps_in_episode


class GymnaxEnv(Environment[Any, GymnaxParams]):
    """A gymnax environment by id, with time limit and auto-reset from the base class.

    Args:
      env_id: one of ``gymnax.registered_envs``, e.g. ``"Breakout-MinAtar"``.
      **kwargs: passed to the gymnax environment's constructor (``gymnax.make``), e.g.
        ``size=10`` for DeepSea-bsuite.

    Raises:
      UnknownEnvironmentError: ``env_id`` is not registered with gymnax (close matches named).
      ValueError: the constructor refuses ``kwargs``, or a space is neither Discrete nor Box.
    """

    def __init__(self, env_id: str, **kwargs: Any):
        import gymnax  # imported here, not at module level: gymnax imports gymnasium

        if env_id not in gymnax.registered_envs:
            raise UnknownEnvironmentError(
                unknown("gymnax environment", env_id, gymnax.registered_envs)
            )
        try:
            self._env, gymnax_params = gymnax.make(env_id, **kwargs)
        except TypeError as e:
            raise ValueError(f"gymnax cannot make {env_id!r} with {kwargs}: {e}") from None
        self._default = GymnaxParams(gymnax_params)
        self.env_id = env_id
        self.name = f"gymnax-{env_id}"
        self._keeps = _RESET_KEEPS.get(type(self._env).__name__, ())
        _warn_if_own_step(self._env, env_id, known=bool(self._keeps))
        # Observations take the dtype of their space; checks that both spaces convert.
        self._obs_dtype = self.observation_space(self._default).dtype
        self.action_space(self._default)

    @property
    def gymnax_env(self) -> Any:
        """The wrapped gymnax environment."""
        return self._env

    @property
    def default_params(self) -> GymnaxParams:
        """gymnax's default params (its episode length included)."""
        return self._default

    def reset_env(self, key: jax.Array, params: GymnaxParams) -> tuple[Any, jax.Array]:
        obs, state = self._env.reset_env(key, params.gymnax)
        # Strong dtypes, so that stepped states (cast to these) and reset states are one type in
        # scan carries and in the base class's select between them.
        return jax.tree.map(_strong, state), jnp.asarray(obs, self._obs_dtype)

    def step_env(
        self, key: jax.Array, state: Any, action: jax.Array, params: GymnaxParams
    ) -> tuple[Any, jax.Array, jax.Array, jax.Array]:
        obs, new, reward, terminated, _ = self._env.step_env(key, state, action, params.gymnax)
        new = jax.tree.map(_cast_like, new, state)
        return new, jnp.asarray(obs, self._obs_dtype), reward, terminated

    def auto_reset_env(
        self, key: jax.Array, state: Any, params: GymnaxParams
    ) -> tuple[Any, jax.Array]:
        """A fresh episode, keeping what the environment's own ``step`` keeps (DeepSea's totals)."""
        new, obs = self.reset_env(key, params)
        if self._keeps:
            new = new.replace(**{name: getattr(state, name) for name in self._keeps})
        return new, obs

    def observation_space(self, params: GymnaxParams) -> Space:
        """gymnax's observation space as ours; its bounds may read (traced) params."""
        return _space(self._env.observation_space(params.gymnax), self.env_id)

    def action_space(self, params: GymnaxParams) -> Space:
        return _space(self._env.action_space(params.gymnax), self.env_id)


def make_gymnax(env_id: str, **kwargs: Any) -> GymnaxEnv:
    """Build :class:`GymnaxEnv` ``env_id``; ``kwargs`` go to gymnax's constructor.

    >>> env = make_gymnax("Breakout-MinAtar")
    >>> state, ts = env.reset(jax.random.key(0))  # ts.observation: float32 [10, 10, 4]
    """
    return GymnaxEnv(env_id, **kwargs)


def with_params(params: GymnaxParams, **overrides: Any) -> GymnaxParams:
    """``params`` with fields of gymnax's params replaced; ``max_steps`` is
    ``max_steps_in_episode``.

    >>> params = with_params(env.default_params, gravity=5.0, max_steps=200)

    Raises:
      ValueError: a name that is no field of gymnax's params (the message lists them), or both
        ``max_steps`` and ``max_steps_in_episode``.
    """
    if not overrides:
        return params
    if "max_steps" in overrides and "max_steps_in_episode" in overrides:
        raise ValueError("give max_steps or max_steps_in_episode, not both (they are one field)")
    fields = {f.name for f in dataclasses.fields(params.gymnax)}
    renamed = {("max_steps_in_episode" if k == "max_steps" else k): v for k, v in overrides.items()}
    bad = sorted(set(renamed) - fields)
    if bad:
        raise ValueError(
            f"unknown gymnax parameter(s) {bad}; valid: max_steps, {', '.join(sorted(fields))}"
        )
    return params.replace(gymnax=params.gymnax.replace(**renamed))


def _space(space: Any, env_id: str) -> Space:
    """A gymnax ``Discrete`` or ``Box`` as ours (a ``Box`` as float32)."""
    from gymnax.environments import spaces

    if isinstance(space, spaces.Discrete):
        return Discrete(int(space.n))
    if isinstance(space, spaces.Box):
        low, high = (jnp.asarray(bound, jnp.float32) for bound in (space.low, space.high))
        return Box(low, high, tuple(space.shape), jnp.float32)
    raise ValueError(
        f"gymnax environment {env_id!r} has a {type(space).__name__} space; "
        "only Discrete and Box are supported"
    )


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


def _is_key(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.extended)


def _strong(x: Any) -> Any:
    """``x`` as an array of its own dtype, not weakly typed (PRNG keys pass through)."""
    if _is_key(x):
        return x
    x = jnp.asarray(x)
    return jax.lax.convert_element_type(x, x.dtype)


def _cast_like(x: Any, ref: jax.Array) -> Any:
    """``x`` in the dtype of ``ref``, the state it was stepped from (PRNG keys pass through)."""
    if _is_key(ref):
        return x
    return jax.lax.convert_element_type(jnp.asarray(x), ref.dtype)

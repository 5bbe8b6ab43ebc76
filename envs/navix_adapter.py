"""Navix behind this package's :class:`Environment` API: ``navix/<id>``.

Navix (Pignatelli et al. 2024) is MiniGrid in JAX. Its environments step a ``Timestep`` that
holds the state (``env.reset(key) -> timestep``, ``env.step(timestep, action) -> timestep``), so
:class:`NavixEnv` is :class:`~jaxrl_fdg.envs.timestep_adapter.TimeStepAdapter` with the time step
as the state, plus Navix's specifics:

* **Ids.** ``navix.registry()``: ``Navix-Empty-5x5-v0``, ``Navix-DoorKey-8x8-v0``,
  ``Navix-FourRooms-v0``, ... Seven actions (MiniGrid's).
* **Time limit.** Navix's ``step_type`` is 0 (transition), 1 (truncation: ``t >= max_steps``),
  2 (termination) or 3 (both). The adapter steps with Navix's ``_step``, its step without the
  auto-reset, and reads ``step_type >= 2`` as ``terminated``; Navix's own truncation is left
  out, the base class applying the time limit from ``params.max_steps``, whose default is the
  environment's ``max_steps`` (``navix.make``'s default: 100; ``max_steps=`` sets both). Navix
  steps on past its own limit unharmed, so a sweep over ``params.max_steps`` is exact, except
  where an environment penalises time (``penality_coeff``, 0 in every registered one), which
  reads Navix's own ``max_steps``.
* **Observations.** Navix's ``observation_fn`` by name with ``observation=`` (one of
  :data:`OBSERVATIONS`; default the environment's, ``symbolic``: uint8 ``[H, W, 3]``), declared
  as boxes as wide as their dtype (uint8: 0..255, as MiniGrid declares them): Navix's own
  bounds are narrower than what it observes.
* **Rendering.** Navix's own RGB picture of the whole grid (``navix.observations.rgb``, 8
  pixels a tile, in JAX), scaled up by the whole factor that brings its longer side nearest
  :data:`FRAME_SIDE` pixels (Navix-Empty-5x5: 240 × 240).
* **Keys.** The base class's ``reset(key)`` is Navix's ``reset(key)``; Navix's step takes no
  key (its randomness is in its state), so the step keys go unused.

Navix is imported only when an environment is built.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs import render
from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.spaces import Box, Discrete, Space
from jaxrl_fdg.envs.spec_spaces import unbounded_box
from jaxrl_fdg.envs.timestep_adapter import Reading, TimeStepAdapter, TimeStepParams

OBSERVATIONS = (
    "symbolic",
    "symbolic_first_person",
    "categorical",
    "categorical_first_person",
    "rgb",
    "rgb_first_person",
)
"""Navix's observation functions ``observation=`` accepts (``navix.observations``)."""


FRAME_SIDE = 256
"""The longest side of :meth:`NavixEnv.render`'s pictures, in pixels (unless Navix's own
picture is longer: it is then kept as it is)."""


class NavixEnv(TimeStepAdapter):
    """A Navix environment by id (the module docstring says what maps to what).

    Args:
      env_id: one of ``navix.registry()``.
      observation: one of :data:`OBSERVATIONS`; default the environment's own.
      **kwargs: to ``navix.make`` (``max_steps=...``).

    Raises:
      UnknownEnvironmentError: an id Navix does not register (close matches named).
      ValueError: an unknown ``observation``, or keywords ``navix.make`` refuses.
    """

    def __init__(self, env_id: str, observation: str | None = None, **kwargs: Any):
        import navix

        if env_id not in navix.registry():
            raise UnknownEnvironmentError(unknown("Navix environment", env_id, navix.registry()))
        if observation is not None:
            if observation not in OBSERVATIONS:
                raise ValueError(
                    f"observation={observation!r}; choose one of {', '.join(OBSERVATIONS)}"
                )
            kwargs["observation_fn"] = getattr(navix.observations, observation)
        try:
            env = navix.make(env_id, **kwargs)
        except TypeError as e:
            raise ValueError(f"navix cannot make {env_id!r} with {kwargs}: {e}") from None
        self._env = env
        self._default = TimeStepParams(jnp.int32(env.max_steps))
        self.env_id = env_id
        super().__init__(f"navix-{env_id}")

    @property
    def navix_env(self) -> Any:
        """The wrapped Navix environment."""
        return self._env

    @property
    def default_params(self) -> TimeStepParams:
        """The time limit: Navix's ``max_steps``."""
        return self._default

    def render(self, state: Any, params: Any) -> jax.Array:
        """Navix's RGB picture of the whole grid (``navix.observations.rgb``), enlarged."""
        del params
        from navix.observations import rgb

        image = rgb(state.env.state)  # the Timestep's State
        return render.enlarge(jnp.asarray(image, jnp.uint8), FRAME_SIDE)

    def _reset(self, key: jax.Array, params: Any) -> tuple[Any, Reading]:
        timestep = self._env.reset(key)
        false = jnp.zeros((), bool)
        return timestep, Reading(timestep.observation, timestep.reward, false, false, {})

    def _step(self, key, state, action, params):
        del key  # Navix steps from the key in its state
        timestep = self._env._step(state, action)  # its step without the auto-reset
        last = timestep.step_type >= 2  # termination (2), or termination and truncation (3)
        false = jnp.zeros((), bool)
        return timestep, Reading(timestep.observation, timestep.reward, last, false, {})

    def _raw_observation_space(self, params: Any) -> Space:
        """Navix's observation space, as wide as its dtype where it is integral: Navix's own
        bounds are too narrow (its symbolic observation holds object ids up to 10 in a space
        of 9 values), so they are not kept; MiniGrid declares 0..255 too."""
        space = navix_space(self._env.observation_space)
        if isinstance(space, Box) and jnp.issubdtype(space.dtype, jnp.integer):
            return unbounded_box(space.shape, space.dtype)
        return space

    def _raw_action_space(self, params: Any) -> Space:
        return navix_space(self._env.action_space)


def make_navix(env_id: str, **overrides: Any) -> tuple[NavixEnv, TimeStepParams]:
    """``(environment, params)`` of Navix ``env_id``; ``overrides`` as :class:`NavixEnv`'s.

    >>> env, params = make_navix("Navix-Empty-5x5-v0", max_steps=50)
    """
    env = NavixEnv(env_id, **overrides)
    return env, env.default_params


def navix_space(space: Any) -> Space:
    """A Navix space as ours: ``Discrete`` of shape ``()`` a ``Discrete``, of a shape a
    ``Box`` of its bounds and dtype; ``Continuous`` a ``Box``."""
    shape = tuple(space.shape)
    dtype = jnp.dtype(space.dtype)
    if type(space).__name__ == "Discrete" and shape == ():
        return Discrete(int(space.maximum) - int(space.minimum) + 1, dtype)
    low, high = (
        jnp.broadcast_to(jnp.asarray(b, dtype), shape) for b in (space.minimum, space.maximum)
    )
    return Box(low, high, shape, dtype)

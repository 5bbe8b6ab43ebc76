"""Craftax behind this package's :class:`Environment` API: ``craftax/<id>``.

Craftax (Matthews et al. 2024) is a JAX rewrite of Crafter with the gymnax API, so
:class:`CraftaxEnv` is :class:`~jaxrl_fdg.envs.gymnax_adapter.GymnaxApiEnv` around Craftax's
environment *without* its own auto-reset (``make_craftax_env_from_name(id, auto_reset=False)``),
plus what Craftax adds:

* **Ids.** :data:`CRAFTAX_IDS`: ``Craftax-Classic-Symbolic-v1`` (float32 ``[1345]``, 17
  actions), ``Craftax-Classic-Pixels-v1`` (float32 ``[63, 63, 3]``), ``Craftax-Symbolic-v1``
  (float32 ``[8268]``, 43 actions) and ``Craftax-Pixels-v1`` (float32 ``[130, 110, 3]``),
  observations in [0, 1] as Craftax declares them.
* **Time limit.** Craftax's ``step_env`` ends an episode when the player dies, when the boss is
  beaten (full Craftax), or when ``state.timestep`` reaches ``params.max_timesteps`` (10,000
  in Classic, 100,000 in full Craftax), all as one ``done``. The adapter steps Craftax with
  ``max_timesteps`` at the largest int32 (``limit_in_done``), so Craftax's ``done`` is the
  MDP's own end and becomes ``terminated``; the base class applies the limit,
  ``params.max_steps`` being ``max_timesteps`` itself (``state.timestep`` starts at 0 and
  counts steps, as the base class does), and reports it as ``truncated``, bootstrapped. A death
  on the limit's step is ``terminated`` and ``truncated`` both. ``max_timesteps`` is read
  nowhere else in Craftax, so nothing else changes.
* **Achievements.** What the agent unlocked so far in the episode (``state.achievements``: 22
  in Classic, 67 in full Craftax) is the environment's :meth:`info_env`. By default one float32
  key per achievement, ``achievement_<name>`` (``achievement_collect_wood``), 1.0 once
  unlocked: the run's metrics average info over the episodes that end on a step, so each key
  reads as the success rate of that achievement, the figure Craftax's paper reports, under a
  name a logger shows as is. ``achievements="vector"`` gives one float32 ``[22]`` (or
  ``[67]``) key ``achievements`` instead (in ``Achievement`` enum order), ``"none"`` no info.
* **Rendering.** :meth:`CraftaxEnv.render` is Craftax's own JAX pixel renderer
  (``make_craftax_pixel_renderer``, Classic's or full Craftax's) at 16 pixels a block, Craftax's
  ``BLOCK_PIXEL_SIZE_IMG``: the player's view and inventory, 144 × 144 in Classic, 208 × 176 in
  full Craftax, for every id (Symbolic ones too). The renderer is built at the first render,
  not with the environment: building it loads Craftax's textures.
* **Keys.** As gymnax: the base class's ``reset(key)`` is Craftax's ``reset(key)``, and its
  ``step`` steps with ``split(key)[0]`` and resets with ``split(key)[1]``, as Craftax's
  ``auto_reset=True`` environment does.

**Params** are :class:`~jaxrl_fdg.envs.gymnax_adapter.GymnaxParams` around Craftax's
``EnvParams``; :func:`with_params` replaces its fields (``max_steps`` is ``max_timesteps``).
Craftax is imported only when an environment is built. Building a Pixels id the first time
processes Craftax's textures (a minute or more; Craftax caches them).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.gymnax_adapter import GymnaxApiEnv, GymnaxParams, replace_fields

CRAFTAX_IDS = (
    "Craftax-Classic-Symbolic-v1",
    "Craftax-Classic-Pixels-v1",
    "Craftax-Symbolic-v1",
    "Craftax-Pixels-v1",
)
"""The ids ``craftax/<id>`` accepts (Craftax's own names)."""

BLOCK_PIXELS = 16
"""Pixels a side of one block in :meth:`CraftaxEnv.render`: Craftax's ``BLOCK_PIXEL_SIZE_IMG``,
one of the sizes whose textures Craftax keeps processed (7 or 10, 16, 64)."""

ACHIEVEMENTS = ("each", "vector", "none")
"""How :class:`CraftaxEnv` reports achievements: one key per achievement, one vector, none."""


def check_craftax_id(env_id: str) -> None:
    """Raise :class:`UnknownEnvironmentError` unless ``env_id`` is one of :data:`CRAFTAX_IDS`
    (without importing Craftax)."""
    if env_id not in CRAFTAX_IDS:
        raise UnknownEnvironmentError(unknown("Craftax environment", env_id, CRAFTAX_IDS))


class CraftaxEnv(GymnaxApiEnv):
    """A Craftax environment by id: the gymnax-API adapter with Craftax's time limit split from
    its ``done`` and its achievements as info (the module docstring says how).

    Args:
      env_id: one of :data:`CRAFTAX_IDS`.
      achievements: ``"each"`` (default), ``"vector"`` or ``"none"`` (:data:`ACHIEVEMENTS`).

    Raises:
      UnknownEnvironmentError: ``env_id`` is not a Craftax id (the message lists them).
      ValueError: ``achievements`` is not one of :data:`ACHIEVEMENTS`.
    """

    def __init__(self, env_id: str, achievements: str = "each"):
        check_craftax_id(env_id)
        if achievements not in ACHIEVEMENTS:
            raise ValueError(
                f"achievements={achievements!r}; choose one of {', '.join(ACHIEVEMENTS)}"
            )
        from craftax.craftax_env import make_craftax_env_from_name

        env = make_craftax_env_from_name(env_id, auto_reset=False)
        self.env_id = env_id
        self.achievements = achievements
        self.achievement_names = _achievement_names(env_id)
        self._pixels: Any = None  # Craftax's pixel renderer, built at the first render
        super().__init__(
            env, name=f"craftax-{env_id}", time_limit="max_timesteps", limit_in_done=True
        )

    def info_env(self, state: Any, params: GymnaxParams) -> dict[str, jax.Array]:
        """The achievements unlocked so far in the episode, as float32 (1.0: unlocked)."""
        del params
        unlocked = jnp.asarray(state.achievements, jnp.float32)
        if self.achievements == "vector":
            return {"achievements": unlocked}
        if self.achievements == "none":
            return {}
        return {f"achievement_{n}": unlocked[i] for i, n in enumerate(self.achievement_names)}

    @property
    def has_info(self) -> bool:
        return self.achievements != "none"

    def render(self, state: Any, params: GymnaxParams) -> jax.Array:
        """Craftax's own pixel rendering of ``state`` (:data:`BLOCK_PIXELS` a block), as uint8."""
        del params
        if self._pixels is None:
            if "Classic" in self.env_id:
                from craftax.craftax_classic.renderer import make_craftax_pixel_renderer
            else:
                from craftax.craftax.renderer import make_craftax_pixel_renderer
            # Built where it may be traced (the first render is often inside a jit): Craftax
            # keeps the textures it loads in a global cache, which must hold arrays, not the
            # tracers of this trace.
            with jax.ensure_compile_time_eval():
                self._pixels = make_craftax_pixel_renderer(BLOCK_PIXELS)
        pixels = self._pixels(state)  # float32 in [0, 255]
        return jnp.clip(jnp.round(pixels), 0, 255).astype(jnp.uint8)


def make_craftax(
    env_id: str, achievements: str = "each", **overrides: Any
) -> tuple[CraftaxEnv, GymnaxParams]:
    """``(environment, params)`` of Craftax ``env_id``; ``overrides`` replace fields of
    Craftax's params (``max_steps`` is ``max_timesteps``).

    >>> env, params = make_craftax("Craftax-Classic-Symbolic-v1", max_steps=1000)
    """
    env = CraftaxEnv(env_id, achievements)
    return env, with_params(env.default_params, **overrides)


def with_params(params: GymnaxParams, **overrides: Any) -> GymnaxParams:
    """``params`` with fields of Craftax's ``EnvParams`` replaced (``day_length=...``);
    ``max_steps`` is ``max_timesteps``.

    Raises:
      ValueError: a name that is no field of Craftax's params (the message lists them).
    """
    return replace_fields(params, overrides, "Craftax")


def _achievement_names(env_id: str) -> tuple[str, ...]:
    """The achievements of Classic or full Craftax, lower case, in their enum's order (the
    order of ``state.achievements``)."""
    if "Classic" in env_id:
        from craftax.craftax_classic.constants import Achievement
    else:
        from craftax.craftax.constants import Achievement
    members = sorted(Achievement, key=lambda a: a.value)
    return tuple(a.name.lower() for a in members)

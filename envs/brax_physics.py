"""Sweeps over Brax physics: systems with changed fields, and batches of them for ``jax.vmap``.

A :class:`~jaxrl_fdg.envs.brax_adapter.BraxEnv` runs with the system in its params, so a sweep
over physics is a ``jax.vmap`` over params:

>>> env = make_brax("inverted_pendulum")
>>> params = env.default_params
>>> light = with_physics(params, gravity=(0.0, 0.0, -1.62))  # one changed system
>>> finer = with_system(params, {"opt.timestep": 0.002})  # any field, by its dotted path
>>> gs = jnp.linspace(-12.0, -6.0, 8)
>>> updates = jax.vmap(lambda g: physics_updates(params.sys, gravity=(0.0, 0.0, g)))(gs)
>>> swept, axes = sweep(params, updates)  # 8 systems: a leading axis on the swept fields only
>>> step = jax.vmap(env.step, in_axes=(0, 0, 0, axes))  # lane i steps with system i

:func:`sweep` batches only the swept fields and returns the ``in_axes`` that shares the rest
between lanes (as Brax's ``DomainRandomizationVmapWrapper`` does); ``jax.vmap`` over a function
returning params batches every leaf instead, which also works but copies the whole system per
lane. :func:`physics_updates` knows where each backend keeps gravity, masses and friction (MJX
reads ``opt.gravity``, ``body_mass``, ``body_inertia``; Brax's pipelines ``gravity`` and
``link.inertia``; both ``geom_friction``) and sets both. Constants MuJoCo derives when it compiles
a model (``body_subtreemass``, ``dof_invweight0``, ...) are not recomputed, as in Brax's own domain
randomisation. Keyword arguments such as ``ctrl_cost_weight`` or ``terminate_when_unhealthy`` are
environment settings, not system fields: they go to Brax's constructor through
``BraxEnv(name, backend, **kwargs)`` and cannot be swept.

Nothing here imports Brax: the functions only read and replace fields of a system they are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxrl_fdg.envs.brax_adapter import BraxParams

__all__ = ["physics_updates", "sweep", "with_physics", "with_system"]


def with_system(params: BraxParams, updates: Mapping[str, Any]) -> BraxParams:
    """``params`` with fields of its system replaced, each named by its dotted path.

    >>> params = with_system(env.default_params, {"opt.timestep": 0.002, "body_mass": masses})

    Paths are attribute paths into ``brax.base.System`` (MJX's ``Model`` fields such as
    ``opt.gravity``, ``body_mass``, ``geom_friction``, ``actuator_gear``, and Brax's own such as
    ``gravity`` or ``link.inertia.mass``). Each value is cast to the dtype of the field it replaces
    and must have its shape, so the result runs in the same compiled step as the original.

    Raises:
      ValueError: a path that names no field, or a value of another shape.
    """
    sys = params.sys
    for path, value in updates.items():
        old = _field(sys, path)
        new = jnp.asarray(value, dtype=jnp.result_type(old))
        if new.shape != jnp.shape(old):
            raise ValueError(
                f"system field {path!r} has shape {jnp.shape(old)}; got a value of shape "
                f"{new.shape} (a batch of values goes through sweep)"
            )
        sys = _replace_field(sys, path.split("."), _placed_like(new, old))
    return params.replace(sys=sys)


def physics_updates(
    sys: Any,
    *,
    gravity: Any = None,
    mass_scale: Any = None,
    friction_scale: Any = None,
) -> dict[str, jax.Array]:
    """The system fields (dotted paths to new values) for common physics changes, on any backend.

    MJX and Brax's own pipelines keep these quantities in different fields of the same
    ``System``; both are set, so the result means the same on every backend.

    Args:
      sys: the system the changes start from (``params.sys``).
      gravity: the gravity vector, shape ``(3,)`` (MuJoCo's default is ``(0, 0, -9.81)``):
        ``opt.gravity`` (MJX) and ``gravity`` (Brax's pipelines).
      mass_scale: a factor on body masses and inertias, a scalar or one per MuJoCo body
        (``sys.body_mass.shape``, the world body first): ``body_mass`` and ``body_inertia``
        (MJX), ``link.inertia.mass`` and ``link.inertia.i`` (Brax's pipelines, which have no
        world body). Scaling inertia with mass keeps each body's shape, as a change of density
        would.
      friction_scale: a factor on contact friction, a scalar or one per geom
        (``sys.geom_friction.shape[0]``): ``geom_friction``, which every backend's contacts
        read, and, for a scalar, ``pair_friction`` of explicit contact pairs.

    Returns:
      ``{path: value}`` for :func:`with_system`; under ``jax.vmap`` over the arguments, a batch
      of them for :func:`sweep`.

    Raises:
      ValueError: a gravity that is not a 3-vector, or a per-geom ``friction_scale`` on a model
        with explicit contact pairs (whose friction belongs to a pair, not a geom).
    """
    updates: dict[str, jax.Array] = {}
    if gravity is not None:
        updates.update(_gravity_updates(sys, gravity))
    if mass_scale is not None:
        updates.update(_mass_updates(sys, mass_scale))
    if friction_scale is not None:
        updates.update(_friction_updates(sys, friction_scale))
    return updates


def _gravity_updates(sys: Any, gravity: Any) -> dict[str, jax.Array]:
    """``opt.gravity`` (MJX) and ``gravity`` (Brax's pipelines), both set to the 3-vector."""
    g = jnp.asarray(gravity, sys.opt.gravity.dtype)
    if g.shape != sys.opt.gravity.shape:
        raise ValueError(f"gravity is a vector of shape (3,); got shape {g.shape}")
    return {"opt.gravity": g, "gravity": g.astype(sys.gravity.dtype)}


def _mass_updates(sys: Any, mass_scale: Any) -> dict[str, jax.Array]:
    """Masses and inertias scaled per MuJoCo body; Brax's links skip the world body (index 0)."""
    scale = jnp.broadcast_to(jnp.asarray(mass_scale, sys.body_mass.dtype), sys.body_mass.shape)
    inertia = sys.link.inertia
    return {
        "body_mass": sys.body_mass * scale,
        "body_inertia": sys.body_inertia * scale[:, None],
        "link.inertia.mass": inertia.mass * scale[1:],
        "link.inertia.i": inertia.i * scale[1:, None, None],
    }


def _friction_updates(sys: Any, friction_scale: Any) -> dict[str, jax.Array]:
    """``geom_friction`` scaled per geom and, for a scalar scale, ``pair_friction`` too."""
    friction = sys.geom_friction
    scale = jnp.asarray(friction_scale, friction.dtype)
    num_pairs = sys.pair_friction.shape[0]
    if scale.ndim and num_pairs:
        raise ValueError(
            "a per-geom friction_scale cannot apply to explicit contact pairs "
            f"({num_pairs} here); scale pair_friction with with_system"
        )
    per_geom = jnp.broadcast_to(scale, friction.shape[:1])
    updates = {"geom_friction": friction * per_geom[:, None]}
    if num_pairs:
        updates["pair_friction"] = sys.pair_friction * scale
    return updates


def with_physics(
    params: BraxParams,
    *,
    gravity: Any = None,
    mass_scale: Any = None,
    friction_scale: Any = None,
) -> BraxParams:
    """``params`` with gravity, masses or friction changed on every backend (arguments as in
    :func:`physics_updates`).

    >>> moon = with_physics(env.default_params, gravity=(0.0, 0.0, -1.62), mass_scale=2.0)
    """
    updates = physics_updates(
        params.sys, gravity=gravity, mass_scale=mass_scale, friction_scale=friction_scale
    )
    return with_system(params, updates)


def sweep(params: BraxParams, updates: Mapping[str, Any]) -> tuple[BraxParams, BraxParams]:
    """A batch of systems that differ in the fields of ``updates``, and the ``in_axes`` for it.

    Each value in ``updates`` is a batch of values for the field its dotted path names (as in
    :func:`with_system`), with one leading axis of the same length ``n`` for all. Returns
    ``(swept, axes)``: ``swept`` holds those batches and the rest of ``params`` unchanged, and
    ``axes`` is a pytree prefix of it for ``jax.vmap``'s ``in_axes``, ``0`` at the swept fields
    and ``None`` elsewhere, so the unswept fields are shared by the ``n`` lanes, not copied.

    >>> gs = jnp.array([-9.81, -5.0, -1.62])
    >>> updates = jax.vmap(lambda g: physics_updates(params.sys, gravity=(0.0, 0.0, g)))(gs)
    >>> swept, axes = sweep(params, updates)
    >>> states, ts = jax.vmap(env.reset, in_axes=(0, axes))(jax.random.split(key, 3), swept)

    Raises:
      ValueError: no updates, a path that names no field, a value whose trailing shape is not
        the field's, or batches of different lengths.
    """
    if not updates:
        raise ValueError("sweep needs at least one field to sweep over")
    sys, lengths = params.sys, set()
    for path, values in updates.items():
        old = _field(sys, path)
        batch = jnp.asarray(values, dtype=jnp.result_type(old))
        if batch.shape[1:] != jnp.shape(old) or batch.ndim != jnp.ndim(old) + 1:
            raise ValueError(
                f"sweep over {path!r}: expected values of shape (n, *{jnp.shape(old)}), "
                f"got {batch.shape}"
            )
        lengths.add(batch.shape[0])
        sys = _replace_field(sys, path.split("."), batch)
    if len(lengths) > 1:
        raise ValueError(f"sweep values differ in batch length: {sorted(lengths)}")
    unswept = jax.tree.map(lambda _: None, params.sys)
    sys_axes = unswept
    for path in updates:
        sys_axes = _replace_field(sys_axes, path.split("."), 0)
    return params.replace(sys=sys), params.replace(sys=sys_axes)


def _placed_like(new: jax.Array, old: Any) -> jax.Array:
    """``new`` on ``old``'s devices when ``old`` is a concrete array committed to them.

    A Brax system's arrays are committed to a device; a fresh ``jnp.asarray`` is not, and jit
    compiles separately for committed and uncommitted arguments. Matching placement keeps a
    changed system on the compiled step of the original one. Tracers (under ``jax.vmap`` or
    ``jax.jit``) have no placement and pass through.
    """
    if isinstance(old, jax.Array) and not isinstance(old, jax.core.Tracer) and old.committed:
        return jax.device_put(new, old.sharding)
    return new


def _field(node: Any, path: str) -> Any:
    """The field of a system at a dotted ``path``, or a ValueError naming the path."""
    for name in path.split("."):
        if not hasattr(node, "replace") or not hasattr(node, name):
            raise ValueError(f"the Brax system has no field {path!r}")
        node = getattr(node, name)
    if isinstance(node, (dict, list, tuple)) or hasattr(node, "replace"):
        raise ValueError(f"{path!r} names a group of system fields, not one array field")
    return node


def _replace_field(node: Any, names: list[str], value: Any) -> Any:
    """A copy of the dataclass tree ``node`` with the field at path ``names`` set to ``value``."""
    head, *rest = names
    child = value if not rest else _replace_field(getattr(node, head), rest, value)
    return node.replace(**{head: child})

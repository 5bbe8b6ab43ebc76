"""Brax environments (MJX by default) behind this package's :class:`Environment` API.

``BraxEnv(name, backend)`` wraps one of Brax's registered environments (``brax.envs``): reset and
step are Brax's own ``env.reset``/``env.step``, and nothing else. Brax's ``EpisodeWrapper`` and
``AutoResetWrapper`` are deliberately *not* used: the time limit and the auto-reset come from
:class:`~jaxrl_fdg.envs.base.Environment`, once, as for every other environment here.

* ``terminated`` is Brax's ``done`` of the step, which unwrapped Brax environments set only on a
  real termination: ``ant``, ``hopper``, ``walker2d`` and ``humanoid`` when unhealthy (unless
  built with ``terminate_when_unhealthy=False``), ``inverted_pendulum`` when the pole passes
  0.2 rad, ``inverted_double_pendulum`` when the tip drops below 1 m; ``halfcheetah``,
  ``reacher``, ``pusher``, ``swimmer`` and ``humanoidstandup`` never terminate.
* ``truncated`` comes from the base class at ``params.max_steps`` (default 1000, Brax's
  conventional episode length). The step counter counts environment steps, each of which is
  Brax's ``n_frames`` physics steps.
* Actions are ``Box(-1, 1, (action_size,))``, Brax's convention. They are passed to Brax
  unchanged, not clipped, so a step equals Brax's own step (MuJoCo clamps controls of
  ``ctrllimited`` actuators itself; ``inverted_pendulum`` rescales [-1, 1] to its ctrl range).
* Observations are ``Box(-inf, inf, (observation_size,))``; only environments with a flat array
  observation are supported.

**Params** are a pytree (:class:`BraxParams`): the Brax system ``sys`` (a ``brax.base.System``,
which is an MJX ``Model`` extended with the fields Brax's own pipelines read; every pytree leaf
is an array) and ``max_steps``, a static field as in the classic environments. ``reset_env`` and
``step_env`` run the wrapped Brax environment *with* ``params.sys`` in place of the system it was
built with, so everything Brax reads from ``self.sys`` (the pipeline's physics, ``init_q``,
actuator ranges, ...) comes from params, and a sweep over physics is a ``jax.vmap`` over params:

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

**Backends.** ``"mjx"`` (the default here; Brax's own classes default to ``"generalized"``) runs
MuJoCo XLA. ``"generalized"``, ``"positional"`` and ``"spring"`` are Brax's own pipelines, which
Brax's model loader warns are no longer actively maintained (that warning is silenced here; the
pipelines still run). Which backends an environment supports follows Brax's source: every
environment accepts all four except ``swimmer``, which is generalized-only (and, with Brax 0.14.2
on JAX 0.10, fails on its first step; see :data:`BRAX_ENVS`). The backends are not
interchangeable physics: Brax changes ``n_frames``, the timestep and (for ant under
``positional``) actuator gear per backend, so episodes differ between backends.

Brax is imported lazily, inside :class:`BraxEnv`, so ``import jaxrl_fdg.envs`` does not pay for
importing Brax and MuJoCo.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.spaces import Box

BACKENDS: tuple[str, ...] = ("mjx", "generalized", "positional", "spring")
"""Brax physics backends, the default first."""

_ALL = BACKENDS
# Backends each Brax environment supports, from Brax 0.14's source: swimmer raises on anything
# but generalized; the rest pass ``backend`` on to ``PipelineEnv``, which takes all four (each of
# those pairs was stepped through this adapter, see BRAX_ENVS). Environments Brax knows but this
# table does not (added with ``brax.envs.register_environment``) get any backend in BACKENDS.
SUPPORTED_BACKENDS: dict[str, tuple[str, ...]] = {
    "ant": _ALL,
    "halfcheetah": _ALL,
    "hopper": _ALL,
    "humanoid": _ALL,
    "humanoidstandup": _ALL,
    "inverted_double_pendulum": _ALL,
    "inverted_pendulum": _ALL,
    "pusher": _ALL,
    "reacher": _ALL,
    "swimmer": ("generalized",),
    "walker2d": _ALL,
}

# Not in BRAX_ENVS: Brax 0.14.2's swimmer (its only backend, generalized, enables the fluid
# model) calls ``jnp.clip(..., a_min=...)``, a keyword JAX 0.10 removed, so it fails on the
# first step. It is left constructible in case a newer Brax fixes that.
BRAX_ENVS: tuple[str, ...] = tuple(name for name in sorted(SUPPORTED_BACKENDS) if name != "swimmer")
"""Brax environment names verified to reset and step through this adapter on every backend."""

# Brax's test-only "fast" environment has no physics system and a dict observation.
_UNSUPPORTED = {"fast": "a unit-test stub without a physics system"}


@struct.dataclass
class BraxParams:
    """Parameters of a Brax environment: its physics system and the episode length.

    Attributes:
      sys: the ``brax.base.System`` that reset and step run with; a pytree of arrays, so it can be
        batched and swept (see :func:`with_system`, :func:`with_physics` and :func:`sweep`). Its
        leaves must keep the shapes of the environment's own system
        (``BraxEnv.brax_env.sys``, which ``default_params`` holds).
      max_steps: the time limit, in environment steps (static: changing it recompiles).
    """

    sys: Any  # brax.base.System; typed loosely so this module never imports Brax
    max_steps: int = struct.field(pytree_node=False, default=1000)


class BraxEnvState(NamedTuple):
    """Our environment state: Brax's ``State`` (pipeline state, obs, reward, done, metrics...)."""

    brax_state: Any  # brax.envs.base.State; typed loosely so this module never imports Brax


class BraxEnv(Environment[BraxEnvState, BraxParams]):
    """A Brax environment by name, with time limit and auto-reset from the base class.

    Args:
      env_name: a Brax environment name (``brax.envs.get_environment``), e.g. ``"ant"``.
      backend: physics backend, one of :data:`BACKENDS`; ``"mjx"`` by default.
      **kwargs: passed to the Brax environment's constructor (e.g. ``terminate_when_unhealthy``).

    Raises:
      UnknownEnvironmentError: unknown environment name (a ValueError naming close matches).
      ValueError: unknown backend, or a backend the environment does not support (the message
        names the valid choices).
    """

    def __init__(self, env_name: str, backend: str = "mjx", **kwargs: Any):
        if backend not in BACKENDS:
            raise ValueError(
                f"unknown Brax backend {backend!r}; choose one of {', '.join(BACKENDS)}"
            )
        # Imported here, not at module level: Brax pulls in MuJoCo and takes about a second.
        import brax.envs

        known = tuple(sorted(set(brax.envs._envs) - set(_UNSUPPORTED)))
        if env_name in _UNSUPPORTED:
            raise UnknownEnvironmentError(
                f"unsupported Brax environment {env_name!r} ({_UNSUPPORTED[env_name]}); "
                f"choose one of {', '.join(known)}"
            )
        if env_name not in known:
            raise UnknownEnvironmentError(unknown("Brax environment", env_name, known))
        valid = SUPPORTED_BACKENDS.get(env_name, BACKENDS)
        if backend not in valid:
            raise ValueError(
                f"Brax environment {env_name!r} does not support backend {backend!r}; "
                f"valid backends: {', '.join(valid)}"
            )

        with warnings.catch_warnings():
            # Every Brax model load warns that Brax's pipelines are unmaintained; the backend
            # choice above is where that matters, so do not repeat it on each construction.
            warnings.filterwarnings("ignore", message="Brax System, piplines", category=UserWarning)
            self._brax = brax.envs.get_environment(env_name, backend=backend, **kwargs)

        self.env_name = env_name
        self.backend = backend
        self.name = f"brax-{env_name}-{backend}"
        # Shapes and dtypes of a reset state, traced but not compiled (Brax's own
        # ``observation_size`` runs an eager reset). Steps are cast to these dtypes so that a
        # stepped state and a reset state are interchangeable in jnp.where and scan carries.
        self._template = jax.eval_shape(self._brax.reset, jax.random.key(0))
        obs = self._template.obs
        if not isinstance(obs, jax.ShapeDtypeStruct) or len(obs.shape) != 1:
            raise ValueError(
                f"Brax environment {env_name!r} has a non-flat observation "
                f"({jax.tree.map(lambda x: x.shape, obs)}); only flat arrays are supported"
            )
        self.observation_size: int = int(obs.shape[0])
        self.action_size: int = int(self._brax.action_size)

    @property
    def brax_env(self) -> Any:
        """The wrapped Brax environment (``brax.envs.base.Env``), with no Brax wrapper around it."""
        return self._brax

    @property
    def default_params(self) -> BraxParams:
        """The system Brax built the environment with, and 1000-step episodes."""
        return BraxParams(sys=self._brax.sys)

    def reset_env(self, key: jax.Array, params: BraxParams) -> tuple[BraxEnvState, jax.Array]:
        state = self._conform(self._brax_with(params.sys).reset(key))
        return BraxEnvState(state), state.obs

    def step_env(
        self, key: jax.Array, state: BraxEnvState, action: jax.Array, params: BraxParams
    ) -> tuple[BraxEnvState, jax.Array, jax.Array, jax.Array]:
        del key  # Brax's step is deterministic given its state
        brax_env = self._brax_with(params.sys)
        action = jnp.asarray(action, jnp.float32)
        if action.shape != (self.action_size,):
            raise ValueError(
                f"{self.name} takes actions of shape ({self.action_size},); got {action.shape}"
            )
        prev = state.brax_state
        # Some Brax envs (ant, humanoid, ...) update ``state.metrics`` in place; fresh dicts keep
        # the caller's state unchanged when this runs outside jit.
        prev = prev.replace(metrics=dict(prev.metrics), info=dict(prev.info))
        new = self._conform(brax_env.step(prev, action))
        terminated = new.done != 0
        return BraxEnvState(new), new.obs, new.reward, terminated

    def observation_space(self, params: BraxParams) -> Box:
        return Box(-jnp.inf, jnp.inf, (self.observation_size,), jnp.float32)

    def action_space(self, params: BraxParams) -> Box:
        return Box(-1.0, 1.0, (self.action_size,), jnp.float32)

    def _brax_with(self, sys: Any) -> Any:
        """The wrapped Brax environment running on ``sys``: a shallow copy with ``sys`` replaced.

        Brax environments read their system from ``self.sys`` throughout (``pipeline_init`` and
        ``pipeline_step`` pass it to the physics pipeline; ``reset`` and ``step`` read
        ``init_q``, actuator ranges, link inertia, ...). A copy, rather than assigning
        ``sys`` on the shared environment for the duration of a call, leaves the wrapped
        environment untouched, so concurrent or nested traces cannot see each other's system.
        """
        if sys is self._brax.sys:
            return self._brax
        self._check_system(sys)
        brax_env = copy.copy(self._brax)
        brax_env.sys = sys
        return brax_env

    def _check_system(self, sys: Any) -> None:
        """Refuse a system whose leaves differ in number or shape from the environment's own:
        most often a batched ``params.sys`` passed without a ``jax.vmap`` over it."""
        own = jax.tree.leaves(self._brax.sys)
        got = jax.tree.leaves(sys)
        if len(got) != len(own):
            raise ValueError(
                f"{self.name}: params.sys has {len(got)} leaves; the environment's system has "
                f"{len(own)}"
            )
        for mine, theirs in zip(got, own, strict=True):
            if jnp.shape(mine) != jnp.shape(theirs):
                raise ValueError(
                    f"{self.name}: params.sys has a leaf of shape {jnp.shape(mine)} where the "
                    f"environment's system has {jnp.shape(theirs)}; a batch of systems needs a "
                    "jax.vmap over params (see brax_adapter.sweep)"
                )

    def _conform(self, brax_state: Any) -> Any:
        """Cast every leaf to the reset state's dtype (Brax returns Python floats, e.g. reward)."""
        got = jax.tree.structure(brax_state)
        want = jax.tree.structure(self._template)
        if got != want:
            # The base class selects leaf-wise between a stepped and a reset state.
            raise ValueError(
                f"{self.name}: Brax's stepped state differs in structure from its reset state; "
                f"got {str(got)[:300]}..., expected {str(want)[:300]}..."
            )
        return jax.tree.map(_cast_like, brax_state, self._template)


def _cast_like(x: Any, ref: jax.ShapeDtypeStruct) -> Any:
    # Leaves already of the right dtype (all arrays, PRNG keys included) pass through untouched.
    if getattr(x, "dtype", None) == ref.dtype:
        return x
    return jnp.asarray(x, ref.dtype)


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
        g = jnp.asarray(gravity, sys.opt.gravity.dtype)
        if g.shape != sys.opt.gravity.shape:
            raise ValueError(f"gravity is a vector of shape (3,); got shape {g.shape}")
        updates["opt.gravity"] = g
        updates["gravity"] = g.astype(sys.gravity.dtype)
    if mass_scale is not None:
        scale = jnp.broadcast_to(jnp.asarray(mass_scale, sys.body_mass.dtype), sys.body_mass.shape)
        updates["body_mass"] = sys.body_mass * scale
        updates["body_inertia"] = sys.body_inertia * scale[:, None]
        inertia = sys.link.inertia
        updates["link.inertia.mass"] = inertia.mass * scale[1:]
        updates["link.inertia.i"] = inertia.i * scale[1:, None, None]
    if friction_scale is not None:
        friction = sys.geom_friction
        scale = jnp.asarray(friction_scale, friction.dtype)
        num_pairs = sys.pair_friction.shape[0]
        if scale.ndim and num_pairs:
            raise ValueError(
                "a per-geom friction_scale cannot apply to explicit contact pairs "
                f"({num_pairs} here); scale pair_friction with with_system"
            )
        per_geom = jnp.broadcast_to(scale, friction.shape[:1])
        updates["geom_friction"] = friction * per_geom[:, None]
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


def make_brax(name: str, backend: str = "mjx", **kwargs: Any) -> BraxEnv:
    """Build :class:`BraxEnv` ``name`` on ``backend``; ``kwargs`` go to Brax's constructor.

    >>> env = make_brax("ant")  # MJX physics, terminates when unhealthy, 1000-step episodes
    >>> state, ts = env.reset(jax.random.key(0))
    """
    return BraxEnv(name, backend, **kwargs)

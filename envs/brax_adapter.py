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

**Params** are a pytree (:class:`BraxParams`) holding only ``max_steps``, a static field as in the
classic environments. Brax's own system parameters (masses, friction, gear, timestep, ...) live
in the wrapped environment's ``sys`` and are **not** part of ``params`` in this version, so they
cannot be swept with ``jax.vmap`` over params; change them by constructing another environment
(keyword arguments such as ``ctrl_cost_weight`` or ``terminate_when_unhealthy`` go to Brax's
constructor through ``BraxEnv(name, backend, **kwargs)``).

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

import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs.base import Environment
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
    """Parameters of a Brax environment: only the episode length (see the module docstring)."""

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
      ValueError: unknown environment name, unknown backend, or a backend the environment does
        not support (the message names the valid choices).
    """

    def __init__(self, env_name: str, backend: str = "mjx", **kwargs: Any):
        if backend not in BACKENDS:
            raise ValueError(
                f"unknown Brax backend {backend!r}; choose one of {', '.join(BACKENDS)}"
            )
        # Imported here, not at module level: Brax pulls in MuJoCo and takes about a second.
        import brax.envs

        known = tuple(sorted(set(brax.envs._envs) - set(_UNSUPPORTED)))
        if env_name in _UNSUPPORTED or env_name not in known:
            why = f" ({_UNSUPPORTED[env_name]})" if env_name in _UNSUPPORTED else ""
            raise ValueError(
                f"unknown or unsupported Brax environment {env_name!r}{why}; "
                f"choose one of {', '.join(known)}"
            )
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
        return BraxParams()

    def reset_env(self, key: jax.Array, params: BraxParams) -> tuple[BraxEnvState, jax.Array]:
        del params  # only max_steps, which the base class reads
        state = self._conform(self._brax.reset(key))
        return BraxEnvState(state), state.obs

    def step_env(
        self, key: jax.Array, state: BraxEnvState, action: jax.Array, params: BraxParams
    ) -> tuple[BraxEnvState, jax.Array, jax.Array, jax.Array]:
        del key, params  # Brax's step is deterministic given its state
        action = jnp.asarray(action, jnp.float32)
        if action.shape != (self.action_size,):
            raise ValueError(
                f"{self.name} takes actions of shape ({self.action_size},); got {action.shape}"
            )
        prev = state.brax_state
        # Some Brax envs (ant, humanoid, ...) update ``state.metrics`` in place; fresh dicts keep
        # the caller's state unchanged when this runs outside jit.
        prev = prev.replace(metrics=dict(prev.metrics), info=dict(prev.info))
        new = self._conform(self._brax.step(prev, action))
        terminated = new.done != 0
        return BraxEnvState(new), new.obs, new.reward, terminated

    def observation_space(self, params: BraxParams) -> Box:
        return Box(-jnp.inf, jnp.inf, (self.observation_size,), jnp.float32)

    def action_space(self, params: BraxParams) -> Box:
        return Box(-1.0, 1.0, (self.action_size,), jnp.float32)

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


def make_brax(name: str, backend: str = "mjx", **kwargs: Any) -> BraxEnv:
    """Build :class:`BraxEnv` ``name`` on ``backend``; ``kwargs`` go to Brax's constructor.

    >>> env = make_brax("ant")  # MJX physics, terminates when unhealthy, 1000-step episodes
    >>> state, ts = env.reset(jax.random.key(0))
    """
    return BraxEnv(name, backend, **kwargs)

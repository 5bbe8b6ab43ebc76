"""Brax environments (MJX by default) behind this package's :class:`Environment` API.

``BraxEnv(name, backend)`` wraps one of Brax's registered environments (``brax.envs``): reset and
step are Brax's own ``env.reset``/``env.step``, and nothing else. Brax's ``EpisodeWrapper`` and
``AutoResetWrapper`` are deliberately *not* used: the time limit and the auto-reset come from
:class:`~jaxrl_fdg.envs.base.Environment`, once, as for every other environment here. What the
auto-reset restarts from is the adapter's choice (``auto_reset``, :data:`AUTO_RESETS`): a fresh
reset, or the environment's first state as Brax's ``AutoResetWrapper`` restores it
(``--env-option auto_reset=first_state``).

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
actuator ranges, ...) comes from params, and a sweep over physics is a ``jax.vmap`` over params.
:mod:`~jaxrl_fdg.envs.brax_physics` (re-exported here) builds changed systems
(:func:`with_physics`, :func:`with_system`) and batches of them (:func:`sweep`).

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
from collections.abc import Iterable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.brax_physics import physics_updates, sweep, with_physics, with_system
from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.spaces import Box

__all__ = [
    "AUTO_RESETS",
    "BACKENDS",
    "BRAX_ENVS",
    "SUPPORTED_BACKENDS",
    "BraxEnv",
    "BraxEnvState",
    "BraxParams",
    "make_brax",
    "physics_updates",
    "sweep",
    "with_physics",
    "with_system",
]

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


AUTO_RESETS: tuple[str, ...] = ("fresh", "first_state")
"""How a finished episode restarts: ``fresh``, a new reset from a new key (the default);
``first_state``, the state this environment's first episode started from, as Brax's
``AutoResetWrapper`` does in Brax's own trainers."""


class BraxEnvState(NamedTuple):
    """Our environment state: Brax's ``State`` (pipeline state, obs, reward, done, metrics...),
    and with ``auto_reset="first_state"`` the state of the environment's first reset."""

    brax_state: Any  # brax.envs.base.State; typed loosely so this module never imports Brax
    first: Any = None


class BraxEnv(Environment[BraxEnvState, BraxParams]):
    """A Brax environment by name, with time limit and auto-reset from the base class.

    Args:
      env_name: a Brax environment name (``brax.envs.get_environment``), e.g. ``"ant"``.
      backend: physics backend, one of :data:`BACKENDS`; ``"mjx"`` by default.
      auto_reset: how a finished episode restarts, one of :data:`AUTO_RESETS`. ``"fresh"``
        resets from a new key. ``"first_state"`` puts back the pipeline state and observation of
        the environment's first reset, as Brax's ``AutoResetWrapper`` does: no physics and no
        random numbers per restart (an MJX reset is a forward pass of the physics), but every
        episode of an environment starts from the same state, so the start states a run sees
        are only the ``num_envs`` drawn at its start. Reward, flags, metrics and ``info`` are the
        finished step's, as in Brax.
      solver_iterations, ls_iterations: MJX's constraint solver options ``opt.iterations``
        and ``opt.ls_iterations`` (the model's own by default; 100 and 50 for Brax's tasks),
        ``mjx`` backend only. The solver iterates until the batch's slowest environment
        converges, and every iteration runs all its line-search steps under ``vmap``, so fewer
        of each make every step cheaper once constraints are active, at some cost in accuracy
        (``benchmarks/brax_rollout_cost.py``); MuJoCo Playground's task models use 1–10
        iterations and line searches of 4–10 steps.
      **kwargs: passed to the Brax environment's constructor (e.g. ``terminate_when_unhealthy``).

    Raises:
      UnknownEnvironmentError: unknown environment name (a ValueError naming close matches).
      ValueError: unknown backend, or a backend the environment does not support (the message
        names the valid choices); a solver option that is not a positive integer, or one given
        for a backend other than ``mjx``.
    """

    def __init__(
        self,
        env_name: str,
        backend: str = "mjx",
        auto_reset: str = "fresh",
        solver_iterations: int | None = None,
        ls_iterations: int | None = None,
        **kwargs,
    ):
        if backend not in BACKENDS:
            raise ValueError(
                f"unknown Brax backend {backend!r}; choose one of {', '.join(BACKENDS)}"
            )
        if auto_reset not in AUTO_RESETS:
            raise ValueError(
                f"unknown auto_reset {auto_reset!r}; choose one of {', '.join(AUTO_RESETS)}"
            )
        solver = _solver_options(backend, solver_iterations, ls_iterations)
        self.auto_reset = auto_reset
        self.auto_reset_copies = auto_reset == "first_state"
        # Imported here, not at module level: Brax pulls in MuJoCo and takes about a second.
        import brax.envs

        _check_environment(env_name, backend, registered=brax.envs._envs)
        with warnings.catch_warnings():
            # Every Brax model load warns that Brax's pipelines are unmaintained; the backend
            # choice above is where that matters, so do not repeat it on each construction.
            warnings.filterwarnings("ignore", message="Brax System, piplines", category=UserWarning)
            self._brax = brax.envs.get_environment(env_name, backend=backend, **kwargs)
        if solver:  # the environment is this object's own: Brax builds a new one per call
            self._brax.sys = self._brax.sys.tree_replace(solver)

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
        return BraxEnvState(state, state if self.auto_reset_copies else None), state.obs

    def auto_reset_env(
        self, key: jax.Array, state: BraxEnvState, params: BraxParams
    ) -> tuple[BraxEnvState, jax.Array]:
        if not self.auto_reset_copies:
            return self.reset_env(key, params)
        first = state.first
        restarted = state.brax_state.replace(pipeline_state=first.pipeline_state, obs=first.obs)
        return BraxEnvState(restarted, first), first.obs

    def step_env(
        self, key: jax.Array, state: BraxEnvState, action: jax.Array, params: BraxParams
    ) -> tuple[BraxEnvState, jax.Array, jax.Array, jax.Array]:
        del key  # Brax's step is deterministic given its state
        brax_env = self._brax_with(params.sys)
        new = step_mjx(self.name, brax_env, state.brax_state, action, self._template)
        terminated = new.done != 0
        return BraxEnvState(new, state.first), new.obs, new.reward, terminated

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
        return conform(self.name, brax_state, self._template)


def _check_environment(env_name: str, backend: str, registered: Iterable[str]) -> None:
    """Refuse a name Brax does not register (or one we cannot run), or a backend the
    environment does not support; the messages name the valid choices."""
    known = tuple(sorted(set(registered) - set(_UNSUPPORTED)))
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


def _solver_options(backend: str, iterations: int | None, ls_iterations: int | None) -> dict:
    """``{"opt.iterations": ..., "opt.ls_iterations": ...}`` for the options given, checked."""
    given = {"solver_iterations": iterations, "ls_iterations": ls_iterations}
    for name, value in given.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if backend != "mjx":
            raise ValueError(
                f"{name} sets MJX's constraint solver; it applies to backend 'mjx' only, "
                f"got backend {backend!r}"
            )
    fields = {"solver_iterations": "opt.iterations", "ls_iterations": "opt.ls_iterations"}
    return {fields[name]: value for name, value in given.items() if value is not None}


def step_mjx(name: str, env: Any, state: Any, action: jax.Array, template: Any) -> Any:
    """``env.step(state, action)`` for an MJX-based environment (Brax, MuJoCo Playground): the
    action checked against the template's action size, the new state :func:`conform`-ed.

    Some environments (Brax's ant, humanoid, ...) update ``state.metrics`` and ``state.info`` in
    place; fresh dicts keep the caller's state unchanged when this runs outside jit.
    """
    action = jnp.asarray(action, jnp.float32)
    if action.shape != (env.action_size,):
        raise ValueError(f"{name} takes actions of shape ({env.action_size},); got {action.shape}")
    state = state.replace(metrics=dict(state.metrics), info=dict(state.info))
    return conform(name, env.step(state, action), template)


def conform(name: str, state: Any, template: Any) -> Any:
    """``state`` with every leaf cast to the dtype of ``template``'s (a reset state's shapes);
    MJX-based environments return Python floats, e.g. the reward, so that a stepped state and a
    reset state are interchangeable in ``jnp.where`` and scan carries.

    Raises:
      ValueError: ``state`` differs in structure from ``template`` (the base class selects
        leaf-wise between a stepped and a reset state).
    """
    got, want = jax.tree.structure(state), jax.tree.structure(template)
    if got != want:
        raise ValueError(
            f"{name}: the stepped state differs in structure from the reset state; "
            f"got {str(got)[:300]}..., expected {str(want)[:300]}..."
        )
    return jax.tree.map(_cast_like, state, template)


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

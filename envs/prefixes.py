"""Environment names with a prefix: ``brax/<env>[:<backend>]``, ``gym/<id>``, ``gymnax/<id>``,
``playground/<name>``, ``envpool/<task-id>``, ``craftax/<id>``, ``xminigrid/<id>``,
``navix/<id>``, ``jumanji/<id>``, ``jaxmarl/<name>``, and the generic
``gymnax-api/<module>:<factory>`` and ``timestep-api/<module>:<factory>``.

Each prefix names an adapter to another library's environments. :data:`ADAPTERS` is the table:
the prefix, what it gives, an example, the package it needs and how to install it, a cheap check
of the id and the builder. :func:`~jaxrl_fdg.envs.make` and
:func:`~jaxrl_fdg.envs.check_name` hand every name with a ``/`` that is not registered to
:func:`make` and :func:`check` here.

What ``**overrides`` mean, per prefix (for registered names they replace fields of the params):

* ``brax/``: ``max_steps`` sets the episode length in the params; ``auto_reset`` chooses how
  episodes restart (``fresh`` or ``first_state``, see ``brax_adapter.AUTO_RESETS``);
  ``solver_iterations`` and ``ls_iterations`` set MJX's constraint solver; any other keyword
  goes to Brax's environment constructor (e.g. ``terminate_when_unhealthy=False``).
* ``gym/``: keywords go to ``gymnasium.make`` (e.g. ``max_episode_steps=200``); params are None.
* ``gymnax/``: keywords replace fields of gymnax's own params (e.g. ``gravity=5.0``);
  ``max_steps`` is gymnax's ``max_steps_in_episode``.
* ``playground/``: ``max_steps`` sets the episode length in the params (default: the task's
  ``episode_length``); other keywords replace fields of the task's config (``impl`` is ``jax``
  unless given).
* ``envpool/``: keywords go to ``envpool.make_gymnasium`` (e.g. ``episodic_life=True``);
  ``max_steps`` is EnvPool's ``max_episode_steps``; params are None.
* ``craftax/``: ``achievements`` is ``each`` (one info key per achievement, the default),
  ``vector`` or ``none``; other keywords replace fields of Craftax's params (``day_length``);
  ``max_steps`` is Craftax's ``max_timesteps`` (:mod:`~jaxrl_fdg.envs.craftax_adapter`).
* ``xminigrid/``: ``direction=True`` observes ``{"img", "direction"}``,
  ``rules_and_goals=True`` adds the task's encodings; ``benchmark`` (a name such as
  ``trivial-21k``, or a file) with ``ruleset_index`` puts one of its rulesets into the params;
  other keywords replace fields of XLand's params (``view_size``, ``max_steps``)
  (:mod:`~jaxrl_fdg.envs.xminigrid_adapter`).
* ``navix/``: ``observation`` names Navix's observation function (``symbolic``, ``rgb``, ...);
  other keywords go to ``navix.make`` (``max_steps``) (:mod:`~jaxrl_fdg.envs.navix_adapter`).
* ``jumanji/``: ``max_steps`` sets the episode length in the params (default: the
  environment's ``time_limit``); ``flatten_action=False`` keeps a ``MultiDiscrete`` action
  unflattened; other keywords go to Jumanji's constructor (``board_size=3``)
  (:mod:`~jaxrl_fdg.envs.jumanji_adapter`).
* ``jaxmarl/``: ``map`` picks an SMAX map (``3m``, ``2s3z``); ``pad``, ``agent_ids`` and
  ``world_state`` shape what the agents observe; ``max_steps`` is a guard limit above JaxMARL's
  own; other keywords go to ``jaxmarl.make`` (:mod:`~jaxrl_fdg.envs.jaxmarl_adapter`).
* ``gymnax-api/<module>:<factory>``: any object with gymnax's API, built by
  ``module.factory(**keywords)`` (it may return ``(env, params)`` as ``gymnax.make`` does), less
  ``max_steps`` (the episode length), ``time_limit`` (which params field holds it) and
  ``limit_in_done`` (its ``step_env`` ends episodes at the limit itself)
  (:class:`~jaxrl_fdg.envs.gymnax_adapter.GymnaxApiEnv`): ``gymnax-api/gymnax:make`` with
  ``env_id=CartPole-v1``.
* ``timestep-api/<module>:<factory>``: any object with Jumanji's dm_env-style API (``reset(key)
  -> (state, timestep)``, ``step(state, action) -> (state, timestep)``), built by
  ``module.factory(**keywords)``, less ``max_steps`` and ``flatten_action``
  (:class:`~jaxrl_fdg.envs.timestep_adapter.TimeStepApiEnv`): ``timestep-api/jumanji:make``
  with ``id=Game2048-v1``. ``<module>`` is a dotted module path importable from ``sys.path``
  (the working directory included when run from the command line).

Nothing here imports Brax, gymnasium, gymnax, Playground, EnvPool, Craftax, XLand-MiniGrid,
Navix, Jumanji or JaxMARL: :func:`check` and :func:`adapters` look packages up with
``importlib.util.find_spec``, :func:`adapters` reads JaxMARL's names from its source
(:func:`jaxmarl_names`), and each builder imports its package when it runs.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any, NamedTuple

from jaxrl_fdg.envs.errors import MissingDependencyError, UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.source_names import jaxmarl_names


class Adapter(NamedTuple):
    """One prefix of environment names and how to build what it names.

    Attributes:
      prefix: the name's start, slash included (``"gymnax/"``).
      syntax: the name's form, for messages and listings (``"gymnax/<id>"``).
      description: one line on what the prefix gives.
      example: a name that builds.
      module: the package it needs; ``find_spec(module)`` decides whether it is installed.
      install: the ``pip install`` argument that provides ``module``.
      check: ``check(id)`` raises :class:`UnknownEnvironmentError` for an id it can tell is bad
        without importing ``module`` (the part after the prefix; may accept everything).
      build: ``build(id, overrides) -> (environment, params)``; params None for host simulators.
      probe: imports what ``build`` needs, to tell a package that fails to import from a bad id;
        by default ``import module``.
      names: the suite's ids, read without importing ``module`` (for ``jaxrl-fdg list``); empty
        where they cannot be read. None: the listing shows the syntax and the example only.
    """

    prefix: str
    syntax: str
    description: str
    example: str
    module: str
    install: str
    check: Callable[[str], None]
    build: Callable[[str, dict[str, Any]], tuple[Any, Any]]
    probe: Callable[[], Any] | None = None
    names: Callable[[], tuple[str, ...]] | None = None


class AdapterRow(NamedTuple):
    """What ``jaxrl-fdg list`` shows of an adapter; ``names`` are the suite's ids where the
    package is installed and its adapter can read them (else empty)."""

    prefix: str
    example: str
    installed: bool
    syntax: str
    description: str
    install: str
    names: tuple[str, ...] = ()


def _check_brax(env_id: str) -> None:
    from jaxrl_fdg.envs.brax_adapter import BACKENDS  # names only: Brax is not imported

    env_name, colon, backend = env_id.partition(":")
    if not env_name:
        raise UnknownEnvironmentError(f"brax/{env_id} names no Brax environment (e.g. brax/ant)")
    if colon and backend not in BACKENDS:
        raise UnknownEnvironmentError(unknown("Brax backend", backend, BACKENDS))


def _build_brax(env_id: str, overrides: dict[str, Any]) -> tuple[Any, Any]:
    from jaxrl_fdg.envs.brax_adapter import make_brax

    env_name, _, backend = env_id.partition(":")
    kwargs = dict(overrides)
    max_steps = kwargs.pop("max_steps", None)
    env = make_brax(env_name, backend or "mjx", **kwargs)
    params = env.default_params
    return env, params if max_steps is None else params.replace(max_steps=max_steps)


def _check_id(prefix: str) -> Callable[[str], None]:
    def check(env_id: str) -> None:
        if not env_id:
            raise UnknownEnvironmentError(f"{prefix}<id> needs an id after {prefix!r}")

    return check


def _build_gym(env_id: str, overrides: dict[str, Any]) -> tuple[Any, Any]:
    from jaxrl_fdg.envs import host  # imports the core's env fragment: only when asked for

    return host.gymnasium_simulator(env_id, **overrides), None


def _build_envpool(env_id: str, overrides: dict[str, Any]) -> tuple[Any, Any]:
    from jaxrl_fdg.envs.envpool_adapter import envpool_simulator

    return envpool_simulator(env_id, **overrides), None


def _build_gymnax(env_id: str, overrides: dict[str, Any]) -> tuple[Any, Any]:
    from jaxrl_fdg.envs.gymnax_adapter import make_gymnax, with_params

    env = make_gymnax(env_id)
    return env, with_params(env.default_params, **overrides)


def _probe_gymnax() -> None:
    """gymnax's base module alone: ``import gymnax`` imports matplotlib and seaborn."""
    from jaxrl_fdg.envs.partial_imports import import_alone

    import_alone("gymnax.environments.environment")


def _check_prefix(what: str, starts: tuple[str, ...]) -> Callable[[str], None]:
    """A check that the id starts as every id of the suite does (XLand-MiniGrid's register
    refuses others; Navix's are all ``Navix-...``)."""

    def check(env_id: str) -> None:
        if not env_id.startswith(starts):
            raise UnknownEnvironmentError(
                f"{what} ids start with {' or '.join(map(repr, starts))}, got {env_id!r}"
            )

    return check


def _check_craftax(env_id: str) -> None:
    from jaxrl_fdg.envs.craftax_adapter import check_craftax_id  # names only: no Craftax

    check_craftax_id(env_id)


def _check_jumanji(env_id: str) -> None:
    """Jumanji's ids are ``<name>-v<version>`` (its registry refuses others)."""
    name, _, version = env_id.rpartition("-v")
    if not name or not version.isdigit():
        raise UnknownEnvironmentError(
            f"Jumanji ids read <name>-v<version> (e.g. Game2048-v1), got {env_id!r}"
        )


def _check_reference(prefix: str) -> Callable[[str], None]:
    """A check that the part after ``prefix`` reads ``<module>:<factory>``."""

    def check(reference: str) -> None:
        where, colon, factory = reference.partition(":")
        if (
            not colon
            or not where
            or not factory
            or not all(part.isidentifier() for part in (*where.split("."), *factory.split(".")))
        ):
            raise UnknownEnvironmentError(
                f"{prefix}<module>:<factory> needs a dotted module and a callable in it "
                f"(e.g. {prefix}mylab.envs:make_env), got {prefix}{reference}"
            )

    return check


def _factory(prefix: str, reference: str) -> Callable[..., Any]:
    """The callable ``<module>:<factory>`` names, its module imported."""
    from jaxrl_fdg import plugins

    where, _, name = reference.partition(":")
    obj = plugins.import_module(where, f"environment {prefix}{reference}")
    for attribute in name.split("."):
        if not hasattr(obj, attribute):
            raise UnknownEnvironmentError(f"{prefix}{reference}: module {where!r} has no {name!r}")
        obj = getattr(obj, attribute)
    if not callable(obj):
        raise UnknownEnvironmentError(
            f"{prefix}{reference}: {name!r} is a {type(obj).__name__}, not a factory to call"
        )
    return obj


def _build_gymnax_api(reference: str, overrides: dict[str, Any]) -> tuple[Any, Any]:
    from jaxrl_fdg.envs.gymnax_adapter import make_gymnax_api

    factory = _factory("gymnax-api/", reference)
    return make_gymnax_api(factory, f"gymnax-api/{reference}", **overrides)


def _build_timestep_api(reference: str, overrides: dict[str, Any]) -> tuple[Any, Any]:
    from jaxrl_fdg.envs.timestep_adapter import make_timestep_api

    factory = _factory("timestep-api/", reference)
    return make_timestep_api(factory, f"timestep-api/{reference}", **overrides)


def _maker(module: str, function: str) -> Callable[[str, dict[str, Any]], tuple[Any, Any]]:
    """``build`` that calls ``function(id, **overrides)`` of adapter ``envs.<module>``,
    importing it (and so its package) only then."""

    def build(env_id: str, overrides: dict[str, Any]) -> tuple[Any, Any]:
        adapter = importlib.import_module(f"jaxrl_fdg.envs.{module}")
        return getattr(adapter, function)(env_id, **overrides)

    return build


ADAPTERS: tuple[Adapter, ...] = (
    Adapter(
        "brax/",
        "brax/<env>[:<backend>]",
        "a Brax environment on the device (backend mjx by default)",
        "brax/inverted_pendulum:mjx",
        "brax",
        "brax",
        _check_brax,
        _build_brax,
    ),
    Adapter(
        "gym/",
        "gym/<id>",
        "any gymnasium environment, stepped on the host",
        "gym/CartPole-v1",
        "gymnasium",
        "jaxrl-fdg[gymnasium]",
        _check_id("gym/"),
        _build_gym,
    ),
    Adapter(
        "gymnax/",
        "gymnax/<id>",
        "a gymnax environment (classic control, bsuite, MinAtar, misc) on the device",
        "gymnax/Breakout-MinAtar",
        "gymnax",
        "jaxrl-fdg[gymnax]",
        _check_id("gymnax/"),
        _build_gymnax,
        _probe_gymnax,
    ),
    Adapter(
        "playground/",
        "playground/<name>",
        "a MuJoCo Playground task (DM Control suite, locomotion) on MJX, on the device",
        "playground/CartpoleBalance",
        "mujoco_playground",
        "jaxrl-fdg[playground]",
        _check_id("playground/"),
        _maker("playground_adapter", "make_playground"),
    ),
    Adapter(
        "envpool/",
        "envpool/<task-id>",
        "an EnvPool task (Atari, MuJoCo, classic control, ...), batched C++ on the host",
        "envpool/Pong-v5",
        "envpool",
        "jaxrl-fdg[envpool]",
        _check_id("envpool/"),
        _build_envpool,
    ),
    Adapter(
        "craftax/",
        "craftax/<id>",
        "Craftax and Craftax-Classic (symbolic or pixels), achievements as info, on the device",
        "craftax/Craftax-Classic-Symbolic-v1",
        "craftax",
        "jaxrl-fdg[craftax]",
        _check_craftax,
        _maker("craftax_adapter", "make_craftax"),
    ),
    Adapter(
        "xminigrid/",
        "xminigrid/<id>",
        "an XLand-MiniGrid grid (XLand rulesets, MiniGrid tasks) on the device",
        "xminigrid/MiniGrid-Empty-5x5",
        "xminigrid",
        "jaxrl-fdg[xminigrid]",
        _check_prefix("XLand-MiniGrid", ("XLand-MiniGrid", "MiniGrid")),
        _maker("xminigrid_adapter", "make_xminigrid"),
    ),
    Adapter(
        "navix/",
        "navix/<id>",
        "a Navix environment (MiniGrid in JAX) on the device",
        "navix/Navix-Empty-5x5-v0",
        "navix",
        "jaxrl-fdg[navix]",
        _check_prefix("Navix", ("Navix-",)),
        _maker("navix_adapter", "make_navix"),
    ),
    Adapter(
        "jumanji/",
        "jumanji/<id>",
        "a Jumanji environment (logic, packing, routing), action masks published, on the device",
        "jumanji/Game2048-v1",
        "jumanji",
        "jaxrl-fdg[jumanji]",
        _check_jumanji,
        _maker("jumanji_adapter", "make_jumanji"),
    ),
    Adapter(
        "jaxmarl/",
        "jaxmarl/<name>",
        "a JaxMARL multi-agent game (MPE, SMAX, Overcooked, Hanabi, ...), agents folded into "
        "the batch, on the device",
        "jaxmarl/MPE_simple_spread_v3",
        "jaxmarl",
        "jaxrl-fdg[jaxmarl]",
        _check_id("jaxmarl/"),
        _maker("jaxmarl_adapter", "make_jaxmarl"),
        lambda: importlib.import_module("jaxrl_fdg.envs.jaxmarl_imports").probe(),
        jaxmarl_names,
    ),
    Adapter(
        "gymnax-api/",
        "gymnax-api/<module>:<factory>",
        "any object with gymnax's API (reset_env, step_env, spaces, default_params)",
        "gymnax-api/gymnax.environments:CartPole",
        "jaxrl_fdg",
        "jaxrl-fdg",
        _check_reference("gymnax-api/"),
        _build_gymnax_api,
    ),
    Adapter(
        "timestep-api/",
        "timestep-api/<module>:<factory>",
        "any object with the dm_env-style API of Jumanji (reset(key), step(state, action))",
        "timestep-api/jumanji.environments:Game2048",
        "jaxrl_fdg",
        "jaxrl-fdg",
        _check_reference("timestep-api/"),
        _build_timestep_api,
    ),
)
"""Every prefix ``envs.make`` understands, in the order ``jaxrl-fdg list`` shows them."""


def adapters() -> tuple[AdapterRow, ...]:
    """One row per prefix, with whether its package is installed (found, not imported) and, for
    an installed package whose adapter reads them (``jaxmarl/``), the suite's ids."""
    rows = []
    for a in ADAPTERS:
        installed = _installed(a)
        names = a.names() if installed and a.names else ()
        rows.append(
            AdapterRow(a.prefix, a.example, installed, a.syntax, a.description, a.install, names)
        )
    return tuple(rows)


def check(name: str) -> None:
    """Check a prefixed ``name`` without building it or importing its package.

    Raises:
      UnknownEnvironmentError: the prefix is not one of :data:`ADAPTERS` (the message names
        them), or the adapter's cheap check refuses the id (e.g. an unknown Brax backend).
      MissingDependencyError: the prefix's package is not installed.
    """
    adapter = _adapter(name)
    adapter.check(name[len(adapter.prefix) :])
    if not _installed(adapter):
        raise MissingDependencyError(_missing(name, adapter))


def make(name: str, **overrides: Any) -> tuple[Any, Any]:
    """Build the prefixed environment ``name``: ``(environment, params)`` (params None on the host).

    Raises what :func:`check` raises, :class:`MissingDependencyError` when the package fails to
    import, :class:`UnknownEnvironmentError` for an id the library does not know (with close
    matches where it lists its ids), and ``ValueError`` for overrides the adapter refuses.
    """
    check(name)
    adapter = _adapter(name)
    try:
        adapter.probe() if adapter.probe else importlib.import_module(adapter.module)
    except ImportError as e:
        raise MissingDependencyError(f"{_missing(name, adapter)} (import failed: {e})") from None
    return adapter.build(name[len(adapter.prefix) :], dict(overrides))


def _adapter(name: str) -> Adapter:
    for adapter in ADAPTERS:
        if name.startswith(adapter.prefix):
            return adapter
    prefix = name.partition("/")[0] + "/"
    prefixes = ", ".join(a.syntax for a in ADAPTERS)
    raise UnknownEnvironmentError(
        f"unknown environment prefix {prefix!r} in {name!r}; valid prefixes: {prefixes}"
    )


def _installed(adapter: Adapter) -> bool:
    return importlib.util.find_spec(adapter.module) is not None


def _missing(name: str, adapter: Adapter) -> str:
    return f'{name!r} needs the {adapter.module} package: pip install "{adapter.install}"'

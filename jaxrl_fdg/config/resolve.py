"""Resolution: every value of a :class:`TrainConfig` checked once, and the objects it names built.

All errors are :class:`ConfigError` naming the value and, where finite, the valid choices,
raised before anything compiles. What a placement runs is its own declaration
(``jaxrl_fdg.policies``): this module hands it a :class:`~jaxrl_fdg.policies.Request`, the few
facts of the configuration a placement depends on, and ``policies.check`` refuses what the
placement does not declare.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from jaxrl_fdg import envs, plugins, policies, tuning, validate
from jaxrl_fdg.config import loggers
from jaxrl_fdg.config.schema import TrainConfig
from jaxrl_fdg.config.sweeps import Lane, lanes, split_sweep
from jaxrl_fdg.config.values import check_size, make_hparams
from jaxrl_fdg.core import algorithm as algorithms
from jaxrl_fdg.core.algorithm import AlgorithmContext, AlgorithmSpec
from jaxrl_fdg.core.lagged import POLICY_LAGS
from jaxrl_fdg.envs.contracts import check_reset, check_step
from jaxrl_fdg.envs.errors import EnvironmentContractError
from jaxrl_fdg.envs.multi_agent import is_multi_agent
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.profiling.timers import MODES as PROFILE_MODES
from jaxrl_fdg.tuning import Distribution, is_search

if TYPE_CHECKING:
    from jaxrl_fdg.envs import Environment
    from jaxrl_fdg.envs.host import HostSimulator

SEED_MAX = 2**32 - 1


class Resolved(NamedTuple):
    """A validated configuration and what it names.

    Attributes:
      hparams: the algorithm's hyperparameters, with the first value of each swept one.
      sweep: the values of each swept hyperparameter (empty without a sweep).
      lanes: the runs the configuration describes (seeds × sweep points), computed once.
      placement: the execution policy that runs them.
      request: what the run asks of its placement (``policies.Request``).
      candidates: with ``placement = auto``, each candidate placement's own resolution, by name
        (what :func:`auto_placements` returns; the fields above are the first one's); else None.
    """

    config: TrainConfig
    spec: AlgorithmSpec
    hparams: Any  # the spec's hyperparameter dataclass
    env: Environment | HostSimulator
    env_params: Any  # the environment's params pytree (None for a host simulator)
    context: AlgorithmContext
    sweep: dict[str, tuple[float, ...]]
    lanes: tuple[Lane, ...]
    placement: policies.Placement
    request: policies.Request
    candidates: dict[str, Resolved] | None = None


def resolve(
    config: TrainConfig | Resolved, spec: AlgorithmSpec | None = None, *, check_env: bool = True
) -> Resolved:
    """Validate ``config``; ``spec`` replaces the registry lookup (for user-written algorithms).
    ``Resolved.config`` has every run setting the config left unset filled in from the
    algorithm's defaults. A configuration already resolved is returned as it is, so the
    functions that take either resolve once.

    ``check_env=False`` leaves out the environment's contract (:func:`check_environment`, which
    traces a reset and a step): the runner checks it itself where its programs are not in the
    executable cache, which only a run that passed the check fills."""
    if isinstance(config, Resolved):
        return config
    if not isinstance(config, TrainConfig):
        raise ConfigError(
            f"a run takes a TrainConfig, got {type(config).__name__} {_shown(config)} "
            "(TrainConfig(algo='ppo', ...), or config.from_mapping(a_dict) for a mapping)"
        )
    spec = spec if spec is not None else algorithms.get(config.algo)
    config = config.with_defaults(spec.defaults)
    # A reference to a file is recorded absolute, so the run folder finds the code from anywhere.
    config = config.replace(algo=plugins.normalize(config.algo), env=plugins.normalize(config.env))
    spec, hparams = check_values(config, spec)
    env, env_params = make_env(config.env, config.env_options)
    if check_env:
        check_environment(env, env_params)
    if config.placement != policies.AUTO_PLACEMENT:
        return _place(config, spec, hparams, env, env_params)
    # Resolved as the first candidate, with the config as given: the runner measures them all
    # (jaxrl_fdg.run.autotune) and goes on with the fastest one's own resolution.
    found, refused = {}, {}
    for name in policies.registered():
        asked = request(config.replace(placement=name), env, (Lane(config.seed, {}),))
        devices = policies.auto_devices(policies.get(name), asked)
        if devices is None:
            refused[name] = "this machine has one device"
            continue
        candidate = config.replace(placement=name, devices=devices)
        try:
            found[name] = _place(candidate, spec, hparams, env, env_params)
        except ConfigError as e:
            refused[name] = str(e)
    if not found:
        reasons = "; ".join(f"{name}: {reason}" for name, reason in refused.items())
        raise ConfigError(
            f"placement {policies.AUTO_PLACEMENT!r}: no placement runs this ({reasons})"
        )
    return next(iter(found.values()))._replace(config=config, candidates=found)


def _place(
    config: TrainConfig, spec: AlgorithmSpec, hparams: Any, env: Any, env_params: Any
) -> Resolved:
    """The checks that combine values, for one placement, and what they name."""
    if config.steps_per_iteration > validate.INT32_MAX:
        raise ConfigError(
            f"num_envs × rollout_len = {config.steps_per_iteration:,} steps per iteration is "
            f"more than {validate.INT32_MAX:,}"
        )
    for name in ("total_steps", "schedule_steps"):
        steps = getattr(config, name)
        if steps is not None and steps < config.steps_per_iteration:
            raise ConfigError(
                f"{name} = {steps} is less than one iteration "
                f"(num_envs × rollout_len = {config.steps_per_iteration})"
            )
    _, sweep = split_sweep(spec, config.hparams)
    runs = lanes(config, sweep)
    tuning.check(config, sweep, len(runs))
    asked = request(config, env, runs)
    placement = policies.select(asked)
    if config.fusion == policies.AUTO_FUSION:  # checked in the most fused mode it runs
        asked = asked._replace(fusion=tuple(placement.plans)[-1])
    policies.check(placement, asked)
    if env.on_host:  # a host simulator knows its spaces itself
        spaces = env.observation_space, env.action_space
    else:
        spaces = env.observation_space(env_params), env.action_space(env_params)
    context = AlgorithmContext(
        observation_space=spaces[0],
        action_space=spaces[1],
        num_envs=config.num_envs,
        rollout_len=config.rollout_len,
        num_iterations=config.schedule_iterations,
        hparams=hparams,
        env=env,
        env_params=env_params,
    )
    context = placement.context(asked, context)
    if is_multi_agent(env):  # the algorithm's batch axis: every agent of every game
        context = dataclasses.replace(
            context, num_envs=context.num_envs * env.num_agents, num_agents=env.num_agents
        )
    spec.check(context)
    return Resolved(config, spec, hparams, env, env_params, context, sweep, runs, placement, asked)


def check_environment(env: Any, env_params: Any) -> None:
    """Refuse, as a :class:`ConfigError` and before anything compiles, an environment whose
    first reset or step departs from its spaces or from one reward and flag per environment
    (:func:`~jaxrl_fdg.envs.contracts.check_reset`, :func:`~jaxrl_fdg.envs.contracts.check_step`,
    traced from shapes alone). A host simulator knows its spaces itself: nothing to check."""
    if env.on_host:
        return
    try:
        check_reset(env, env_params)
        check_step(env, env_params)
    except EnvironmentContractError as e:
        raise ConfigError(str(e)) from None


def request(config: TrainConfig, env: Any, runs: tuple[Lane, ...]) -> policies.Request:
    """What a run of ``config`` on ``env`` with lanes ``runs`` asks of its placement."""
    return policies.Request(
        placement=config.placement,
        fusion=config.fusion,
        devices=config.devices,
        num_envs=config.num_envs,
        policy_lag=config.policy_lag,
        env=config.env,
        env_on_host=bool(env.on_host),
        backend=config.dp_backend,
        processes=config.num_processes,
        seeds=tuple(lane.seed for lane in runs),
        num_seeds=config.num_seeds,
    )


def auto_placements(config: TrainConfig, spec: AlgorithmSpec | None = None) -> dict[str, Resolved]:
    """The candidates of ``--placement auto``: each registered placement that can run ``config``
    on this machine, resolved with the devices it spans there (:meth:`Placement.auto_devices`),
    by name. A :class:`ConfigError` names each placement's reason when none can."""
    return resolve(config.replace(placement=policies.AUTO_PLACEMENT), spec).candidates


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_values(
    config: TrainConfig, spec: AlgorithmSpec | None = None
) -> tuple[AlgorithmSpec, Any]:
    """Check each value on its own (names, ranges, the algorithm's hyperparameters); return the
    algorithm's spec and hyperparameters. Checks that combine values, or that need the
    environment built, are :func:`resolve`'s. Unset run settings are checked as the algorithm's
    defaults fill them in."""
    spec = spec if spec is not None else algorithms.get(config.algo)
    config = config.with_defaults(spec.defaults)
    for name in ("env_options", "hparams"):  # bounded before anything copies them
        if not isinstance(getattr(config, name), Mapping):
            raise ConfigError(f"{name} must be a mapping, got {getattr(config, name)!r}")
        check_size(name, getattr(config, name))
    try:
        envs.check_name(config.env)
    except ValueError as e:  # an unknown name or prefix, a missing optional package
        raise ConfigError(str(e)) from None
    validate.choice("fusion mode", config.fusion, (*policies.FUSION_MODES, policies.AUTO_FUSION))
    validate.choice("profile mode", config.profile, PROFILE_MODES)
    for name in ("num_envs", "rollout_len"):
        validate.positive_int(name, getattr(config, name))
    for name in ("total_steps", "schedule_steps"):
        _check_budget(name, getattr(config, name), config.steps_per_iteration)
    validate.non_negative("log_every", config.log_every)
    validate.non_negative("checkpoint_every", config.checkpoint_every)
    validate.positive_int("keep", config.keep)
    validate.non_negative("eval_every", config.eval_every)
    validate.positive_int("eval_episodes", config.eval_episodes)
    validate.positive_int("num_seeds", config.num_seeds)
    validate.choice(
        "placement", config.placement, (*policies.registered(), policies.AUTO_PLACEMENT)
    )
    validate.positive_int("devices", config.devices)
    validate.choice("dp_backend", config.dp_backend, policies.DP_BACKENDS)
    _check_autos_in_one_process(config)
    policies.check_processes(config.num_processes, config.process_id, config.coordinator)
    validate.choice("policy_lag", config.policy_lag, POLICY_LAGS)
    loggers.check(config.logger)
    if not isinstance(config.seed, int) or isinstance(config.seed, bool):
        raise ConfigError(f"seed must be an integer, got {config.seed!r}")
    if not 0 <= config.seed <= SEED_MAX - (config.num_seeds - 1):
        # Keys are made from 32 bits of the seed: 2**32 would give seed 0's run again.
        raise ConfigError(
            f"seed must be in [0, {SEED_MAX}]"
            + (f" for all {config.num_seeds} seeds" if config.num_seeds > 1 else "")
            + f", got {config.seed!r}"
        )
    _check_run_name(config.run_name)
    return spec, _check_sweep(config, spec)


def _check_sweep(config: TrainConfig, spec: AlgorithmSpec) -> Any:
    """The hyperparameters, each swept value (each end of a range) checked like a single one,
    and a random search's settings; returns the hyperparameters with the first swept values."""
    fixed, sweep = split_sweep(spec, config.hparams)
    validate.non_negative("num_lanes", config.num_lanes)
    if is_search(sweep) != bool(config.num_lanes):
        raise ConfigError(
            f"num_lanes = {config.num_lanes}: a random search needs both num_lanes and a "
            "hyperparameter range (e.g. --lr loguniform:1e-4:1e-2 --num-lanes 16)"
            if config.num_lanes
            else "a hyperparameter range (KIND:LOW:HIGH) makes a random search: give its "
            "number of lanes, --num-lanes N"
        )
    if config.num_lanes and config.num_seeds != 1:
        raise ConfigError(
            f"num_seeds = {config.num_seeds}: each lane of a random search has a seed of its "
            "own (seed, seed + 1, ...); leave num_seeds at 1 and set num_lanes"
        )
    checked = {k: (v.low, v.high) if isinstance(v, Distribution) else v for k, v in sweep.items()}
    for name, values in checked.items():
        for value in values:
            make_hparams(spec, {**fixed, name: value})
    return make_hparams(spec, {**fixed, **{k: v[0] for k, v in checked.items()}})


def _check_budget(name: str, steps: Any, per_iteration: int) -> None:
    """A budget in env steps (``schedule_steps`` may be unset): a positive integer; past 2**31
    it may go, but not the iterations it makes (the iteration counter is a 32-bit integer)."""
    if steps is None and name == "schedule_steps":
        return
    if isinstance(steps, int) and not isinstance(steps, bool) and steps > validate.INT32_MAX:
        if steps // per_iteration > validate.INT32_MAX:
            raise ConfigError(
                f"{name} = {steps:,} makes more than {validate.INT32_MAX:,} iterations; the "
                "iteration counter is a 32-bit integer"
            )
    else:
        validate.positive_int(name, steps)


def _check_autos_in_one_process(config: TrainConfig) -> None:
    """``--fusion auto`` and ``--placement auto`` only in a run of one process: each process
    would measure, and choose, apart."""
    validate.positive_int("num_processes", config.num_processes)
    autos = [
        f"--{name} {auto}"
        for name, auto in (("fusion", policies.AUTO_FUSION), ("placement", policies.AUTO_PLACEMENT))
        if getattr(config, name) == auto
    ]
    if autos and config.num_processes > 1:
        raise ConfigError(
            f"{' and '.join(autos)} measures the run in one process; a run across "
            f"{config.num_processes} processes must name its fusion mode and placement"
        )


def _check_run_name(name: str | None) -> None:
    """A run folder's name is one path component: it stays inside ``out``."""
    if name is None:
        return
    bad = (
        not name.strip()
        or name in (".", "..")
        or any(sep in name for sep in ("/", "\\", os.sep))
        or "\0" in name
    )
    if bad:
        raise ConfigError(
            f"run_name must be a plain folder name (no path separators, not '.' or '..'), "
            f"got {name!r}"
        )


def make_env(name: str, options: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
    """``(environment, params)`` for ``name`` with keyword ``options`` (``envs.make`` parses
    every prefix); a host simulator's params are ``None``."""
    try:
        return envs.make(name, **(options or {}))
    except (ImportError, ValueError) as e:
        message = str(e)
        raise ConfigError(
            message if name in message else f"environment {name!r}: {message}"
        ) from None

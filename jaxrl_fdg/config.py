"""Run configuration: a frozen dataclass, validated once, before anything compiles.

``TrainConfig`` holds what shapes the program (sizes, names, the fusion mode) plus the algorithm's
hyperparameter overrides. :func:`resolve` checks every value and builds the objects the run needs;
all its errors are :class:`ConfigError` naming the value and, where finite, the valid choices.
Derived numbers (iterations, batch size) are computed, never written back.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import tomli_w
import yaml

from jaxrl_fdg import algorithm as algorithms
from jaxrl_fdg import distributed, envs, validate
from jaxrl_fdg.actor_learner import DEVICES as ACTOR_LEARNER_DEVICES
from jaxrl_fdg.actor_learner import LAGS, actor_learner_devices
from jaxrl_fdg.algorithm import AlgorithmContext, AlgorithmSpec
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fusion import FUSION_MODES
from jaxrl_fdg.placement import BACKENDS, PLACEMENTS, check_devices, mean_over_shards
from jaxrl_fdg.profiling.timers import MODES as PROFILE_MODES

# Host boundaries per run when ``log_every`` is left at 0 (auto).
AUTO_BOUNDARIES = 25

# Settings that change how a run is watched, stored or checked, never what it computes: a run
# resumes, and replicates group, regardless of them.
NOT_COMPUTED = (
    "out",
    "run_name",
    "progress",
    "profile",
    "log_every",
    "compile_cache",
    "checkpoint_every",
    "keep",
    "debug_nans",
    "eval_every",
    "eval_episodes",
    # How the processes of a run are wired together, not what they compute (a run over P
    # processes computes what one process with as many shards computes); process_id differs
    # between the processes of one run.
    "coordinator",
    "num_processes",
    "process_id",
)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run.

    Attributes:
      algo: registered algorithm name (``jaxrl-fdg list``).
      env: registered environment name.
      fusion: one of ``eager | step | fragment | iteration | scan``.
      total_steps: environment-step budget; the run does ``total_steps // (num_envs × rollout_len)``
        whole iterations.
      num_envs: environments stepped in parallel.
      rollout_len: steps per environment per iteration.
      seed: the run's only source of randomness.
      out: parent folder of run folders; ``None`` writes nothing.
      run_name: the run folder's name (default: ``{algo}-{env}-{fusion}-s{seed}-{time}``).
      log_every: iterations between host boundaries (progress, metrics); 0 chooses about
        ``AUTO_BOUNDARIES`` boundaries per run. In ``scan`` mode it is also the number of
        iterations fused into one program call.
      progress: show live progress while training.
      profile: timing mode, one of ``off | host | sync | trace`` (see ``jaxrl_fdg.profiling``).
      compile_cache: turn on JAX's persistent compilation cache in the user cache directory, so a
        re-run of the same programs loads them instead of compiling (``jaxrl_fdg.compile_cache``;
        a cache configured otherwise is left alone). ``False`` leaves JAX's settings untouched.
      checkpoint_every: env steps between checkpoints of the whole training state (written at
        the first host boundary past each multiple, and at the end); 0: only at the end and on
        interruption.
      keep: how many checkpoints to keep (the oldest are deleted).
      debug_nans: JAX's own NaN checks (``jax_debug_nans``): the op that produced a NaN raises.
      eval_every: env steps between evaluations of the deterministic policy (at the first host
        boundary past each multiple; ``eval_return`` in the metrics); 0: none.
      eval_episodes: episodes per evaluation, played in parallel on environments of their own.
      num_seeds: independent runs with seeds ``seed, seed + 1, ...`` in one program (vmapped);
        each computes what the run with its seed alone computes. Per-seed metrics go to
        ``seed-<seed>/`` inside the run folder; the run's own rows average over seeds.
      placement: ``single`` (one device); ``data_parallel`` (``num_envs`` split into ``devices``
        shards, gradients averaged across them; see ``jaxrl_fdg.placement``); ``actor_learner``
        (the rollout on one device, the learner on another; ``jaxrl_fdg.actor_learner``); or
        ``host_env`` (a host simulator's batch in two halves, stepped on the host while the
        device acts for the other half; ``jaxrl_fdg.host_pipeline``).
      devices: shards of a data-parallel run, one per device; 2 for ``actor_learner``.
      dp_backend: how shards run: ``shard_map`` (default), ``pmap``, or ``vmap`` (every shard on
        one device: the reference a multi-device run equals).
      coordinator: ``host:port`` of process 0, which every process of a run across processes
        connects to (``jaxrl_fdg.distributed``); not used with one process.
      num_processes: processes that run one data-parallel program together (1: this one alone);
        their devices form one mesh, and ``devices`` counts them all.
      process_id: this process's index, ``0 .. num_processes - 1``; process 0 writes the run
        folder.
      policy_lag: 0, or 1 to learn from the rollout collected one iteration earlier, so that
        collecting and learning overlap (asynchronous actors with placement ``actor_learner``;
        see ``jaxrl_fdg.loop.LaggedLoop``).
      hparams: overrides of the algorithm's hyperparameters, by field name. A list of values
        for a float hyperparameter (``"1e-3,3e-4"`` on the command line) sweeps it: one run
        per value (per combination, for several lists) and per seed, all in one vmapped
        program (see :func:`lanes`).
    """

    algo: str = "ppo"
    env: str = "CartPole-v1"
    fusion: str = "scan"
    total_steps: int = 500_000
    num_envs: int = 4
    rollout_len: int = 128
    seed: int = 0
    out: str | None = "runs"
    run_name: str | None = None
    log_every: int = 0
    progress: bool = True
    profile: str = "host"
    compile_cache: bool = True
    checkpoint_every: int = 0
    keep: int = 3
    debug_nans: bool = False
    eval_every: int = 0
    eval_episodes: int = 10
    num_seeds: int = 1
    placement: str = "single"
    devices: int = 1
    dp_backend: str = "shard_map"
    coordinator: str | None = None
    num_processes: int = 1
    process_id: int = 0
    policy_lag: int = 0
    hparams: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def steps_per_iteration(self) -> int:
        return self.num_envs * self.rollout_len

    @property
    def num_iterations(self) -> int:
        return self.total_steps // self.steps_per_iteration

    @property
    def boundary_every(self) -> int:
        if self.log_every:
            return min(self.log_every, self.num_iterations)
        return max(1, -(-self.num_iterations // AUTO_BOUNDARIES))

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)


class Resolved(NamedTuple):
    """A validated configuration and what it names. ``hparams`` holds the first value of each
    swept hyperparameter; ``sweep`` the values of each (empty without a sweep)."""

    config: TrainConfig
    spec: AlgorithmSpec
    hparams: Any
    env: envs.Environment
    env_params: Any
    context: AlgorithmContext
    sweep: dict[str, tuple[float, ...]] = {}


class Lane(NamedTuple):
    """One of the runs a configuration asks for: its seed and its swept hyperparameters."""

    seed: int
    point: dict[str, float]

    @property
    def name(self) -> str:
        """The lane's folder name inside the run folder, e.g. ``lr=0.001-seed-0``."""
        # repr: the shortest text that reads back as the same float, so names never collide.
        return "-".join([*(f"{k}={v!r}" for k, v in self.point.items()), f"seed-{self.seed}"])


def lanes(config: TrainConfig, spec: AlgorithmSpec | None = None) -> list[Lane]:
    """The runs ``config`` describes, in the order of the vmapped axis: each combination of the
    swept values (the first hyperparameter varying slowest), and within it each seed."""
    spec = spec if spec is not None else algorithms.get(config.algo)
    _, sweep = split_sweep(spec, config.hparams)
    points = [
        dict(zip(sweep, values, strict=True)) for values in itertools.product(*sweep.values())
    ]
    seeds = range(config.seed, config.seed + config.num_seeds)
    return [Lane(seed, point) for point in points for seed in seeds]


def resolve(config: TrainConfig, spec: AlgorithmSpec | None = None) -> Resolved:
    """Validate ``config``; ``spec`` replaces the registry lookup (for user-written algorithms)."""
    spec, hparams = _check_values(config, spec)
    env, env_params = _environment(config.env)
    if config.total_steps < config.steps_per_iteration:
        raise ConfigError(
            f"total_steps = {config.total_steps} is less than one iteration "
            f"(num_envs × rollout_len = {config.steps_per_iteration})"
        )
    runs = len(lanes(config, spec))
    if env_params is None and runs > 1:
        raise ConfigError(
            f"{_runs(config, runs)} need a JAX environment; {config.env} is a host simulator "
            "(run one process per seed instead)"
        )
    if env_params is None:  # a host simulator knows its spaces itself
        spaces = env.observation_space, env.action_space
    else:
        spaces = env.observation_space(env_params), env.action_space(env_params)
    context = AlgorithmContext(
        observation_space=spaces[0],
        action_space=spaces[1],
        num_envs=config.num_envs,
        rollout_len=config.rollout_len,
        num_iterations=config.num_iterations,
        hparams=hparams,
    )
    if config.placement != "single" and runs > 1:
        raise ConfigError(
            f"placement {config.placement!r} and {_runs(config, runs)} cannot be combined; "
            "the runs of a sweep or of several seeds share placement 'single'"
        )
    if config.placement == "data_parallel":
        context = _data_parallel(config, context, host=env_params is None)
    elif config.placement == "actor_learner":
        _actor_learner(config, host=env_params is None)
    elif config.placement == "host_env":
        _host_env(config, host=env_params is None)
    elif config.devices > 1:
        raise ConfigError(
            f"devices = {config.devices} needs placement 'data_parallel' (valid placements: "
            f"{', '.join(PLACEMENTS)})"
        )
    spec.check(context)
    _, sweep = split_sweep(spec, config.hparams)
    return Resolved(config, spec, hparams, env, env_params, context, sweep)


def _runs(config: TrainConfig, runs: int) -> str:
    return f"{runs} runs (num_seeds = {config.num_seeds} × the hyperparameter sweep)"


def _check_values(
    config: TrainConfig, spec: AlgorithmSpec | None = None
) -> tuple[AlgorithmSpec, Any]:
    """Check each value on its own (names, ranges, the algorithm's hyperparameters); return the
    algorithm's spec and hyperparameters. Checks that combine values, or that need the
    environment built, are :func:`resolve`'s."""
    spec = spec if spec is not None else algorithms.get(config.algo)
    if not config.env.startswith(("brax/", "gym/")):  # those two are checked as they are built
        try:
            envs.check_name(config.env)
        except envs.UnknownEnvironmentError as e:
            raise ConfigError(
                f"{e}; or brax/<env>[:<backend>] for Brax, gym/<id> for any gymnasium environment"
            ) from None
    validate.choice("fusion mode", config.fusion, FUSION_MODES)
    validate.choice("profile mode", config.profile, PROFILE_MODES)
    for name in ("total_steps", "num_envs", "rollout_len"):
        validate.positive_int(name, getattr(config, name))
    validate.non_negative("log_every", config.log_every)
    validate.non_negative("checkpoint_every", config.checkpoint_every)
    validate.positive_int("keep", config.keep)
    validate.non_negative("eval_every", config.eval_every)
    validate.positive_int("eval_episodes", config.eval_episodes)
    validate.positive_int("num_seeds", config.num_seeds)
    validate.choice("placement", config.placement, PLACEMENTS)
    validate.positive_int("devices", config.devices)
    validate.choice("dp_backend", config.dp_backend, BACKENDS)
    distributed.check_processes(config)
    validate.choice("policy_lag", config.policy_lag, LAGS)
    if config.policy_lag and config.placement not in ("single", "actor_learner"):
        raise ConfigError(
            f"policy_lag = {config.policy_lag} needs placement 'single' or 'actor_learner' "
            f"(got {config.placement!r})"
        )
    if not isinstance(config.seed, int) or isinstance(config.seed, bool):
        raise ConfigError(f"seed must be an integer, got {config.seed!r}")
    fixed, sweep = split_sweep(spec, config.hparams)
    for name, values in sweep.items():  # each swept value is checked like a single one
        for value in values:
            make_hparams(spec, {**fixed, name: value})
    return spec, make_hparams(spec, {**fixed, **{k: v[0] for k, v in sweep.items()}})


def split_sweep(
    spec: AlgorithmSpec, overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, tuple[float, ...]]]:
    """``(single overrides, {swept hyperparameter: its values})``.

    A list, or a comma-separated string, given for a float hyperparameter is a sweep. Only
    floats can be swept in one program: they enter the computation as values, while the others
    (sizes, counts, switches, names) decide the program's shape or structure.
    """
    fields = {f.name for f in dataclasses.fields(spec.hparams)}
    hints = typing.get_type_hints(spec.hparams)
    fixed, sweep = {}, {}
    for name, value in overrides.items():
        values = value.split(",") if isinstance(value, str) and "," in value else value
        many = isinstance(values, (list, tuple)) and not isinstance(values, str)
        if not many or name not in fields or typing.get_origin(hints[name]) is tuple:
            fixed[name] = value
            continue
        if hints[name] is not float:
            raise ConfigError(
                f"hyperparameter {name} = {value!r}: only float hyperparameters can be swept in "
                f"one program ({name} is {getattr(hints[name], '__name__', hints[name])}: it "
                "shapes the program); run one configuration per value instead"
            )
        values = tuple(coerce(name, v, float) for v in values)
        if len(values) < 1 or len(set(values)) != len(values):
            raise ConfigError(
                f"hyperparameter {name} = {value!r}: a sweep needs distinct values, at least one"
            )
        sweep[name] = values
    return fixed, sweep


def _data_parallel(config: TrainConfig, context: AlgorithmContext, host: bool) -> AlgorithmContext:
    """Each shard's context: its share of the environments, gradients averaged over shards."""
    if host:
        raise ConfigError(
            f"data_parallel needs a JAX environment; {config.env} is a host simulator"
        )
    validate.divides("devices", config.devices, "num_envs", config.num_envs)
    distributed.check_mesh(config)
    devices = check_devices(config.devices, config.dp_backend)
    critics = getattr(context.hparams, "num_critics", 1)
    if config.dp_backend != "vmap" and devices[0].platform == "cpu" and critics > 1:
        # A known hang, not a design limit: see the README's placement section.
        raise ConfigError(
            f"{config.algo} with num_critics = {critics} hangs under data_parallel on XLA:CPU "
            "devices (seen with JAX 0.10.2); use num_critics = 1, dp_backend 'vmap', or a GPU"
        )
    return dataclasses.replace(
        context, num_envs=config.num_envs // config.devices, mean_gradients=mean_over_shards
    )


def _actor_learner(config: TrainConfig, host: bool) -> None:
    """The actors on one device, the learner on another (``jaxrl_fdg.actor_learner``)."""
    if host:
        raise ConfigError(
            f"actor_learner needs a JAX environment; {config.env} is a host simulator "
            "(placement 'host_env' runs host simulators)"
        )
    if config.fusion != "fragment":
        raise ConfigError(
            f"placement actor_learner compiles the rollout and the learner apart, one per device: "
            f"fusion must be 'fragment' (got {config.fusion!r})"
        )
    if config.devices != ACTOR_LEARNER_DEVICES:
        raise ConfigError(
            f"placement actor_learner uses {ACTOR_LEARNER_DEVICES} devices (actors, learner); "
            f"got devices = {config.devices}"
        )
    actor_learner_devices()


def _host_env(config: TrainConfig, host: bool) -> None:
    """Host simulators in two halves, stepped on the host while the device computes the other
    half's actions (``jaxrl_fdg.host_pipeline``)."""
    from jaxrl_fdg.host_pipeline import FUSION_MODES as HOST_ENV_FUSION_MODES

    if not host:
        raise ConfigError(
            f"placement 'host_env' steps host simulators: env must be gym/<id> (any gymnasium "
            f"environment), got {config.env!r}; JAX environments run on the device (placement "
            "'single')"
        )
    if config.num_envs % 2:
        raise ConfigError(
            f"placement 'host_env' splits the envs into two halves: num_envs must be even "
            f"(valid: 2, 4, 6, ...), got {config.num_envs}"
        )
    if config.devices != 1:
        raise ConfigError(
            f"placement 'host_env' runs the actor and the learner on one device: devices must "
            f"be 1, got {config.devices}"
        )
    if config.num_seeds != 1:
        raise ConfigError(
            f"placement 'host_env' runs one seed: num_seeds must be 1, got {config.num_seeds}"
        )
    if config.fusion not in HOST_ENV_FUSION_MODES:
        raise ConfigError(
            f"placement 'host_env' runs fusion 'step' (double-buffered) or a fused mode "
            f"(valid: {', '.join(HOST_ENV_FUSION_MODES)}), got {config.fusion!r}"
        )


def _environment(name: str) -> tuple[Any, Any]:
    """``(Environment, params)`` for a registered name or ``brax/<env>[:<backend>]`` (a Brax
    environment, MJX by default); ``(HostSimulator, None)`` for ``gym/<id>`` (any gymnasium
    environment, stepped on the host)."""
    if name.startswith("brax/"):
        from jaxrl_fdg.envs import brax_adapter  # brax is imported only when asked for

        env_name, _, backend = name[len("brax/") :].partition(":")
        try:
            env = brax_adapter.make_brax(env_name, backend or "mjx")
        except ValueError as e:
            raise ConfigError(f"environment {name!r}: {e}") from None
        return env, env.default_params
    if name.startswith("gym/"):
        from jaxrl_fdg.envs import host  # gymnasium is imported only for host simulators

        try:
            return host.gymnasium_simulator(name[len(host.PREFIX) :]), None
        except (ImportError, ValueError) as e:
            raise ConfigError(f"environment {name!r}: {e}") from None
    return envs.make(name)


def make_hparams(spec: AlgorithmSpec, overrides: Mapping[str, Any]) -> Any:
    """The algorithm's hyperparameter dataclass with ``overrides`` applied and type-checked."""
    fields = {f.name: f for f in dataclasses.fields(spec.hparams)}
    unknown = sorted(str(k) for k in overrides if k not in fields)
    if unknown:
        raise ConfigError(
            f"unknown {spec.name} hyperparameter(s) {', '.join(unknown)} "
            f"(valid: {', '.join(fields)})"
        )
    hints = typing.get_type_hints(spec.hparams)
    values = {k: coerce(k, v, hints[k]) for k, v in overrides.items()}
    return spec.hparams(**values)


def coerce(name: str, value: Any, annotation: Any) -> Any:
    """Convert ``value`` (from a file or the command line) to the field's type, or explain."""
    origin = typing.get_origin(annotation)
    try:
        if annotation is bool:
            if isinstance(value, str):
                lowered = value.lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                return lowered in ("true", "1", "yes")
            if not isinstance(value, bool):
                raise ValueError
            return value
        if annotation is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if annotation is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if annotation is str:
            if not isinstance(value, str):
                raise ValueError
            return value
        if origin is tuple:
            (item,) = {a for a in typing.get_args(annotation) if a is not Ellipsis}
            if isinstance(value, str):
                value = [v for v in value.split(",") if v.strip()]
            return tuple(coerce(name, v, item) for v in value)
    except (TypeError, ValueError):
        type_name = getattr(annotation, "__name__", str(annotation))
        raise ConfigError(f"{name} must be of type {type_name}, got {value!r}") from None
    return value


# -- files -----------------------------------------------------------------------------------

_TOP_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)}


def from_mapping(data: Mapping[str, Any], source: str = "config") -> TrainConfig:
    """Build a ``TrainConfig`` from a mapping (as read from ``source``, a file or the command
    line) and check each value on its own, the algorithm's hyperparameters included.

    Every error is a :class:`ConfigError` that starts with ``source`` and names the key: an
    unknown key, a value of the wrong type, a value out of range. Checks that combine several
    values (a batch that must split into minibatches) are left to :func:`resolve`, since the
    values may come from different places.
    """
    unknown = sorted(str(k) for k in data if k not in _TOP_FIELDS)
    if unknown:
        raise ConfigError(
            f"{source}: unknown key(s) {', '.join(unknown)} "
            f"(valid: {', '.join(sorted(_TOP_FIELDS))})"
        )
    hints = typing.get_type_hints(TrainConfig)
    values: dict[str, Any] = {}
    try:
        for key, value in data.items():
            if key == "hparams":
                if not isinstance(value, Mapping):
                    raise ConfigError(f"hparams must be a table, got {value!r}")
                values[key] = dict(value)
            elif key in ("out", "run_name") and value in (None, ""):
                values[key] = None
            else:
                base = str if key in ("out", "run_name") else hints[key]
                values[key] = coerce(key, value, base)
        config = TrainConfig(**values)
        _check_values(config)
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None
    return config


# Readers by file suffix; each error type is a syntax error in that format.
_READERS = {
    ".toml": (tomllib.loads, tomllib.TOMLDecodeError),
    ".json": (json.loads, json.JSONDecodeError),
    ".yaml": (yaml.safe_load, yaml.YAMLError),
    ".yml": (yaml.safe_load, yaml.YAMLError),
}


def load(path: str | Path) -> dict[str, Any]:
    """Read a ``.toml``, ``.json``, ``.yaml`` or ``.yml`` config file into a mapping."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    if path.suffix not in _READERS:
        raise ConfigError(f"config file {str(path)!r} must end in {', '.join(_READERS)}")
    read, syntax_error = _READERS[path.suffix]
    try:
        data = read(path.read_text())
    except syntax_error as e:
        detail = " ".join(str(e).split())  # YAML's messages span lines; ours are one line
        raise ConfigError(
            f"config file {str(path)!r} is not valid {path.suffix[1:]}: {detail}"
        ) from None
    if data is None:  # an empty YAML file: no settings at all
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {str(path)!r} must hold a table of settings, got {type(data).__name__}"
        )
    return data


def to_mapping(resolved: Resolved) -> dict[str, Any]:
    """The fully resolved configuration, every hyperparameter spelled out (for the run folder)."""
    data = dataclasses.asdict(resolved.config)
    data["hparams"] = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in dataclasses.asdict(resolved.hparams).items()
    }
    data["hparams"].update({k: list(v) for k, v in resolved.sweep.items()})
    # The run folder's own name is not part of what the run computes: a re-run gets a new one.
    data.pop("run_name")
    # TOML has no null: leave unset optional values out; loading restores the default (None).
    return {k: v for k, v in data.items() if v is not None}


def dump_toml(data: Mapping[str, Any]) -> str:
    return tomli_w.dumps(data)

"""The run configuration: a frozen dataclass of everything that defines a training run.

Each value is checked on its own in :mod:`jaxrl_fdg.config.resolve`, once, before anything
compiles; derived numbers (iterations, batch size) are properties, never written back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from jaxrl_fdg.config import loggers

AUTO_BOUNDARIES = 25

# Run settings an algorithm may choose for itself (``AlgorithmSpec.defaults``); a config leaves
# them ``None`` to take the algorithm's value, and these where the algorithm names none.
RUN_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "env": "CartPole-v1",
        "total_steps": 500_000,
        "num_envs": 4,
        "rollout_len": 128,
        "log_every": 0,
    }
)

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
    "logger",
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
      env: registered environment name, or an adapter's (``brax/``, ``gym/``, ``gymnax/``,
        ``envpool/``: ``jaxrl-fdg list``).
      env_options: keywords for the environment, as ``envs.make(env, **env_options)`` takes
        them: fields of a registered environment's params, Brax's environment constructor,
        ``gymnasium.make``, gymnax's params or EnvPool's options (e.g. ``episodic_life``);
        ``max_steps`` is the episode length under every prefix.

      ``env``, ``total_steps``, ``num_envs``, ``rollout_len`` and ``log_every`` left ``None``
      take the algorithm's own defaults (``AlgorithmSpec.defaults``, shown by ``jaxrl-fdg
      list``), else :data:`RUN_DEFAULTS`; :meth:`with_defaults` fills them in, and
      :func:`~jaxrl_fdg.config.resolve` does so before anything else.
      fusion: one of ``eager | step | fragment | iteration | scan``, or ``auto`` (each compiled
        mode measured on the run, the fastest run: ``jaxrl_fdg.run.autotune``).
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
        re-run of the same programs loads them instead of compiling
        (``jaxrl_fdg.run.compile_cache``; a cache configured otherwise is left alone). ``False``
        leaves JAX's settings untouched.
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
      placement: a registered placement (``jaxrl_fdg.policies``): ``single`` (one device);
        ``data_parallel`` (``num_envs`` split into ``devices`` shards, gradients averaged across
        them); ``actor_learner`` (the rollout on one device, the learner on another); or
        ``host_env`` (a host simulator's batch in two halves, stepped on the host while the
        device acts for the other half); or ``auto`` (those this machine allows measured on the
        run, the fastest run).
      devices: shards of a data-parallel run, one per device; 2 for ``actor_learner``.
      dp_backend: how shards run: ``shard_map`` (default), ``pmap``, or ``vmap`` (every shard on
        one device: the reference a multi-device run equals).
      coordinator: ``host:port`` of process 0, which every process of a run across processes
        connects to (``jaxrl_fdg.policies.distributed``); not used with one process.
      num_processes: processes that run one data-parallel program together (1: this one alone);
        their devices form one mesh, and ``devices`` counts them all.
      process_id: this process's index, ``0 .. num_processes - 1``; process 0 writes the run
        folder.
      policy_lag: 0, or 1 to learn from the rollout collected one iteration earlier, so that
        collecting and learning overlap (asynchronous actors with placement ``actor_learner``;
        see ``jaxrl_fdg.core.loop.LaggedLoop``).
      logger: where metrics go besides the run folder's files: a comma list of ``tensorboard``
        (event files, when tensorboardX is installed) and ``wandb`` (Weights & Biases: the
        ``wandb`` extra), or ``none`` (see :mod:`jaxrl_fdg.run.loggers`).
      hparams: overrides of the algorithm's hyperparameters, by field name. A list of values
        for a float hyperparameter (``"1e-3,3e-4"`` on the command line) sweeps it: one run
        per value (per combination, for several lists) and per seed, all in one vmapped
        program (see :func:`lanes`).
    """

    algo: str = "ppo"
    env: str | None = None
    env_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    fusion: str = "scan"
    total_steps: int | None = None
    num_envs: int | None = None
    rollout_len: int | None = None
    seed: int = 0
    out: str | None = "runs"
    run_name: str | None = None
    log_every: int | None = None
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
    logger: str = "tensorboard"
    hparams: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def with_defaults(self, defaults: Mapping[str, Any] = RUN_DEFAULTS) -> TrainConfig:
        """This config with every unset run setting taken from ``defaults`` (an algorithm's),
        then from :data:`RUN_DEFAULTS`."""
        unknown = sorted(set(defaults) - set(RUN_DEFAULTS))
        if unknown:
            raise ValueError(
                f"algorithm defaults name {', '.join(unknown)}, which an algorithm cannot "
                f"choose (valid: {', '.join(RUN_DEFAULTS)})"
            )
        changes = {
            name: defaults.get(name, fallback)
            for name, fallback in RUN_DEFAULTS.items()
            if getattr(self, name) is None
        }
        return dataclasses.replace(self, **changes) if changes else self

    def _setting(self, name: str) -> Any:
        value = getattr(self, name)
        if value is None:
            raise ValueError(
                f"{name} is unset: it takes the algorithm's default when the config is "
                "resolved (use resolve(config).config, or config.with_defaults(...))"
            )
        return value

    @property
    def steps_per_iteration(self) -> int:
        return self._setting("num_envs") * self._setting("rollout_len")

    @property
    def num_iterations(self) -> int:
        return self._setting("total_steps") // self.steps_per_iteration

    @property
    def loggers(self) -> tuple[str, ...]:
        """The names in ``logger``, e.g. ``("tensorboard", "wandb")``."""
        return loggers.parse(self.logger)

    @property
    def boundary_every(self) -> int:
        if self._setting("log_every"):
            return min(self.log_every, self.num_iterations)
        return max(1, -(-self.num_iterations // AUTO_BOUNDARIES))

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

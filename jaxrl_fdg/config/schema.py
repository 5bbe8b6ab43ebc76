"""The run configuration: a frozen dataclass of everything that defines a training run.

Each value is checked on its own in :mod:`jaxrl_fdg.config.resolve`, once, before anything
compiles; derived numbers (iterations, batch size) are properties, never written back.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

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

# The three groups of run settings (``jaxrl-fdg train --help`` shows them apart).
EXPERIMENT = "experiment"  # what is trained, on what, for how long
EXECUTION = "execution"  # how the programs are compiled and where they run
BOOKKEEPING = "bookkeeping"  # how the run is watched, stored and checked
GROUPS = (EXPERIMENT, EXECUTION, BOOKKEEPING)


def setting(
    default: Any, group: str, help: str, *, computed: bool = True, flag: bool = True
) -> Any:
    """A field of :class:`TrainConfig`: its ``group``, the line ``--help`` shows for it, whether
    it changes what the run computes (a run resumes, and replicates group, only with the same
    ``computed`` settings), and whether the command line has a ``--name VALUE`` flag for it."""
    metadata = {"group": group, "help": help, "computed": computed, "flag": flag}
    if isinstance(default, dict):
        return dataclasses.field(default_factory=dict, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


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
        whole iterations. A resumed run given a larger one goes on to it (an extension:
        :mod:`jaxrl_fdg.run.extension`).
      schedule_steps: env steps that the schedules which depend on the budget span
        (``AlgorithmContext.num_iterations``: PPO's annealed learning rate, DQN's epsilon decay,
        prioritized replay's beta); past them a schedule holds its last value. ``None``: the
        budget, ``total_steps``. An extension sets it to the budget the run had before, so the
        iterations already done keep the schedule they ran under.
      num_envs: environments stepped in parallel.
      rollout_len: steps per environment per iteration.
      seed: the run's only source of randomness.
      out: parent folder of run folders; ``None`` writes nothing.
      run_name: the run folder's name (default: ``{algo}-{env}-{fusion}-s{seed}-{time}``).
      log_every: iterations between host boundaries (progress, metrics); 0 chooses about
        ``AUTO_BOUNDARIES`` boundaries per run. In ``scan`` mode it is also the number of
        iterations fused into one program call. With ``pbt_every`` or ``halving_every``, the
        largest divisor of a population step's interval (in iterations) up to that, so that
        each step has a row.
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
        ``seed-<seed>/`` inside the run folder (beyond ``run.lanes.LANE_FOLDERS_MAX`` lanes, to
        one table, ``lane_metrics.jsonl``); the run's own rows average over seeds.
      num_lanes: with a hyperparameter given as a range (``loguniform:LOW:HIGH``,
        ``uniform:LOW:HIGH``), the number of points a random search draws; lane ``i`` has seed
        ``seed + i`` and computes what that point run alone with that seed computes.
      pbt_every, pbt_quantile, pbt_perturb, pbt_resample: population-based training across
        the lanes (:mod:`jaxrl_fdg.tuning.population`): every ``pbt_every`` env steps the
        lanes are ranked by ``rank_metric``; the worst ``pbt_quantile`` copy a lane of the
        best ``pbt_quantile`` (its learner, optimizer, normaliser and replay) and multiply
        each swept hyperparameter by one of ``pbt_perturb``'s factors, or draw it afresh with
        chance ``pbt_resample``.
      halving_every, halving_drop: successive halving with restarts: every ``halving_every``
        env steps the worst ``halving_drop`` of the lanes, ranked by ``rank_metric``, start
        new points drawn from the sweep, each computing what that point alone computes.
      rank_metric: what populations rank their lanes by, averaged since their last step:
        ``episode_return`` (completed episodes' return) or a learner metric; ``-NAME``
        ranks lower first.
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

    Each field is declared with :func:`setting`: its group (experiment, execution,
    bookkeeping), its ``--help`` line, and whether it changes what is computed
    (:data:`NOT_COMPUTED` lists those that do not).
    """

    # -- experiment: what is trained, on what, for how long ----------------------------------
    algo: str = setting(
        "ppo",
        EXPERIMENT,
        "registered algorithm (see `jaxrl-fdg list`), or one "
        "of your own: package.module:SPEC or path/to/file.py:SPEC",
    )
    env: str | None = setting(
        None,
        EXPERIMENT,
        "registered environment, or prefix/<id> of an "
        "adapter (see `jaxrl-fdg list`); MODULE:ID imports MODULE "
        "(package.module or path/to/file.py) first, which registers ID",
    )
    env_options: Mapping[str, Any] = setting(
        {}, EXPERIMENT, "keywords for the environment", flag=False
    )
    total_steps: int | None = setting(
        None,
        EXPERIMENT,
        "environment-step budget; with --resume, a larger one extends the run (its schedules "
        "keep their horizon: --schedule-steps)",
    )
    schedule_steps: int | None = setting(
        None,
        EXPERIMENT,
        "env steps that the schedules which depend on the budget span (an annealed learning "
        "rate, epsilon decay), holding their last value past them; default: total_steps, or the "
        "first budget of an extended run",
    )
    num_envs: int | None = setting(None, EXPERIMENT, "environments stepped in parallel")
    rollout_len: int | None = setting(None, EXPERIMENT, "steps per environment per iteration")
    seed: int = setting(0, EXPERIMENT, "random seed")
    num_seeds: int = setting(
        1, EXPERIMENT, "independent runs (seeds seed, seed+1, ...) in one vmapped program"
    )
    num_lanes: int = setting(
        0,
        EXPERIMENT,
        "lanes of a random search: points drawn from the hyperparameters given as ranges "
        "(e.g. --lr loguniform:1e-4:1e-2), seeds seed, seed+1, ...",
    )
    pbt_every: int = setting(
        0,
        EXPERIMENT,
        "env steps between population-based training steps across the lanes: the worst "
        "copy the best and perturb their swept hyperparameters (0: off)",
    )
    pbt_quantile: float = setting(
        0.25, EXPERIMENT, "PBT: the fraction of lanes that copy, and that are copied"
    )
    pbt_perturb: str = setting(
        "0.8,1.25", EXPERIMENT, "PBT: factors a copied swept hyperparameter is multiplied by"
    )
    pbt_resample: float = setting(
        0.25,
        EXPERIMENT,
        "PBT: the chance a copied hyperparameter is drawn afresh (from its range or list) "
        "instead of perturbed",
    )
    halving_every: int = setting(
        0,
        EXPERIMENT,
        "env steps between successive halving steps across the lanes: the worst restart on "
        "new points drawn from the sweep (0: off)",
    )
    halving_drop: float = setting(
        0.5, EXPERIMENT, "successive halving: the fraction of lanes restarted at each step"
    )
    rank_metric: str = setting(
        "episode_return",
        EXPERIMENT,
        "PBT and successive halving: what lanes are ranked by, its mean since the last step: "
        "episode_return, or a learner metric (-NAME: lower is better)",
    )
    policy_lag: int = setting(
        0,
        EXPERIMENT,
        "1: learn from the rollout collected one iteration earlier (asynchronous actors)",
    )
    hparams: Mapping[str, Any] = setting(
        {}, EXPERIMENT, "the algorithm's hyperparameters", flag=False
    )
    # -- execution: how the programs are compiled and where they run -------------------------
    fusion: str = setting("scan", EXECUTION, "how fragments are compiled")
    placement: str = setting("single", EXECUTION, "where fragments run")
    devices: int = setting(
        1, EXECUTION, "devices: data_parallel shards, one per device; actor_learner uses 2"
    )
    dp_backend: str = setting("shard_map", EXECUTION, "data_parallel backend (vmap: one device)")
    # How the processes of a run are wired together, not what they compute (a run over P
    # processes computes what one process with as many shards computes); process_id differs
    # between the processes of one run.
    coordinator: str | None = setting(
        None,
        EXECUTION,
        "host:port of process 0, for a data_parallel run across processes",
        computed=False,
    )
    num_processes: int = setting(
        1,
        EXECUTION,
        "processes of a data_parallel run across processes (1: this one alone)",
        computed=False,
    )
    process_id: int = setting(
        0,
        EXECUTION,
        "this process's index, 0 .. num_processes - 1 (0 writes the run folder)",
        computed=False,
    )
    compile_cache: bool = setting(
        True, EXECUTION, "JAX's persistent compilation cache", computed=False, flag=False
    )
    debug_nans: bool = setting(False, EXECUTION, "JAX's NaN checks", computed=False, flag=False)
    # -- bookkeeping: how the run is watched, stored and checked -----------------------------
    out: str | None = setting(
        "runs", BOOKKEEPING, "parent folder of run folders ('' to write nothing)", computed=False
    )
    run_name: str | None = setting(None, BOOKKEEPING, "name of the run folder", computed=False)
    log_every: int | None = setting(
        None, BOOKKEEPING, "iterations between host boundaries (0: auto)", computed=False
    )
    progress: bool = setting(True, BOOKKEEPING, "live progress", computed=False, flag=False)
    profile: str = setting("host", BOOKKEEPING, "timing: off | host | sync | trace", computed=False)
    checkpoint_every: int = setting(
        0,
        BOOKKEEPING,
        "env steps between checkpoints (0: at the end and on Ctrl-C only)",
        computed=False,
    )
    keep: int = setting(3, BOOKKEEPING, "checkpoints to keep", computed=False)
    eval_every: int = setting(
        0,
        BOOKKEEPING,
        "env steps between evaluations of the deterministic policy (0: none)",
        computed=False,
    )
    eval_episodes: int = setting(10, BOOKKEEPING, "episodes per evaluation", computed=False)
    eval_video: bool = setting(
        False,
        BOOKKEEPING,
        "with eval_every: a GIF of one episode of the policy at each evaluation, in the run "
        "folder's videos/",
        computed=False,
    )
    logger: str = setting(
        "tensorboard",
        BOOKKEEPING,
        "where metrics go besides the run "
        "folder's files: comma list of tensorboard, wandb; or none",
        computed=False,
    )

    def __post_init__(self) -> None:
        # numpy's scalars (np.int64(4) from a grid, np.float32 from a computation) as Python's.
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, np.generic):
                object.__setattr__(self, field.name, value.item())

    def with_defaults(self, defaults: Mapping[str, Any] = RUN_DEFAULTS) -> TrainConfig:
        """This config with every unset run setting taken from ``defaults`` (an algorithm's),
        then from :data:`RUN_DEFAULTS`. ``defaults["env_options"]`` are options the algorithm
        asks of its environment (MAPPO: the world state); the config's own ``env_options``
        override them key by key."""
        unknown = sorted(set(defaults) - set(RUN_DEFAULTS) - {"env_options"})
        if unknown:
            raise ValueError(
                f"algorithm defaults name {', '.join(unknown)}, which an algorithm cannot "
                f"choose (valid: {', '.join(RUN_DEFAULTS)}, env_options)"
            )
        changes = {
            name: defaults.get(name, fallback)
            for name, fallback in RUN_DEFAULTS.items()
            if getattr(self, name) is None
        }
        asked = defaults.get("env_options") or {}
        if any(key not in self.env_options for key in asked):
            changes["env_options"] = {**asked, **self.env_options}
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
    def schedule_iterations(self) -> int:
        """Iterations the budget's schedules span (``AlgorithmContext.num_iterations``)."""
        steps = self.total_steps if self.schedule_steps is None else self.schedule_steps
        return steps // self.steps_per_iteration

    @property
    def loggers(self) -> tuple[str, ...]:
        """The names in ``logger``, e.g. ``("tensorboard", "wandb")``."""
        return loggers.parse(self.logger)

    @property
    def boundary_every(self) -> int:
        if self._setting("log_every"):
            every = min(self.log_every, self.num_iterations)
        else:
            every = max(1, -(-self.num_iterations // AUTO_BOUNDARIES))
        population = self.pbt_every or self.halving_every
        if population:  # rows that fall on each population step: each lineage is whole
            steps = max(1, population // self.steps_per_iteration)
            every = max(d for d in _divisors(steps) if d <= every)
        return every

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in small]


# Settings that change how a run is watched, stored, checked or wired, never what it computes:
# a run resumes, and replicates group, regardless of them.
NOT_COMPUTED = tuple(f.name for f in dataclasses.fields(TrainConfig) if not f.metadata["computed"])

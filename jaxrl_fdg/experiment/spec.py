"""An experiment file: a grid of algorithms × environments × settings, each cell run with its
seeds vmapped in one program.

The smallest file::

    algos = ["ppo", "dqn"]
    envs = ["CartPole-v1", "Acrobot-v1"]
    seeds = 3
    total_steps = 50000

Every key (:data:`KEYS` lists them with their meaning) is checked when the file is read, and
every cell's configuration is resolved (its environment made, its hyperparameters checked)
before any cell starts: a bad file stops with one line naming the key and the valid choices.
A pair whose algorithm cannot act in the environment's action space (DQN on Pendulum) is left
out of the grid, and said so, rather than stopping it: a suite mixes both kinds of task.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxrl_fdg import plugins
from jaxrl_fdg.config import TrainConfig
from jaxrl_fdg.config import files as config_files
from jaxrl_fdg.errors import ConfigError, SpaceMismatch
from jaxrl_fdg.experiment import values as check

KEYS = {
    "name": "the experiment's name (default: the file's stem)",
    "suite": "start from a named suite's grid (classic, minatar, brax); the file's keys override",
    "algos": "algorithms: built-in names or module:SPEC / path.py:SPEC references",
    "envs": "environments: built-in ids or prefix/<id> adapters",
    "seeds": "seeds per cell, trained as lanes of one program (--num-seeds)",
    "seed": "the first seed (default 0): a cell trains seeds seed .. seed + seeds - 1",
    "total_steps": "env steps per seed: a number, or a table of numbers by environment",
    "eval_every": "env steps between evaluations of the deterministic policy (default: none)",
    "eval_episodes": "episodes per evaluation (default 10)",
    "checkpoints": "checkpoints per cell over its budget (default 10): where a resume starts",
    "run": "a table of run settings for every cell (num_envs, fusion, placement, ...)",
    "settings": "tables of settings by algorithm: hyperparameters, run settings, a config file",
    "env_options": "tables of environment options by environment",
    "normalize": "[random, reference] scores by environment, for the report's normalisation",
}
# Settings the grid decides for every cell; a setting table or config file cannot change them.
GRID_SETTINGS = ("algo", "env", "total_steps", "seed", "num_seeds", "out", "run_name")
# A run across processes (jax.distributed) starts one process per rank with its own flags; an
# experiment's cell is one process, so these are refused in a file.
ACROSS_PROCESSES = ("num_processes", "coordinator", "process_id")
DEFAULT_CHECKPOINTS = 10
DEFAULT_SETTING = "default"
_TRAIN_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)}


@dataclasses.dataclass(frozen=True)
class Setting:
    """One named setting of an algorithm: run settings and hyperparameters over its defaults."""

    name: str
    values: Mapping[str, Any]  # TrainConfig fields; hyperparameters under "hparams"


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A parsed experiment file; :func:`cells` turns it into the runs it stands for."""

    name: str
    algos: tuple[str, ...]
    envs: tuple[str, ...]
    seeds: int
    seed: int = 0
    total_steps: Mapping[str, int] = dataclasses.field(default_factory=dict)  # by env
    eval_every: int = 0
    eval_episodes: int = 10
    checkpoints: int = DEFAULT_CHECKPOINTS
    run: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    settings: Mapping[str, tuple[Setting, ...]] = dataclasses.field(default_factory=dict)
    env_options: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    normalize: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    suite: str | None = None
    source: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the file, as read


@dataclasses.dataclass(frozen=True)
class Cell:
    """One (algorithm, environment, setting) of the grid: one run folder, its seeds as lanes."""

    name: str
    algo: str
    env: str
    setting: str
    config: TrainConfig  # out and run_name left unset: the experiment's folder decides

    def definition(self) -> dict[str, Any]:
        """What the cell is: its configuration, as a plain mapping (JSON-ready)."""
        return plain(self.config)

    def digest(self) -> str:
        text = json.dumps(self.definition(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class LeftOut:
    """A pair of the grid that does not fit: the algorithm cannot act in the env's space."""

    name: str
    algo: str
    env: str
    setting: str
    reason: str


def load(path: str | Path) -> Experiment:
    """The experiment in ``path`` (TOML), or a named suite's (``classic``, ``minatar``,
    ``brax``) when no such file exists."""
    from jaxrl_fdg.experiment import suites

    path = Path(path)
    if not path.exists() and str(path) in suites.SUITES:
        return parse({"suite": str(path)}, source=str(path))
    if not path.is_file():
        raise ConfigError(
            f"experiment file {str(path)!r} does not exist (or give a suite: "
            f"{', '.join(suites.SUITES)})"
        )
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not a TOML file: {e}") from None
    return parse(data, source=str(path), base=path.parent, default_name=path.stem)


def parse(
    data: Mapping[str, Any],
    *,
    source: str = "experiment",
    base: Path | None = None,
    default_name: str | None = None,
) -> Experiment:
    """An :class:`Experiment` from a mapping (a file's, or one built in Python). ``base``: the
    folder config files named in ``settings`` are found from (default: the working folder)."""
    data = dict(data)
    unknown = sorted(k for k in data if k not in KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)} (valid: {_keys()})")
    suite = _suite(source, data)
    merged = {**suite, **data}
    for key in ("algos", "envs", "seeds", "total_steps"):
        if key not in merged:
            raise ConfigError(f"{source}: {key!r} is missing ({KEYS[key]})")
    algos = check.names(source, "algos", merged["algos"])
    envs = check.names(source, "envs", merged["envs"])
    for algo in algos:
        _check_algo(source, algo)
    name = check.text(
        source, "name", data.get("name", default_name or suite.get("name") or "experiment")
    )
    return Experiment(
        name=name,
        algos=algos,
        envs=envs,
        seeds=check.count(source, "seeds", merged["seeds"], minimum=1),
        seed=check.count(source, "seed", merged.get("seed", 0), minimum=0),
        total_steps=_budgets(source, merged["total_steps"], envs),
        eval_every=check.count(source, "eval_every", merged.get("eval_every", 0), minimum=0),
        eval_episodes=check.count(
            source, "eval_episodes", merged.get("eval_episodes", 10), minimum=1
        ),
        checkpoints=check.count(
            source, "checkpoints", merged.get("checkpoints", DEFAULT_CHECKPOINTS), minimum=1
        ),
        run=_run_table(source, "run", merged.get("run", {})),
        settings=_settings(
            source,
            {  # the suite's settings of the algorithms the grid keeps, then the file's
                **{k: v for k, v in suite.get("settings", {}).items() if k in algos},
                **data.get("settings", {}),
            },
            algos,
            base,
        ),
        env_options=_by_env(source, "env_options", merged.get("env_options", {}), envs),
        normalize=_by_env(
            source, "normalize", {**suite.get("normalize", {}), **data.get("normalize", {})}
        ),
        suite=suite.get("name"),
        source=data,
    )


def _suite(source: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of the suite ``data`` starts from (none without ``suite``)."""
    from jaxrl_fdg.experiment import suites

    if "suite" not in data:
        return {}
    name = check.text(source, "suite", data["suite"])
    if name not in suites.SUITES:
        raise ConfigError(f"{source}: suite {name!r} is not one of {', '.join(suites.SUITES)}")
    return suites.SUITES[name].as_mapping()


def cells(experiment: Experiment) -> tuple[list[Cell], list[LeftOut]]:
    """The grid's cells, each configuration resolved (checked whole: the environment made, the
    hyperparameters checked against it), and the pairs left out because the algorithm cannot
    act in the environment's action space. Any other bad value raises :class:`ConfigError`
    naming the cell."""
    from jaxrl_fdg.config.resolve import resolve

    made, left_out = [], []
    seen: dict[str, str] = {}
    for algo in experiment.algos:
        for setting in experiment.settings.get(algo, (Setting(DEFAULT_SETTING, {}),)):
            for env in experiment.envs:
                name = cell_name(algo, env, setting.name)
                where = f"{algo} on {env}" + (
                    "" if setting.name == DEFAULT_SETTING else f" ({setting.name})"
                )
                if name in seen:
                    raise ConfigError(
                        f"cells {seen[name]!r} and {where!r} would share the folder {name!r}; "
                        "give their settings other names"
                    )
                seen[name] = where
                config = _cell_config(experiment, algo, env, setting, where)
                try:
                    resolve(config)
                except SpaceMismatch as e:
                    left_out.append(LeftOut(name, algo, env, setting.name, str(e)))
                    continue
                except ConfigError as e:
                    raise ConfigError(f"{where}: {e}") from None
                made.append(Cell(name, algo, env, setting.name, config))
    if not made:
        raise ConfigError(
            "no cell of the grid fits: "
            + "; ".join(f"{c.algo} on {c.env}: {c.reason}" for c in left_out)
        )
    return made, left_out


def plain(config: TrainConfig) -> dict[str, Any]:
    """``config``'s settings as a TOML- and JSON-ready mapping: unset ones, and those that do
    not change what a run computes where it is written (``out``, ``run_name``, ``progress``),
    left out."""
    data = dataclasses.asdict(config)
    data["hparams"] = {k: _listed(v) for k, v in dict(config.hparams).items()}
    data["env_options"] = {k: _listed(v) for k, v in dict(config.env_options).items()}
    skip = ("out", "run_name", "progress")
    return {k: _listed(v) for k, v in data.items() if v is not None and k not in skip}


def _listed(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def algo_label(algo: str) -> str:
    """The algorithm's own name (its spec's), where ``algo`` references it by file or module:
    ``examples/reinforce.py:SPEC`` is ``reinforce``."""
    from jaxrl_fdg.core import algorithm as algorithms

    return algorithms.get(algo).name if plugins.split_reference(algo) else algo


def cell_name(algo: str, env: str, setting: str) -> str:
    """``{algo}-{env}`` (``-{setting}`` for a setting other than the default), safe as a
    folder name: ``ppo-gymnax_Breakout-MinAtar``; an algorithm given by reference by its own
    name."""
    parts = [algo_label(algo), plugins.display_name(env)]
    if setting != DEFAULT_SETTING:
        parts.append(setting)
    return "-".join(p.replace("/", "_").replace(":", "_") for p in parts)


def _cell_config(
    experiment: Experiment, algo: str, env: str, setting: Setting, where: str
) -> TrainConfig:
    steps = experiment.total_steps[env]
    values: dict[str, Any] = {
        **experiment.run,
        **{k: v for k, v in setting.values.items() if k not in ("hparams", "env_options")},
        "algo": algo,
        "env": env,
        "total_steps": steps,
        "seed": experiment.seed,
        "num_seeds": experiment.seeds,
        "eval_every": experiment.eval_every,
        "eval_episodes": experiment.eval_episodes,
        "checkpoint_every": max(1, steps // experiment.checkpoints),
        "hparams": dict(setting.values.get("hparams", {})),
        "env_options": {
            **setting.values.get("env_options", {}),
            **experiment.env_options.get(env, {}),
        },
    }
    return config_files.from_mapping(values, source=where)


def _keys() -> str:
    return ", ".join(KEYS)


def _check_algo(source: str, algo: str) -> None:
    from jaxrl_fdg.core import algorithm as algorithms

    try:
        algorithms.get(algo)
    except ConfigError as e:
        raise ConfigError(f"{source}: algos: {e}") from None


def _budgets(source: str, value: Any, envs: Sequence[str]) -> dict[str, int]:
    if isinstance(value, Mapping):
        missing = [env for env in envs if env not in value]
        if missing:
            raise ConfigError(
                f"{source}: total_steps has no budget for {', '.join(missing)} "
                f"(it has: {', '.join(map(str, value)) or 'none'})"
            )
        return {
            env: check.count(source, f"total_steps.{env}", value[env], minimum=1) for env in envs
        }
    steps = check.count(source, "total_steps", value, minimum=1)
    return dict.fromkeys(envs, steps)


def _by_env(source: str, key: str, value: Any, envs: Sequence[str] | None = None) -> dict:
    """A table by environment: ``normalize``'s rows are score pairs, ``env_options``' tables
    (of the grid's environments only)."""
    row = check.score_pair if key == "normalize" else check.table
    rows = check.table(source, key, value)
    if envs is not None:
        unknown = [env for env in rows if env not in envs]
        if unknown:
            raise ConfigError(
                f"{source}: {key} names {', '.join(unknown)}, not in envs ({', '.join(envs)})"
            )
    return {env: row(source, f"{key}.{env}", v) for env, v in rows.items()}


def _one_process(source: str, where: str, name: str) -> None:
    if name in ACROSS_PROCESSES:
        raise ConfigError(
            f"{source}: {where}: an experiment's cell runs in one process (a run across "
            "processes starts one per rank: jaxrl-fdg train --num-processes, "
            "docs/concepts/placements.md)"
        )


def _run_table(source: str, key: str, value: Any) -> dict[str, Any]:
    table = check.table(source, key, value)
    for name in table:
        _one_process(source, f"{key}.{name}", name)
        if name in GRID_SETTINGS or name in ("hparams", "env_options", "checkpoint_every"):
            raise ConfigError(
                f"{source}: {key}.{name} is set by the experiment's grid "
                f"(use the file's own keys: {_keys()})"
            )
        if name not in _TRAIN_FIELDS:
            raise ConfigError(
                f"{source}: {key}.{name} is not a run setting "
                f"(valid: {', '.join(sorted(_TRAIN_FIELDS - set(GRID_SETTINGS)))})"
            )
    return table


def _settings(
    source: str, value: Any, algos: Sequence[str], base: Path | None
) -> dict[str, tuple[Setting, ...]]:
    """``settings.<algo>``: one table (the algorithm's setting) or a list of tables, each with
    a ``name``. In a table: ``config`` (a run config file, relative to the experiment file),
    run settings (``num_envs``, ``fusion``, ...) and the algorithm's hyperparameters."""
    table = check.table(source, "settings", value)
    out: dict[str, tuple[Setting, ...]] = {}
    for algo, entry in table.items():
        if algo not in algos:
            raise ConfigError(
                f"{source}: settings.{algo} names an algorithm not in algos ({', '.join(algos)})"
            )
        entries = entry if isinstance(entry, list) else [entry]
        made = []
        for i, item in enumerate(entries):
            where = f"settings.{algo}" + (f"[{i}]" if isinstance(entry, list) else "")
            item = check.table(source, where, item)
            if isinstance(entry, list) and "name" not in item:
                raise ConfigError(f"{source}: {where} needs a name (several settings of {algo})")
            name = check.text(source, f"{where}.name", item.pop("name", DEFAULT_SETTING))
            made.append(Setting(name, _setting_values(source, where, algo, item, base)))
        names = [s.name for s in made]
        if len(set(names)) < len(names):
            raise ConfigError(f"{source}: settings.{algo} repeats a name: {', '.join(names)}")
        out[algo] = tuple(made)
    return out


def _setting_values(
    source: str, where: str, algo: str, item: dict[str, Any], base: Path | None
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if "config" in item:
        path = Path(check.text(source, f"{where}.config", item.pop("config")))
        path = path if path.is_absolute() or base is None else base / path
        data = config_files.load(path)
        named = data.get("algo", algo)
        if plugins.normalize(str(named)) != plugins.normalize(algo):
            raise ConfigError(
                f"{source}: {where}.config {str(path)!r} is a config of {named}, not {algo}"
            )
        values = {k: v for k, v in data.items() if k not in GRID_SETTINGS}
        for key in values:
            _one_process(source, f"{where}.config {str(path)!r}: {key}", key)
    hparams = dict(values.pop("hparams", {}))
    for key, value in item.items():
        _one_process(source, f"{where}.{key}", key)
        if key in GRID_SETTINGS or key == "checkpoint_every":
            raise ConfigError(
                f"{source}: {where}.{key} is set by the experiment's grid "
                f"(use the file's own keys: {_keys()})"
            )
        if key in _TRAIN_FIELDS and key not in ("hparams",):
            values[key] = value
        elif key == "hparams":
            hparams.update(check.table(source, f"{where}.hparams", value))
        else:  # a hyperparameter of the algorithm: checked when the cell is resolved
            hparams[key] = value
    values["hparams"] = hparams
    return values

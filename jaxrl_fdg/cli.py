"""The ``jaxrl-fdg`` command: ``train``, ``evaluate``, ``list``, ``graph``, ``profile``, ``plot``,
``compare``.

Where a command writes is its ``--out``: the parent folder of run folders for ``train`` and
``profile``, the image file for ``plot`` and ``compare``.

Settings are layered: defaults, then ``--config FILE``, then flags given on the command line.
Bad input of any kind exits with status 2 and a one-line message, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxrl_fdg import compare, envs, lineage, plots, plugins, policies
from jaxrl_fdg import config as cfg
from jaxrl_fdg.core import algorithm as algorithms
from jaxrl_fdg.errors import ConfigError, OutOfMemory, one_line
from jaxrl_fdg.policies import FUSION_MODES, PROGRAMS, programs
from jaxrl_fdg.run import build_loop, evaluate, signals, train
from jaxrl_fdg.run.checkpoint import NonFiniteError, describe_nan

# The flags of `train`: every TrainConfig setting declared with a flag, by group, with the
# help line its field carries (config.schema.setting), plus the valid choices where they are
# known only here.
_RUN_FLAGS = {
    f.name: f.metadata["help"] for f in dataclasses.fields(cfg.TrainConfig) if f.metadata["flag"]
}
_CHOICES = {
    "fusion": lambda: f"{' | '.join(FUSION_MODES)}, or auto (the fastest, measured)",
    "placement": lambda: (
        f"{' | '.join(policies.registered())}, or auto (the fastest this machine allows, measured)"
    ),
    "dp_backend": lambda: " | ".join(policies.DP_BACKENDS),
}
_TEXT_FLAGS = (
    "out",
    "run_name",
    "profile",
    "placement",
    "dp_backend",
    "coordinator",
    "pbt_perturb",
    "rank_metric",
)


def main(argv: Sequence[str] | None = None) -> int:
    """The command, on ``argv`` (default: this process's arguments); returns the exit status.

    Run as the command itself (``argv`` not given), a command that a signal stopped at once
    (a second Ctrl-C, a signal while compiling) ends the process there, once its files are
    written: exiting normally would wait for the device work or the compiles it abandoned."""
    as_command = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with signals.Signals():  # SIGTERM and SIGHUP end a command as Ctrl-C does, at once
            return _dispatch(argv)
    except ConfigError as e:
        _say(f"error: {e}")
        return 2
    except NonFiniteError as e:
        _say(f"stopped: {e}")
        return 1
    except OutOfMemory as e:  # while training; the folder says failed and resumes
        _say(f"error: {e}")
        return 1
    except FloatingPointError as e:  # --debug-nans: JAX raised at the op that made the NaN
        _say(f"stopped: non-finite value: {describe_nan(e)}")
        return 1
    except OSError as e:  # a full disk, a permission lost while the run writes its folder
        where = f": {e.filename}" if e.filename else ""
        _say(f"error: {e.strerror or e}{where}")
        return 1
    except KeyboardInterrupt as e:  # a stop signal where the command could not stop cleanly
        signum = signals.signal_of(e)
        print(f"jaxrl-fdg: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
        if as_command:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(signals.exit_code(signum))
        return signals.exit_code(signum)


def _say(message: str) -> None:
    """``jaxrl-fdg: <message>`` on stderr as one line: characters that are not printable (a
    line or record separator in a name read from a file) are written as escapes."""
    print(f"jaxrl-fdg: {one_line(message)}", file=sys.stderr)


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["train"]:
        return _train(argv[1:])
    args = _parser().parse_args(argv)
    commands = {
        "list": lambda: _list(),
        "profile": lambda: _profile(args),
        "plot": lambda: _plot(args),
        "evaluate": lambda: _evaluate(args),
        "graph": lambda: _graph(args),
        "compare": lambda: compare.run(args),
    }
    return commands[args.command]()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxrl-fdg",
        description="Reinforcement learning in JAX as fragmented dataflow graphs.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("train", help="train an agent", add_help=False)
    sub.add_parser("list", help="list algorithms, environments, placements and fusion modes")
    _add_profile(sub.add_parser("profile", help="where the time goes, under several fusion modes"))
    graph = sub.add_parser("graph", help="print an algorithm's dataflow graph and its schedule")
    graph.add_argument(
        "algo", help="algorithm name, or package.module:SPEC or path/to/file.py:SPEC"
    )
    graph.add_argument("--env", help="environment (default: the algorithm's)")
    graph.add_argument("--num-envs", type=int, help="environments (default: the algorithm's)")
    graph.add_argument("--rollout-len", type=int, help="rollout length (default: the algorithm's)")
    _add_plot(
        sub.add_parser(
            "plot",
            help="learning curves of run folders, with a band over seeds",
            allow_abbrev=False,
        )
    )
    compare.add_arguments(
        sub.add_parser(
            "compare",
            help="groups of runs side by side: IQM, mean, median with bootstrap intervals",
            allow_abbrev=False,
        )
    )
    ev = sub.add_parser(
        "evaluate", help="evaluate a run's checkpoint with its deterministic policy"
    )
    ev.add_argument("run", metavar="RUN", help="a run folder")
    ev.add_argument("--episodes", type=int, help="episodes (default: the run's eval_episodes)")
    ev.add_argument("--iteration", type=int, help="the checkpoint's iteration (default: latest)")
    return parser


def _add_profile(prof: argparse.ArgumentParser) -> None:
    prof.add_argument("--algo", default=cfg.TrainConfig.algo)
    prof.add_argument("--env", help="environment (default: the algorithm's)")
    prof.add_argument("--fusion", default="step,fragment,scan", help="comma-separated modes")
    prof.add_argument("--profile", default="trace", help="timing mode: host | sync | trace")
    prof.add_argument("--total-steps", type=int, default=51_200)
    prof.add_argument("--num-envs", type=int, help="environments (default: the algorithm's)")
    prof.add_argument("--rollout-len", type=int, help="rollout length (default: the algorithm's)")
    prof.add_argument("--seed", type=int, default=0)
    prof.add_argument("--out", default="runs", help="parent folder of the run folders")


def _add_plot(plot: argparse.ArgumentParser) -> None:
    plot.add_argument("runs", nargs="+", metavar="RUN", help="a run folder, or a folder of them")
    plot.add_argument(
        "--metric", default="episode_return", help="metrics column (default: episode_return)"
    )
    plot.add_argument("--x", default="step", help="column of the x axis (default: step)")
    plot.add_argument(
        "--ci",
        default="std",
        help="band over seeds: std (mean ± 1 std) | iqm (IQM, 95%% bootstrap interval)",
    )
    plot.add_argument(
        "--out",
        "--output",  # its first name, still accepted
        dest="output",
        metavar="FILE",
        help=f"image file (default: {plots.DEFAULT_OUTPUT} here, or in the run folder of one run)",
    )
    plot.add_argument(
        "--lineage",
        action="store_true",
        help="one population-based training run (--pbt-every): each lane's metric and "
        "hyperparameters over the run, and each copy between lanes "
        f"(default file: {lineage.DEFAULT_OUTPUT} in the run folder)",
    )


def _train_parser(algo: str) -> argparse.ArgumentParser:
    spec = algorithms.get(algo)
    cfg.check_spec(spec)  # its hyperparameters' flags must not clash with the run's
    parser = argparse.ArgumentParser(
        prog="jaxrl-fdg train", description="Train an agent.", allow_abbrev=False
    )
    parser.add_argument("--config", metavar="FILE", help="a run config: .toml, .yaml/.yml or .json")
    parser.add_argument(
        "--resume",
        metavar="RUN",
        help="continue the run in this folder from its latest checkpoint, with its own config; "
        "with --total-steps, to that budget (an extension: its schedules keep the horizon they "
        "ran under)",
    )
    _add_run_flags(parser, spec)
    group = parser.add_argument_group(f"{spec.name} hyperparameters")
    for field in dataclasses.fields(spec.hparams):
        group.add_argument(
            _flag(field.name),
            dest=f"hp.{field.name}",
            default=None,
            metavar="VALUE",
            help=" ".join(
                filter(None, [field.metadata.get("help"), f"(default: {_default(field)})"])
            ),
        )
    return parser


def _add_run_flags(parser: argparse.ArgumentParser, spec: algorithms.AlgorithmSpec) -> None:
    """The run settings' flags, one argument group per group of settings."""
    hints = typing.get_type_hints(cfg.TrainConfig)
    groups = {name: parser.add_argument_group(name) for name in cfg.GROUPS}
    for field in dataclasses.fields(cfg.TrainConfig):
        if not field.metadata["flag"]:
            continue
        name = field.name
        kind = str if name in _TEXT_FLAGS else cfg.unoptional(hints[name])
        if name in cfg.RUN_DEFAULTS:
            default = f"{spec.defaults.get(name, cfg.RUN_DEFAULTS[name])}, {spec.name}'s"
        else:
            default = getattr(cfg.TrainConfig, name)
        choices = f": {_CHOICES[name]()}" if name in _CHOICES else ""
        groups[field.metadata["group"]].add_argument(
            _flag(name),
            dest=name,
            type=kind,
            default=None,
            metavar=name.upper(),
            help=f"{field.metadata['help']}{choices} (default: {default})",
        )
    groups[cfg.EXPERIMENT].add_argument(
        "--env-option",
        dest="env_option",
        action="append",
        metavar="KEY=VALUE",
        help="a keyword for the environment (repeatable), e.g. max_steps=200, or EnvPool's "
        "episodic_life=true; VALUE is read as a TOML value, else as text",
    )
    groups[cfg.BOOKKEEPING].add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=None,
        help="no live progress line",
    )
    groups[cfg.EXECUTION].add_argument(
        "--debug-nans",
        dest="debug_nans",
        action="store_true",
        default=None,
        help="JAX's NaN checks: raise at the op that first makes a NaN (slow)",
    )
    groups[cfg.EXECUTION].add_argument(
        "--no-compile-cache",
        dest="compile_cache",
        action="store_false",
        default=None,
        help="do not turn on JAX's persistent compilation cache (~/.cache/jaxrl_fdg/xla)",
    )


def _train(argv: list[str]) -> int:
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config")
    pre.add_argument("--algo")
    pre.add_argument("--resume")
    known, _ = pre.parse_known_args(argv)
    data: dict[str, Any] = {}
    algo = cfg.TrainConfig.algo
    if known.resume:
        if known.config:
            raise ConfigError("--resume takes the run's own config; --config cannot be given")
        known.config = str(Path(known.resume) / "config.toml")
        if not Path(known.config).is_file():
            raise ConfigError(f"{known.resume!r} is not a run folder (it has no config.toml)")
    if known.config:
        # The file is checked on its own first, so that its errors name the file.
        data = cfg.load(known.config)
        algo = cfg.from_mapping(data, source=known.config).algo
        _check_algo_flag(known, algo, data)
    args = _train_parser(known.algo or algo).parse_args(argv)

    given = {k: v for k, v in vars(args).items() if v is not None and k not in ("config", "resume")}
    hparams = dict(data.get("hparams", {}))
    hparams.update({k[3:]: v for k, v in given.items() if k.startswith("hp.")})
    env_options = dict(data.get("env_options", {}))
    env_options.update(_env_options(given.pop("env_option", [])))
    merged = {**data, **{k: v for k, v in given.items() if not k.startswith("hp.")}}
    merged["hparams"] = hparams
    merged["env_options"] = env_options
    config = cfg.from_mapping(merged, source="command line")

    result = train(config, print_summary=True, resume=args.resume)
    if result.run_dir is not None:
        print(f"run folder: {result.run_dir}")
    if result.summary["status"] == "interrupted":  # stopped by a signal, at a safe point
        return signals.exit_code(signal.Signals[result.summary.get("signal", "SIGINT")])
    return 0


def _check_algo_flag(known: argparse.Namespace, algo: str, data: dict[str, Any]) -> None:
    """``--algo`` beside a config that names another algorithm: a resumed run keeps its own,
    and a config's hyperparameters belong to the algorithm it names."""
    if not known.algo or known.algo == algo:
        return
    if known.resume:
        raise ConfigError(
            f"{known.resume!r} was trained with --algo {algo}; a resumed run keeps its "
            f"algorithm (leave out --algo {known.algo}, or start a new run with it)"
        )
    if data.get("hparams"):
        raise ConfigError(
            f"{known.config}: its hparams are {algo}'s, and --algo {known.algo} takes its own "
            f"(leave out --algo, or the file's hparams table)"
        )


def _env_options(pairs: list[str]) -> dict[str, Any]:
    """``--env-option KEY=VALUE`` pairs as a mapping; VALUE read as TOML (``200``, ``5.0``,
    ``true``, ``"text"``), else taken as text."""
    import tomllib

    options = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--env-option takes KEY=VALUE (e.g. max_steps=200), got {pair!r}")
        text = raw.strip()
        text = text.lower() if text.lower() in ("true", "false") else text
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        options[key.strip()] = value
    return options


def _evaluate(args: argparse.Namespace) -> int:
    result = evaluate(args.run, episodes=args.episodes, iteration=args.iteration)
    print(
        f"{result['run']}: iteration {result['iteration']} ({result['env_steps']:,} env steps), "
        f"{result['episodes']} episodes: return {result['eval_return']:.2f} "
        f"± {result['eval_return_std']:.2f}, length {result['eval_length']:.1f}"
    )
    return 0


def _list() -> int:
    print(
        "algorithms (default run: env, env steps, envs × rollout); your own: --algo "
        "package.module:SPEC or path/to/file.py:SPEC, or an installed package's entry point "
        f"({plugins.ALGORITHMS}):"
    )
    for name in algorithms.registered():
        spec = algorithms.get(name)
        run = cfg.TrainConfig(algo=name).with_defaults(spec.defaults)
        print(f"  {name:<12} {spec.summary}")
        print(
            f"  {'':<12} default run: {run.env}, {run.total_steps:,} steps, "
            f"{run.num_envs} × {run.rollout_len}"
        )
    print(
        "environments; your own: --env MODULE:ID (MODULE registers ID), or an installed "
        f"package's entry point ({plugins.ENVIRONMENTS}):"
    )
    for name in envs.registered():
        print(f"  {name}")
    print("environment adapters (prefix/<id>; packages are imported only when used):")
    for row in envs.adapters():
        status = "installed" if row.installed else f"not installed: pip install {row.install}"
        print(f"  {row.syntax:<24} {row.description}")
        print(f"  {'':<24} e.g. {row.example} ({status})")
    print("placements (--placement):")
    for name in policies.registered():
        print(f"  {name:<14} {policies.get(name).summary}")
    print(
        f"  {policies.AUTO_PLACEMENT:<14} measure the placements this machine allows; run the "
        "fastest"
    )
    print("fusion modes (most split to most fused; default scan):")
    for mode in FUSION_MODES:
        print(f"  {mode:<10} {PROGRAMS[mode]}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    if args.lineage:
        if len(args.runs) != 1:
            raise ConfigError(f"--lineage draws one run, got {len(args.runs)}")
        path = lineage.plot_lineage(args.runs[0], args.metric, args.output)
        print(f"lineage: {path}")
        return 0
    path = plots.plot_runs(args.runs, args.metric, args.x, args.output, args.ci)
    print(f"learning curve: {path}")
    return 0


def _graph(args: argparse.Namespace) -> int:
    config = cfg.TrainConfig(
        algo=args.algo, env=args.env, num_envs=args.num_envs, rollout_len=args.rollout_len, out=None
    )
    loop = build_loop(cfg.resolve(config))
    print(loop.graph.describe(programs(loop.graph.schedule)))
    return 0


_PROFILE_ROWS = (
    ("compile s (wall)", lambda t: t["compile_s"]),
    # Programs compiled at the same time on worker threads overlap: this sum can exceed the wall.
    ("compile s (programs, summed)", lambda t: t["compile_programs_s"]),
    ("run s", lambda t: t["run_s"]),
    ("host: dispatch s", lambda t: t["dispatch_s"]),
    ("host: waiting on device s", lambda t: t["device_wait_s"]),
    ("host: device→host s", lambda t: t["d2h_s"]),
    ("host: bookkeeping s", lambda t: t["host_bookkeeping_s"]),
    ("timing layer cost s", lambda t: t["overhead_s"]),
)


def _profile(args: argparse.Namespace) -> int:
    modes = [m.strip() for m in args.fusion.split(",") if m.strip()]
    if not modes:
        raise ConfigError(f"--fusion {args.fusion!r} names no fusion mode")
    base = cfg.TrainConfig(
        algo=args.algo,
        env=args.env,
        total_steps=args.total_steps,
        num_envs=args.num_envs,
        rollout_len=args.rollout_len,
        seed=args.seed,
        out=args.out or None,
        progress=False,
        profile=args.profile,
    )
    # Every name and size is checked before anything compiles; each run is resolved once.
    runs = [cfg.resolve(base.replace(fusion=mode)) for mode in modes]
    if args.profile == "off":
        raise ConfigError("profile mode 'off' measures nothing (valid here: host, sync, trace)")
    results = {}
    for resolved in runs:
        print(f"running {resolved.config.fusion} ...", file=sys.stderr, flush=True)
        results[resolved.config.fusion] = train(resolved).summary
    width = max(len(r[0]) for r in _PROFILE_ROWS) + 14
    print(f"{'':<{width}}" + "".join(f"{m:>12}" for m in modes))
    for label, get in _PROFILE_ROWS:
        print(f"{label:<{width}}" + "".join(f"{get(results[m]['timing']):>12.3f}" for m in modes))
    print(
        f"{'env-steps/s':<{width}}" + "".join(f"{results[m]['steps_per_s']:>12,.0f}" for m in modes)
    )
    scopes = sorted({k for r in results.values() for k in _device_shares(r)})
    for name in scopes:
        cells = "".join(f"{_device_shares(results[m]).get(name, 0.0):>11.0%} " for m in modes)
        print(f"{'device share: ' + name:<{width}}" + cells)
    _print_bound(results, modes, width)
    busy = [results[m]["timing"]["device_busy"] for m in modes]
    if any(b is not None for b in busy):
        print(
            f"{'device busy':<{width}}"
            + "".join(f"{'—' if b is None else format(b, '.0%'):>12}" for b in busy)
        )
    return 0


def _print_bound(results: dict[str, Any], modes: list[str], width: int) -> None:
    """Each program's verdict (compute, memory, overhead) and the roofline time per iteration
    on an H100, per mode (``--profile sync`` or ``trace``: see jaxrl_fdg.profiling.bound)."""
    analyses = {m: results[m]["timing"].get("bound") or {} for m in modes}
    names = sorted({n for a in analyses.values() for n in a.get("programs", {})})
    for name in names:
        cells = "".join(
            f"{analyses[m].get('programs', {}).get(name, {}).get('bound', '—'):>12}" for m in modes
        )
        print(f"{'bound: ' + name:<{width}}" + cells)
    h100 = [analyses[m].get("h100_iteration_s") for m in modes]
    if any(v is not None for v in h100):
        print(
            f"{'H100 roofline ms/iteration':<{width}}"
            + "".join(f"{'—' if v is None else format(v * 1e3, '.4f'):>12}" for v in h100)
        )


def _device_shares(summary: dict[str, Any]) -> dict[str, float]:
    scoped = summary["timing"].get("device_by_scope")
    if not scoped:
        return {}
    total = sum(scoped["device_exclusive_s"].values()) or 1.0
    return {k: v / total for k, v in scoped["device_exclusive_s"].items()}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()  # type: ignore[misc]

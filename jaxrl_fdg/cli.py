"""The ``jaxrl-fdg`` command: ``train``, ``list``, ``graph``.

Settings are layered: defaults, then ``--config FILE``, then flags given on the command line.
Bad input of any kind exits with status 2 and a one-line message, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from collections.abc import Sequence
from typing import Any

from jaxrl_fdg import algorithm as algorithms
from jaxrl_fdg import config as cfg
from jaxrl_fdg import envs
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fusion import FUSION_MODES, PROGRAMS
from jaxrl_fdg.runner import build_loop, train

_RUN_FLAGS = {
    "algo": "registered algorithm (see `jaxrl-fdg list`)",
    "env": "registered environment",
    "fusion": f"how fragments are compiled: {' | '.join(FUSION_MODES)}",
    "total_steps": "environment-step budget",
    "num_envs": "environments stepped in parallel",
    "rollout_len": "steps per environment per iteration",
    "seed": "random seed",
    "out": "parent folder of run folders ('' to write nothing)",
    "run_name": "name of the run folder",
    "log_every": "iterations between host boundaries (0: auto)",
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv)
    except ConfigError as e:
        print(f"jaxrl-fdg: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("jaxrl-fdg: interrupted", file=sys.stderr)
        return 130


def _dispatch(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="jaxrl-fdg",
        description="Reinforcement learning in JAX as fragmented dataflow graphs.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("train", help="train an agent", add_help=False)
    sub.add_parser("list", help="list algorithms, environments and fusion modes")
    graph = sub.add_parser("graph", help="print an algorithm's dataflow graph")
    graph.add_argument("algo", help="algorithm name")
    graph.add_argument("--env", default=cfg.TrainConfig.env)
    graph.add_argument("--num-envs", type=int, default=cfg.TrainConfig.num_envs)
    graph.add_argument("--rollout-len", type=int, default=cfg.TrainConfig.rollout_len)
    if argv[:1] == ["train"]:
        return _train(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list()
    return _graph(args)


def _train_parser(algo: str) -> argparse.ArgumentParser:
    spec = algorithms.get(algo)
    parser = argparse.ArgumentParser(
        prog="jaxrl-fdg train", description="Train an agent.", allow_abbrev=False
    )
    parser.add_argument("--config", metavar="FILE", help="a .toml or .json run config")
    run = parser.add_argument_group("run")
    hints = typing.get_type_hints(cfg.TrainConfig)
    for name, help_text in _RUN_FLAGS.items():
        kind = str if name in ("out", "run_name") else hints[name]
        run.add_argument(
            _flag(name),
            dest=name,
            type=kind,
            default=None,
            metavar=name.upper(),
            help=f"{help_text} (default: {getattr(cfg.TrainConfig, name)})",
        )
    run.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=None,
        help="no live progress line",
    )
    group = parser.add_argument_group(f"{spec.name} hyperparameters")
    for field in dataclasses.fields(spec.hparams):
        group.add_argument(
            _flag(field.name),
            dest=f"hp.{field.name}",
            default=None,
            metavar="VALUE",
            help=f"(default: {_default(field)})",
        )
    return parser


def _train(argv: list[str]) -> int:
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config")
    pre.add_argument("--algo")
    known, _ = pre.parse_known_args(argv)
    data: dict[str, Any] = cfg.load(known.config) if known.config else {}
    algo = known.algo or data.get("algo", cfg.TrainConfig.algo)
    args = _train_parser(algo).parse_args(argv)

    given = {k: v for k, v in vars(args).items() if v is not None and k != "config"}
    hparams = dict(data.get("hparams", {}))
    hparams.update({k[3:]: v for k, v in given.items() if k.startswith("hp.")})
    merged = {**data, **{k: v for k, v in given.items() if not k.startswith("hp.")}}
    merged["hparams"] = hparams
    if merged.get("out") == "":
        merged["out"] = None
    source = known.config or "command line"
    config = cfg.from_mapping(merged, source=source)

    result = train(config, print_summary=True)
    if result.run_dir is not None:
        print(f"run folder: {result.run_dir}")
    return 0


def _list() -> int:
    print("algorithms:")
    for name in algorithms.registered():
        print(f"  {name:<12} {algorithms.get(name).summary}")
    print("environments:")
    for name in envs.registered():
        print(f"  {name}")
    print("fusion modes (most split to most fused; default scan):")
    for mode in FUSION_MODES:
        print(f"  {mode:<10} {PROGRAMS[mode]}")
    return 0


def _graph(args: argparse.Namespace) -> int:
    config = cfg.TrainConfig(
        algo=args.algo, env=args.env, num_envs=args.num_envs, rollout_len=args.rollout_len, out=None
    )
    loop = build_loop(cfg.resolve(config))
    print(loop.graph.describe(PROGRAMS))
    return 0


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()  # type: ignore[misc]

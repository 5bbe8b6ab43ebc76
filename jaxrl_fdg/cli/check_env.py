"""``jaxrl-fdg check-env ID``: step an environment through the framework's contracts
(:func:`jaxrl_fdg.envs.check_env`) and print one line per check.

Exit status 0 where every check passes, 1 where the environment breaks a contract (and a line on
stderr naming the checks), 2 for a name ``envs.make`` cannot build or a bad flag value."""

from __future__ import annotations

import argparse
import dataclasses

from jaxrl_fdg import envs
from jaxrl_fdg.cli.common import env_options, say
from jaxrl_fdg.envs import check
from jaxrl_fdg.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "env",
        metavar="ID",
        help="the environment: a registered name (jaxrl-fdg list), an adapter's id "
        "(gymnax/Catch-bsuite, gym/CartPole-v1) or MODULE:NAME (walk.py:Walk-v0)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=200,
        help=f"steps of the compiled rollout, at most {check.MAX_STEPS:,} (default: 200)",
    )
    parser.add_argument(
        "--num-envs",
        type=int,
        default=4,
        help=f"environments stepped side by side, at most {check.MAX_ENVS:,} (default: 4)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the seed of every random key drawn (default: 0)"
    )
    parser.add_argument(
        "--env-option",
        dest="env_option",
        action="append",
        metavar="KEY=VALUE",
        help="a keyword for the environment (repeatable), as train takes it: e.g. "
        "max_steps=200; VALUE is read as a TOML value, else as text",
    )


def run(args: argparse.Namespace) -> int:
    options = env_options(args.env_option or [])
    try:
        check.check_sizes(steps=args.steps, num_envs=args.num_envs, seed=args.seed)
        env, params = envs.make(args.env, **options)
    except ValueError as e:  # a bad size, an unknown name or option, a missing package
        raise ConfigError(str(e)) from None
    print(
        f"check-env {args.env}: {args.num_envs} environments, {args.steps} steps, seed {args.seed}"
    )
    report = check.check_env(env, params, seed=args.seed, steps=args.steps, num_envs=args.num_envs)
    report = dataclasses.replace(report, env=args.env)
    print(report)
    if report.ok:
        return 0
    say(f"error: {args.env} breaks the contract of {', '.join(report.failed)} (see above)")
    return 1

"""``jaxrl-fdg evaluate``: a run's checkpoint played with its deterministic policy."""

from __future__ import annotations

import argparse

from jaxrl_fdg.run import evaluate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="a run folder")
    parser.add_argument("--episodes", type=int, help="episodes (default: the run's eval_episodes)")
    parser.add_argument(
        "--iteration", type=int, help="the checkpoint's iteration (default: latest)"
    )


def run(args: argparse.Namespace) -> int:
    result = evaluate(args.run, episodes=args.episodes, iteration=args.iteration)
    print(
        f"{result['run']}: iteration {result['iteration']} ({result['env_steps']:,} env steps), "
        f"{result['episodes']} episodes: return {result['eval_return']:.2f} "
        f"± {result['eval_return_std']:.2f}, length {result['eval_length']:.1f}"
    )
    return 0

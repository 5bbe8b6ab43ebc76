"""``jaxrl-fdg evaluate``: a run's checkpoint played with its deterministic policy."""

from __future__ import annotations

import argparse

from jaxrl_fdg.run import evaluate
from jaxrl_fdg.run.evaluation import Video
from jaxrl_fdg.run.video import FORMATS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="a run folder")
    parser.add_argument("--episodes", type=int, help="episodes (default: the run's eval_episodes)")
    parser.add_argument(
        "--iteration", type=int, help="the checkpoint's iteration (default: latest)"
    )
    parser.add_argument(
        "--video",
        action="store_true",
        help="also write a video of the policy's episodes (videos/eval-<iteration>.gif in the "
        "run folder, or --out), drawn by the environment's own renderer",
    )
    parser.add_argument(
        "--video-episodes", type=int, default=1, metavar="N", help="episodes in the video (1)"
    )
    parser.add_argument(
        "--video-format",
        choices=FORMATS,
        default="gif",
        help="gif (default) or mp4 (the video extra)",
    )
    parser.add_argument("--out", metavar="FILE", help="where to write the video")


def run(args: argparse.Namespace) -> int:
    video = None
    if args.video or args.out:
        video = Video(args.video_episodes, args.video_format, args.out)
    result = evaluate(args.run, episodes=args.episodes, iteration=args.iteration, video=video)
    print(
        f"{result['run']}: iteration {result['iteration']} ({result['env_steps']:,} env steps), "
        f"{result['episodes']} episodes: return {result['eval_return']:.2f} "
        f"± {result['eval_return_std']:.2f}, length {result['eval_length']:.1f}"
    )
    if "video" in result:
        print(f"video: {result['video']}")
    return 0

"""Resident memory of DQN with a large Atari replay: frame storage against transition storage,
and a donated state against a copied one.

Each case trains DQN (nature CNN) on ``envpool/Breakout-v5`` (84×84×4 uint8 frames) in a fresh
process for a few hundred steps, past its warm-up so the learner samples, and records the process's
peak resident memory (``ru_maxrss``; GB are 10⁹ bytes), the replay's bytes as allocated, the
number of steps and the wall time. The cases:

- ``frames-1M``: a 1,000,000-transition replay with frame storage (the default for uint8
  observations) and the state donated to the program that replaces it (the default at this size).
- ``frames-1M-copied``: the same with donation off: each chunk keeps its input and output state.
- ``frames-100k`` and ``transitions-100k``: 100,000 transitions each way (transition storage of
  a million would need 56 GB).

    python benchmarks/replay_memory.py    # writes benchmarks/results/replay_memory.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from jaxrl_fdg.profiling import write_report  # noqa: E402

CASES = {
    "frames-1M": dict(buffer_size=1_000_000, replay_storage="frames", donate=True),
    "frames-1M-copied": dict(buffer_size=1_000_000, replay_storage="frames", donate=False),
    "frames-100k": dict(buffer_size=100_000, replay_storage="frames", donate=True),
    "transitions-100k": dict(buffer_size=100_000, replay_storage="transitions", donate=True),
}

# One case, in the process that measures it (argv: JSON of the case and the run's sizes).
_CHILD = """
import json, resource, sys, time
import jax
import jaxrl_fdg as rl
from jaxrl_fdg.policies import plan

case = json.loads(sys.argv[1])
if not case.pop("donate"):
    plan.DONATE_BYTES = float("inf")
sizes = case.pop("sizes")
config = rl.TrainConfig(
    algo="dqn", env="envpool/Breakout-v5", out=None, progress=False,
    num_envs=sizes["num_envs"], rollout_len=sizes["rollout_len"],
    total_steps=sizes["total_steps"], log_every=sizes["log_every"],
    hparams={"torso": "nature", "batch_size": 32, "learning_starts": sizes["learning_starts"],
             "utd_ratio": 0.25, **case},
)
start = time.perf_counter()
result = rl.train(config)
wall = time.perf_counter() - start
replay = result.state.fragments["replay"]
print(json.dumps({
    "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
    "replay_gb": sum(x.nbytes for x in jax.tree.leaves(replay)) / 1e9,
    "replay_size": int(replay.size),
    "env_steps": int(config.num_iterations * config.steps_per_iteration),
    "updates": int(sum(result.metrics["updates"])),
    "wall_s": wall,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--rollout-len", type=int, default=4)
    parser.add_argument("--total-steps", type=int, default=8 * 4 * 40)
    parser.add_argument("--learning-starts", type=int, default=512)
    parser.add_argument("--log-every", type=int, default=8 * 4 * 10)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "replay_memory.json")
    )
    args = parser.parse_args()
    sizes = {
        "num_envs": args.num_envs,
        "rollout_len": args.rollout_len,
        "total_steps": args.total_steps,
        "learning_starts": args.learning_starts,
        "log_every": args.log_every,
    }
    results = {}
    for name in args.cases:
        case = {**CASES[name], "sizes": sizes}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(case)], capture_output=True, text=True
        )
        if done.returncode:
            raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
        results[name] = {**CASES[name], **json.loads(done.stdout.strip().splitlines()[-1])}
        row = results[name]
        print(
            f"{name:>18}: peak RSS {row['peak_rss_gb']:.2f} GB, replay {row['replay_gb']:.2f} GB, "
            f"{row['replay_size']:,} stored, {row['updates']} updates, {row['wall_s']:.0f} s"
        )
    write_report(args.out, "replay_memory", sizes, results)


if __name__ == "__main__":
    main()

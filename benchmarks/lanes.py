"""Populations in one program: env-steps/s and peak memory against the number of lanes.

Each case trains ``num_seeds`` = 1, 4, 16, 64, 256, 1024 lanes (SAC: up to 64 on a CPU, see
``LANES``) vmapped into one program on one device, in a fresh process of its own (nothing
compiled or allocated by an earlier case), for two algorithms:

* PPO on ``CartPole-v1`` (4 envs × 128 steps per lane and iteration);
* SAC on ``Pendulum-v1`` (its defaults, 4 envs × 8 steps and a replay per lane, but updates
  from 128 env steps on: 4 iterations of warm-up, then 4 of 32 updates each).

A case runs ``ITERATIONS`` per lane, or more where its lanes are few (PPO: at least 1,000,000
env steps over all lanes, ``MIN_STEPS``), so that every rate is a steady one. A case records
env-steps/s summed over lanes (``run_s``, compiling apart), compile seconds (without the
persistent compilation cache: every case compiles cold), the peak memory (the device allocator's
``peak_bytes_in_use`` where it has one; on the CPU the process's peak resident memory,
``ru_maxrss``, which includes the Python process itself) and the state's bytes. A case refused
for memory (the run's own check, before ``init``) is recorded with the refusal's line, which
names the most lanes that fit. No run folder is written: lanes beyond ``LANE_FOLDERS_MAX`` write
one table, and the files are not what is measured here.

    python benchmarks/lanes.py                # writes benchmarks/results/lanes.json
    python benchmarks/lanes.py --size smoke   # 1 and 2 lanes, a few iterations, to a temp file
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from jaxrl_fdg.profiling import write_report  # noqa: E402

ALGOS = {
    "ppo": dict(algo="ppo", env="CartPole-v1", num_envs=4, rollout_len=128),
    # Updates from the 5th iteration on, one per env step: on a 2-core CPU a lane's update costs
    # milliseconds, so 1024 lanes at SAC's own learning_starts (5,000 steps) would take hours.
    "sac": dict(
        algo="sac", env="Pendulum-v1", num_envs=4, rollout_len=8, hparams={"learning_starts": 128}
    ),
}
# SAC's updates are compute-bound on a CPU (about 7 ms of a 2-core machine per lane and update,
# near its FLOP/s roof): 256 lanes would take about a minute per iteration, so on a CPU SAC
# stops at 64 lanes (``--lanes`` asks for others, e.g. on a GPU).
LANES = {
    "full": {"ppo": [1, 4, 16, 64, 256, 1024], "sac": [1, 4, 16, 64]},
    "smoke": {"ppo": [1, 2], "sac": [1, 2]},
}
ITERATIONS = {"full": {"ppo": 20, "sac": 8}, "smoke": {"ppo": 2, "sac": 4}}
# A case runs at least this many env steps over all its lanes (more iterations where it has few
# lanes), so that a small case's rate is not a tenth of a second's; SAC's updates need no more.
MIN_STEPS = {"full": {"ppo": 1_000_000, "sac": 0}, "smoke": {"ppo": 0, "sac": 0}}
TIMEOUT_S = 1800  # one case at most; a case that takes longer is recorded as timed out

# One case, in the process that measures it (argv: JSON of the run's settings).
_CHILD = """
import json, resource, sys
import jax
import jaxrl_fdg as rl
from jaxrl_fdg.errors import ConfigError

settings = json.loads(sys.argv[1])
config = rl.TrainConfig(
    out=None, progress=False, profile="off", log_every=0, compile_cache=False, **settings
)
try:
    result = rl.train(config)
except ConfigError as e:  # refused before init: too large for this device
    print(json.dumps({"refused": str(e)}))
    raise SystemExit(0)
device = jax.devices()[0]
stats = device.memory_stats() if device.platform != "cpu" else None
steps = config.num_seeds * config.num_iterations * config.steps_per_iteration
summary = result.summary
print(json.dumps({
    "env_steps": steps,
    "steps_per_s": steps / summary["segment_run_s"],
    "run_s": summary["segment_run_s"],
    "compile_s": summary["compile_s"],
    "peak_bytes": (stats or {}).get("peak_bytes_in_use"),
    "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
    "state_gb": sum(x.nbytes for x in jax.tree.leaves(result.state.fragments)) / 1e9,
}))
"""


def run_case(settings: dict) -> dict:
    """One case in a fresh process: its figures, or why it gave none."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(settings)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {"timed_out_s": TIMEOUT_S}
    if done.returncode:
        return {"failed": done.stderr.strip()[-500:], "wall_s": time.perf_counter() - start}
    return {
        **json.loads(done.stdout.strip().splitlines()[-1]),
        "wall_s": time.perf_counter() - start,
    }


def describe(name: str, lanes: int, row: dict) -> str:
    if "steps_per_s" not in row:
        why = row.get("refused") or row.get("failed") or f"timed out ({row.get('timed_out_s')} s)"
        return f"{name:>4} × {lanes:>5} lanes: {why}"
    memory = (
        f"peak {row['peak_bytes'] / 1e9:.2f} GB on the device"
        if row["peak_bytes"] is not None
        else f"peak resident {row['peak_rss_gb']:.2f} GB"
    )
    return (
        f"{name:>4} × {lanes:>5} lanes: {row['steps_per_s']:>12,.0f} env-steps/s, "
        f"compile {row['compile_s']:.1f} s, {memory}, state {row['state_gb']:.3f} GB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=tuple(LANES), default="full")
    parser.add_argument("--algos", nargs="+", choices=tuple(ALGOS), default=list(ALGOS))
    parser.add_argument("--lanes", type=int, nargs="+", help="lane counts (default: the size's)")
    parser.add_argument("--out", help="results file (default: results/lanes.json; smoke: temp)")
    args = parser.parse_args()
    out = args.out or (
        str(Path(tempfile.gettempdir()) / "lanes-smoke.json")
        if args.size == "smoke"
        else str(Path(__file__).parent / "results" / "lanes.json")
    )
    results: dict[str, dict[str, dict]] = {}
    for name in args.algos:
        base = ALGOS[name]
        per_iteration = base["num_envs"] * base["rollout_len"]
        results[name] = {}
        for count in args.lanes or LANES[args.size][name]:
            least = -(-MIN_STEPS[args.size][name] // (count * per_iteration))
            iterations = max(ITERATIONS[args.size][name], least)
            row = run_case({**base, "total_steps": iterations * per_iteration, "num_seeds": count})
            row["iterations"] = iterations
            results[name][str(count)] = row
            print(describe(name, count, row), flush=True)
    config = {
        "size": args.size,
        "lanes": {name: args.lanes or LANES[args.size][name] for name in args.algos},
        "runs": {
            name: {
                **ALGOS[name],
                "iterations": ITERATIONS[args.size][name],
                "min_env_steps": MIN_STEPS[args.size][name],
            }
            for name in ALGOS
        },
    }
    write_report(out, "lanes", config, results)


if __name__ == "__main__":
    main()

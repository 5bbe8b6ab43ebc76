"""The runs that used to hang on XLA:CPU, many times over, each in a fresh process with a deadline:
PPO with 64 vmapped seeds (a vmapped init program), and SAC and TD3 under ``data_parallel`` on 2
and 4 forced CPU devices (a batched QR per device). docs/decisions.md ("SAC and TD3 under
data_parallel: a batched QR waiting on a full pool") has the mechanism and the fix.

    python benchmarks/soak_hangs.py                  # writes benchmarks/results/soak_hangs.json
    python benchmarks/soak_hangs.py --seeds-rounds 5 --dp-rounds 1

A round passes when its process exits 0 before the deadline; a hang shows as a timeout, and the
script then stops with exit 1. It is outside CI: the suite runs each case once
(tests/policies/test_replication.py, tests/policies/test_gradient_path.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

_OFF_POLICY = "--learning-starts 64 --batch-size 32 --buffer-size 1024"
CASES = {
    "ppo-64-seeds": ("--algo ppo --num-seeds 64 --total-steps 8192 --num-envs 4", 1),
    "sac-data_parallel-2": (f"--algo sac --env Pendulum-v1 {_OFF_POLICY}", 2),
    "sac-data_parallel-4": (f"--algo sac --env Pendulum-v1 {_OFF_POLICY}", 4),
    "td3-data_parallel-2": (f"--algo td3 --env Pendulum-v1 {_OFF_POLICY}", 2),
    "td3-data_parallel-4": (f"--algo td3 --env Pendulum-v1 {_OFF_POLICY}", 4),
}


def _command(case: str) -> tuple[list[str], dict[str, str]]:
    flags, devices = CASES[case]
    args = [
        sys.executable,
        "-m",
        "jaxrl_fdg",
        "train",
        *flags.split(),
        "--out",
        "",
        "--no-progress",
    ]
    env = dict(os.environ)
    if devices > 1:
        args += ["--placement", "data_parallel", "--devices", str(devices)]
        args += ["--total-steps", str(8 * devices * 64), "--num-envs", str(2 * devices)]
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    return args, env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds-rounds", type=int, default=20, help="rounds of the 64-seed run")
    parser.add_argument("--dp-rounds", type=int, default=3, help="rounds of each SAC/TD3 case")
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds before a hang")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "soak_hangs.json"))
    args = parser.parse_args()

    rounds = [("ppo-64-seeds", args.seeds_rounds)] + [
        (case, args.dp_rounds) for case in CASES if case != "ppo-64-seeds"
    ]
    results: dict[str, dict] = {}
    hung = False
    for case, n in rounds:
        seconds, failures = [], []
        for i in range(n):
            command, env = _command(case)
            start = time.perf_counter()
            try:
                proc = subprocess.run(
                    command, env=env, capture_output=True, text=True, timeout=args.deadline
                )
            except subprocess.TimeoutExpired:
                failures.append(f"round {i}: no exit within {args.deadline:.0f} s")
                hung = True
                break
            seconds.append(round(time.perf_counter() - start, 2))
            if proc.returncode != 0:
                failures.append(f"round {i}: exit {proc.returncode}: {proc.stderr[-500:]}")
        results[case] = {"rounds": n, "passed": len(seconds) - len(failures), "seconds": seconds}
        if failures:
            results[case]["failures"] = failures
        done = results[case]
        print(f"{case}: {done['passed']}/{n} passed, {sum(seconds):.0f} s", flush=True)
        if hung:
            break

    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "deadline_s": args.deadline,
        "results": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    if hung or any("failures" in r for r in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()

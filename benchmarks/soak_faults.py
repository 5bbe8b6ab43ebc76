"""The fault-injection suite's faults, many times over, in fresh processes: each round starts a
small checkpointed DQN run, hurts it one way, resumes it with ``jaxrl-fdg train --resume``, and
checks the resumed run's final checkpoint against an uninterrupted run's, bit for bit.

    python benchmarks/soak_faults.py --minutes 10     # writes benchmarks/results/soak_faults.json

Faults, drawn at random each round (seeded by ``--seed``):

* ``kill@<s>`` — SIGKILL that many seconds after the first metrics row (a random point);
* ``kill-in-write@<n>`` — SIGKILL inside the n-th checkpoint write, before orbax's rename;
* ``kill-before-manifest@<n>`` — SIGKILL after the n-th checkpoint's rename, before its manifest;
* ``kill-mid-row@<n>`` — SIGKILL halfway through the n-th metrics row;
* ``truncate-latest``, ``empty-latest``, ``stray-folder`` — a completed run's newest checkpoint
  cut short, emptied, or a stray empty ``checkpoints/99/`` added;
* ``concurrent-resume`` — two ``--resume`` of one damaged folder at once: one must be refused
  (exit 2, one line), or run after the other has finished.

A round passes when every command either succeeded or stopped with one line (no traceback) and
the final checkpoint equals the reference's. The script is outside CI: the suite runs one of each.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VICTIM = ROOT / "tests" / "faults" / "victim.py"
FLAGS = [
    "--algo", "dqn", "--total-steps", "192", "--num-envs", "4", "--rollout-len", "4",
    "--log-every", "2", "--checkpoint-every", "64", "--learning-starts", "32",
    "--batch-size", "16", "--buffer-size", "128", "--no-progress",
]  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jaxrl_fdg", *args], capture_output=True, text=True, timeout=600
    )


def _clean(proc: subprocess.CompletedProcess) -> bool:
    """Succeeded, or stopped with one line and no traceback."""
    lines = [x for x in proc.stderr.splitlines() if not x.startswith("jaxrl-fdg: warning:")]
    return proc.returncode == 0 or ("Traceback" not in proc.stderr and len(lines) <= 1)


def _state_bytes(run: Path) -> list[bytes]:
    import jax
    import numpy as np

    import jaxrl_fdg as rl
    from jaxrl_fdg.run.checkpoint import Checkpointer

    config = rl.config.from_mapping(rl.config.load(run / "config.toml")).replace(out=None)
    resolved = rl.resolve(config)
    like = jax.jit(rl.build_loop(resolved).init)(resolved.placement.initial_key(resolved))
    checkpointer = Checkpointer(run / "checkpoints")
    try:
        state = checkpointer.restore(like)
    finally:
        checkpointer.close()
    state = state._replace(key=jax.random.key_data(state.key))
    return [np.asarray(x).tobytes() for x in jax.tree.leaves(state)]


def _kill(out: Path, fault: str) -> Path:
    proc = subprocess.run(
        [sys.executable, str(VICTIM), str(out), fault], capture_output=True, text=True, timeout=600
    )
    if proc.returncode not in (-9, 0):
        raise RuntimeError(f"{fault}: exit {proc.returncode}: {proc.stderr[-1500:]}")
    return out / "run"


def _completed(out: Path) -> Path:
    proc = _cli("train", *FLAGS, "--out", str(out), "--run-name", "run")
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-1500:])
    return out / "run"


def _damage(run: Path, how: str) -> None:
    checkpoints = run / "checkpoints"
    if how == "truncate-latest":
        for f in (checkpoints / "12").rglob("*"):
            if f.is_file() and f.stat().st_size > 64:
                f.write_bytes(f.read_bytes()[:64])
    elif how == "empty-latest":
        shutil.rmtree(checkpoints / "12")
        (checkpoints / "12").mkdir()
    elif how == "stray-folder":
        (checkpoints / "99").mkdir()


def _round(fault: str, out: Path) -> tuple[bool, str]:
    """Hurt a run with ``fault``, resume it; ``(passed, note)``."""
    kind, _, arg = fault.partition("@")
    victim = {
        "kill": "after",
        "kill-in-write": "finalize",
        "kill-before-manifest": "manifest",
        "kill-mid-row": "row",
    }
    if kind in victim:
        run = _kill(out, f"{victim[kind]}:{arg}")
        resumes = [_cli("train", "--resume", str(run), "--no-progress")]
    elif kind == "concurrent-resume":
        run = _completed(out)
        _damage(run, "truncate-latest")
        command = [sys.executable, "-m", "jaxrl_fdg", "train", "--resume", str(run)]
        procs = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        resumes = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=600)
            resumes.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
        refused = [r for r in resumes if r.returncode == 2 and "is in use by" in r.stderr]
        if len(refused) + sum(r.returncode == 0 for r in resumes) != 2:
            return False, "; ".join(r.stderr.strip()[-300:] for r in resumes)
    else:
        run = _completed(out)
        _damage(run, kind)
        resumes = [_cli("train", "--resume", str(run), "--no-progress")]
    if not all(_clean(r) for r in resumes):
        return False, "; ".join(r.stderr.strip()[-500:] for r in resumes)
    if not any(r.returncode == 0 for r in resumes):
        return False, "no resume succeeded: " + resumes[0].stderr.strip()[-300:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    if [r["iteration"] for r in rows] != [2, 4, 6, 8, 10, 12]:
        return False, f"metrics rows {[r['iteration'] for r in rows]}"
    return True, ""


def _draw(rng: random.Random) -> str:
    kind = rng.choice(
        [
            "kill",
            "kill",
            "kill-in-write",
            "kill-before-manifest",
            "kill-mid-row",
            "truncate-latest",
            "empty-latest",
            "stray-folder",
            "concurrent-resume",
        ]
    )
    if kind == "kill":
        return f"kill@{rng.uniform(0.0, 0.6):.3f}"
    if kind in ("kill-in-write", "kill-before-manifest"):
        return f"{kind}@{rng.randint(1, 3)}"
    if kind == "kill-mid-row":
        return f"{kind}@{rng.randint(1, 6)}"
    return kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=str(ROOT / "benchmarks/results/soak_faults.json"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="soak-faults-"))
    reference = _state_bytes(_completed(work / "reference"))
    tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures = []
    start, rounds = time.monotonic(), 0
    while time.monotonic() - start < args.minutes * 60:
        fault = _draw(rng)
        out = work / f"round-{rounds}"
        passed, note = _round(fault, out)
        if passed and _state_bytes(out / "run") != reference:
            passed, note = False, "final checkpoint differs from the uninterrupted run's"
        kind = fault.partition("@")[0]
        tally[kind]["passed" if passed else "failed"] += 1
        if not passed:
            failures.append({"fault": fault, "note": note})
        print(f"round {rounds}: {fault}: {'ok' if passed else 'FAILED ' + note}", flush=True)
        shutil.rmtree(out, ignore_errors=True)
        rounds += 1
    result = {
        "rounds": rounds,
        "minutes": round((time.monotonic() - start) / 60, 1),
        "seed": args.seed,
        "by_fault": {k: dict(v) for k, v in sorted(tally.items())},
        "failures": failures,
    }
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The fault-injection suite's faults, many times over, in fresh processes: each round starts a
small checkpointed DQN run, hurts it one way, resumes it with ``jaxrl-fdg train --resume``, and
checks the resumed run's final checkpoint against an uninterrupted run's, bit for bit. Then the
suite's fuzzing runs with many examples.

    python benchmarks/soak_faults.py --minutes 10     # writes benchmarks/results/soak_faults.json

Faults, drawn at random each round (seeded by ``--seed``):

* ``kill@<s>`` — SIGKILL that many seconds after the first metrics row (a random point);
* ``kill-in-write@<n>`` — SIGKILL inside the n-th checkpoint write, before orbax's rename;
* ``kill-before-manifest@<n>`` — SIGKILL after the n-th checkpoint's rename, before its manifest;
* ``kill-mid-row@<n>`` — SIGKILL halfway through the n-th metrics row;
* ``truncate-latest``, ``empty-latest``, ``stray-folder`` — a completed run's newest checkpoint
  cut short, emptied, or a stray empty ``checkpoints/99/`` added;
* ``concurrent-resume`` — two ``--resume`` of one damaged folder at once: one must be refused
  (exit 2, one line), or run after the other has finished;
* ``signal@<SIGNAL>:<stage>`` — the command sends itself SIGINT, SIGTERM or SIGHUP at a stage
  (parse, folder, compile, chunk, evaluation, checkpoint, summary): it must end within
  :data:`STOP_DEADLINE_S` with ``128 + signal`` (0 once completed), and its folder resume;
* ``signal-at@<SIGNAL>:<s>`` — the signal sent from outside that many seconds after the start;
* ``no-metrics-jsonl``, ``no-metrics`` — a completed run's ``metrics.jsonl`` (or both metrics
  files) deleted: the resume keeps every row ``metrics.csv`` still has, and its summary counts
  the checkpoint's iterations;
* ``checkpoints-a-file`` — ``checkpoints/`` replaced by a file: the resume is refused in one
  line (exit 2) at once; with the file moved aside it runs again from iteration 0;
* ``too-large`` — ten million environments: refused in one line (exit 2), no folder left;
* ``two-processes`` — a run across two processes, one SIGKILLed after its second checkpoint:
  the other must end within the heartbeat timeout, and both, resumed, equal the uninterrupted
  pair bit for bit.

A round passes when every command either succeeded or stopped with one line (no traceback), in
time, and the final state equals the reference's. Then ``tests/faults/test_fuzz.py`` and
``tests/faults/test_fuzz_commands.py`` run with ``--fuzz-examples`` examples each. CI's slow tier
runs it for a minute with the commit's seed (``tests/faults/test_soak.py``); the default tier
runs one of each fault.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTS = ROOT / "tests" / "faults"
FLAGS = [
    "--algo", "dqn", "--total-steps", "192", "--num-envs", "4", "--rollout-len", "4",
    "--log-every", "2", "--checkpoint-every", "64", "--learning-starts", "32",
    "--batch-size", "16", "--buffer-size", "128", "--no-progress",
]  # fmt: skip
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
STAGES = ("parse", "folder", "compile", "chunk", "evaluation", "checkpoint", "summary")
STOP_DEADLINE_S = 20.0  # a signal's process ends within this (a loaded machine: generous)
HEARTBEAT_DEADLINE_S = 60.0  # the survivor of a run across processes ends within this


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jaxrl_fdg", *args], capture_output=True, text=True, timeout=600
    )


def _clean(proc: subprocess.CompletedProcess) -> bool:
    """Succeeded, or stopped with one line and no traceback (after any warnings, and the notice
    a stop signal prints)."""
    lines = [
        x
        for x in proc.stderr.splitlines()
        if x.strip() and not x.startswith(("jaxrl-fdg: warning:", "jaxrl-fdg: SIG"))
    ]
    return proc.returncode == 0 or ("Traceback" not in proc.stderr and len(lines) <= 1)


def _state_bytes(run: Path) -> list[bytes]:
    import jax
    import numpy as np

    import jaxrl_fdg as rl
    from jaxrl_fdg.run.checkpoint import Checkpointer

    config = rl.config.from_mapping(rl.config.load(run / "config.toml")).replace(out=None)
    resolved = rl.resolve(config)
    like = jax.jit(rl.build_loop(resolved).init)(resolved.placement.initial_key(resolved.request))
    checkpointer = Checkpointer(run / "checkpoints")
    try:
        state = checkpointer.restore(like)
    finally:
        checkpointer.close()
    state = state._replace(key=jax.random.key_data(state.key))
    return [np.asarray(x).tobytes() for x in jax.tree.leaves(state)]


def _kill(out: Path, fault: str) -> Path:
    proc = subprocess.run(
        [sys.executable, str(FAULTS / "victim.py"), str(out), fault],
        capture_output=True,
        text=True,
        timeout=600,
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
    elif how == "no-metrics-jsonl":
        (run / "metrics.jsonl").unlink()
    elif how == "no-metrics":
        (run / "metrics.jsonl").unlink()
        (run / "metrics.csv").unlink()


class Outcome(Exception):
    """A round's verdict before the state comparison: ``passed`` with nothing to compare (the
    fault left no folder to resume), or failed with a note."""

    def __init__(self, passed: bool, note: str = ""):
        super().__init__(note)
        self.passed, self.note = passed, note


def _resume(run: Path) -> list[subprocess.CompletedProcess]:
    return [_cli("train", "--resume", str(run), "--no-progress")]


def _signal_round(kind: str, arg: str, out: Path) -> tuple[Path, list]:
    name, _, where = arg.partition(":")
    flags = ["--eval-every", "32", "--eval-episodes", "2"] if where == "evaluation" else []
    if kind == "signal":
        command = [sys.executable, str(FAULTS / "signal_victim.py"), str(out), name, where]
        proc = subprocess.run([*command, *flags], capture_output=True, text=True, timeout=600)
        ended = time.time()
        sent = float((out / "sent").read_text()) if (out / "sent").exists() else ended
    else:  # from outside, after a while
        command = [sys.executable, "-m", "jaxrl_fdg", "train", *FLAGS]
        command += ["--out", str(out), "--run-name", "run"]
        popen = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(float(where))
        sent = time.time()
        popen.send_signal(signal.Signals[name])
        stdout, stderr = popen.communicate(timeout=600)
        ended = time.time()
        proc = subprocess.CompletedProcess(command, popen.returncode, stdout, stderr)
    if ended - sent > STOP_DEADLINE_S:
        raise Outcome(False, f"ended {ended - sent:.1f} s after the signal")
    if proc.returncode not in (0, 128 + signal.Signals[name]) or not _clean(proc):
        raise Outcome(False, f"exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
    run = out / "run"
    if not (run / "config.toml").is_file():  # stopped before the run had a folder to keep
        if run.exists():
            raise Outcome(False, "a half folder without config.toml")
        raise Outcome(True)
    return run, _resume(run)


def _too_large(out: Path) -> None:
    proc = _cli("train", "--num-envs", "10000000", "--total-steps", "1280000000", "--out", str(out))
    refused = proc.returncode == 2 and "does not fit in memory" in proc.stderr
    leftover = list(out.iterdir()) if out.exists() else []
    raise Outcome(refused and _clean(proc) and not leftover, proc.stderr.strip()[-300:])


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
        resumes = _resume(run)
    elif kind in ("signal", "signal-at"):
        run, resumes = _signal_round(kind, arg, out)
    elif kind == "too-large":
        _too_large(out)
    elif kind == "checkpoints-a-file":
        run = _completed(out)
        shutil.rmtree(run / "checkpoints")
        (run / "checkpoints").write_text("")
        start = time.monotonic()
        refused = _resume(run)[0]
        if refused.returncode != 2 or not _clean(refused) or time.monotonic() - start > 60:
            raise Outcome(False, f"exit {refused.returncode}: {refused.stderr.strip()[-300:]}")
        (run / "checkpoints").rename(run / "checkpoints.aside")
        resumes = _resume(run)
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
        rows_before = (run / "metrics.csv").read_text() if kind == "no-metrics-jsonl" else None
        _damage(run, kind)
        resumes = _resume(run)
        if rows_before is not None and (run / "metrics.csv").read_text() != rows_before:
            return False, "metrics.csv lost rows"
    if not all(_clean(r) for r in resumes):
        return False, "; ".join(r.stderr.strip()[-500:] for r in resumes)
    if not any(r.returncode == 0 for r in resumes):
        return False, "no resume succeeded: " + resumes[0].stderr.strip()[-300:]
    summary = json.loads((run / "summary.json").read_text())
    if (summary["status"], summary["iterations"]) != ("completed", 12):
        return False, f"summary says {summary['status']} at iteration {summary['iterations']}"
    if kind == "no-metrics":
        return True, ""  # no rows were left to keep
    lines = (run / "metrics.jsonl").read_text().splitlines()
    iterations = [json.loads(x)["iteration"] for x in lines]
    # Every row once, in order; a stop between two rows adds the row where it stopped.
    if iterations != sorted(set(iterations)) or not {2, 4, 6, 8, 10, 12} <= set(iterations):
        return False, f"metrics rows {iterations}"
    return True, ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pair(out: Path, faults=("none", "none"), resume: str = "") -> list[subprocess.Popen]:
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    coordinator = f"127.0.0.1:{_free_port()}"
    out.mkdir(parents=True, exist_ok=True)
    procs = []
    for i, fault in enumerate(faults):
        command = [sys.executable, str(FAULTS / "process_victim.py"), str(i), coordinator]
        with open(out / f"{i}.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    [*command, str(out), fault, resume], env=env, stdout=log, stderr=log
                )
            )
    return procs


def _digests(procs: list[subprocess.Popen], out: Path) -> list[str]:
    digests = []
    for i, proc in enumerate(procs):
        if proc.wait(timeout=600) != 0:
            raise Outcome(False, f"process {i}: exit {proc.returncode}")
        lines = (out / f"{i}.log").read_text().splitlines()
        digests.append(next(x for x in lines if x.startswith("DIGEST")).split()[1])
    return digests


def _two_processes(out: Path, reference: list[str]) -> None:
    procs = _pair(out, ("none", "kill-after-save:2"))
    if procs[1].wait(timeout=600) != -9:
        raise Outcome(False, f"process 1 exited {procs[1].returncode}, not killed")
    killed = time.monotonic()
    procs[0].wait(timeout=600)
    if time.monotonic() - killed > HEARTBEAT_DEADLINE_S:
        raise Outcome(False, "the surviving process outlived the heartbeat deadline")
    resumed = _digests(_pair(out / "resumed", resume=str(out / "run")), out / "resumed")
    raise Outcome(resumed == reference, f"digests {resumed} against {reference}")


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
            "signal",
            "signal",
            "signal-at",
            "no-metrics-jsonl",
            "no-metrics",
            "checkpoints-a-file",
            "too-large",
            "two-processes",
        ]
    )
    if kind == "kill":
        return f"kill@{rng.uniform(0.0, 0.6):.3f}"
    if kind in ("kill-in-write", "kill-before-manifest"):
        return f"{kind}@{rng.randint(1, 3)}"
    if kind == "kill-mid-row":
        return f"{kind}@{rng.randint(1, 6)}"
    if kind == "signal":
        return f"signal@{rng.choice(SIGNALS)}:{rng.choice(STAGES)}"
    if kind == "signal-at":
        return f"signal-at@{rng.choice(SIGNALS)}:{rng.uniform(0.5, 6.0):.2f}"
    return kind


def _fuzz(examples: int) -> dict:
    """The suite's fuzz tests with ``examples`` examples each (fewer for those that compile)."""
    start = time.monotonic()
    tests = [str(FAULTS / "test_fuzz.py"), str(FAULTS / "test_fuzz_commands.py")]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, "-q", "-n", "0", "-p", "no:cacheprovider"],
        env={**os.environ, "JAXRL_FDG_FUZZ_EXAMPLES": str(examples)},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]
    return {
        "examples": examples,
        "passed": proc.returncode == 0,
        "result": tail,
        "minutes": round((time.monotonic() - start) / 60, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--fuzz-examples", type=int, default=500, help="examples per fuzz test (0: none)"
    )
    parser.add_argument("--output", default=str(ROOT / "benchmarks/results/soak_faults.json"))
    args = parser.parse_args()
    from jaxrl_fdg.profiling.report import machine_info, recorded

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="soak-faults-"))
    reference = _state_bytes(_completed(work / "reference"))
    pair: list[str] = []
    tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures = []
    start, rounds = time.monotonic(), 0
    while time.monotonic() - start < args.minutes * 60:
        fault = _draw(rng)
        out = work / f"round-{rounds}"
        out.mkdir()
        try:
            if fault == "two-processes":
                if not pair:
                    pair = _digests(_pair(work / "pair-reference"), work / "pair-reference")
                _two_processes(out, pair)
            passed, note = _round(fault, out)
            if passed and _state_bytes(out / "run") != reference:
                passed, note = False, "final checkpoint differs from the uninterrupted run's"
        except Outcome as outcome:
            passed, note = outcome.passed, outcome.note
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
    if args.fuzz_examples:
        result["fuzz"] = _fuzz(args.fuzz_examples)
        print(f"fuzz: {result['fuzz']}", flush=True)
    result["machine"] = machine_info()
    result["recorded"] = recorded(str(ROOT))
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    if failures or (args.fuzz_examples and not result["fuzz"]["passed"]):
        sys.exit(1)


if __name__ == "__main__":
    main()

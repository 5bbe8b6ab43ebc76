"""Checkpoints of a data-parallel run across two processes (2 CPU devices each): one process
killed with ``kill -9`` mid-run takes the other down within the heartbeat timeout, and both,
resumed, compute the uninterrupted run bit for bit; a SIGTERM to one stops both at the same
iteration with a checkpoint."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest
from faultkit import rows

from jaxrl_fdg.policies import distributed

VICTIM = Path(__file__).with_name("process_victim.py")
DEADLINE_S = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pair(out: Path, logs: Path, faults=("none", "none"), resume: str = ""):
    """Start the run's two processes; return them with their log files."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    coordinator = f"127.0.0.1:{_free_port()}"
    procs = []
    for i, fault in enumerate(faults):
        # Output to files, not pipes: a process blocked on a full pipe would hold the other.
        with open(logs / f"{i}.out", "w") as stdout, open(logs / f"{i}.err", "w") as stderr:
            command = [sys.executable, str(VICTIM), str(i), coordinator, str(out), fault, resume]
            procs.append(subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr))
    return procs


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> list[str]:
    logs = tmp_path_factory.mktemp("logs-full")
    full = _finish(_pair(tmp_path_factory.mktemp("full"), logs), logs)
    assert full[0] == full[1] and full[0].endswith(" completed")
    return full


def _finish(procs, logs: Path) -> list[str]:
    """Wait for both; their ``DIGEST`` lines (each must have succeeded)."""
    digests = []
    for i, proc in enumerate(procs):
        assert proc.wait(timeout=DEADLINE_S) == 0, (logs / f"{i}.err").read_text()[-3000:]
        line = next(x for x in (logs / f"{i}.out").read_text().splitlines() if "DIGEST" in x)
        digests.append(line.split(" ", 1)[1])
    return digests


@pytest.mark.slow
@pytest.mark.skipif(
    not hasattr(jax.config, "jax_cpu_collectives_implementation"),
    reason=f"JAX {jax.__version__} has no cross-process collectives for CPU devices",
)
def test_a_run_across_processes_killed_mid_run_resumes_bit_for_bit(uninterrupted, tmp_path):
    logs = [tmp_path / f"logs-{name}" for name in ("full", "killed", "resumed")]
    for folder in logs:
        folder.mkdir()
    full = uninterrupted

    out = tmp_path / "killed"
    procs = _pair(out, logs[1], faults=("none", "kill-after-save:2"))
    assert procs[1].wait(timeout=DEADLINE_S) == -9  # killed once the checkpoint at 12 is in
    killed = time.monotonic()
    procs[0].wait(timeout=DEADLINE_S)
    assert time.monotonic() - killed < distributed.HEARTBEAT_TIMEOUT_S + 45  # never hangs
    assert procs[0].returncode != 0  # JAX's coordination service ended it
    run = out / "run"
    assert sorted(int(p.name) for p in (run / "checkpoints").iterdir()) == [6, 12]

    resumed = _finish(_pair(out, logs[2], resume=str(run)), logs[2])
    assert resumed == full
    assert [r["iteration"] for r in rows(run)] == list(range(2, 25, 2))


@pytest.mark.slow
@pytest.mark.skipif(
    not hasattr(jax.config, "jax_cpu_collectives_implementation"),
    reason=f"JAX {jax.__version__} has no cross-process collectives for CPU devices",
)
def test_a_signal_to_one_process_stops_both_at_one_iteration(uninterrupted, tmp_path):
    logs = [tmp_path / "logs-stopped", tmp_path / "logs-resumed"]
    for folder in logs:
        folder.mkdir()
    out = tmp_path / "stopped"
    stopped = _finish(_pair(out, logs[0], faults=("none", "sigterm-after-save:1")), logs[0])
    assert stopped[0] == stopped[1] and stopped[0].endswith(" interrupted")  # the same state
    run = out / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["signal"] == "SIGTERM" and 6 <= summary["iterations"] < 24
    assert (
        summary["iterations"]
        == rows(run)[-1]["iteration"]
        == max(int(p.name) for p in (run / "checkpoints").iterdir())
    )
    resumed = _finish(_pair(out, logs[1], resume=str(run)), logs[1])
    assert resumed == uninterrupted

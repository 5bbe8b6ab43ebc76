"""The fault soak (``benchmarks/soak_faults.py``) for a bounded time in the slow tier: random
faults of every kind the suite tests once (kills, damaged folders, signals at every stage, two
processes), each resumed and checked bit for bit against an uninterrupted run, then the fuzz
tests with more examples. The seed is the commit's, so each commit soaks other draws and a
failure replays with the seed the test names."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MINUTES = 1


def _seed() -> int:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=8", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        return int(head, 16)
    except (OSError, ValueError):
        return 0


@pytest.mark.slow
@pytest.mark.timeout(60 * (MINUTES + 12))  # a round started at the end, then the fuzzing
def test_the_soak_passes_every_round_it_draws(tmp_path):
    seed = _seed()
    output = tmp_path / "soak.json"
    argv = [sys.executable, str(ROOT / "benchmarks" / "soak_faults.py"), "--minutes", str(MINUTES)]
    argv += ["--seed", str(seed), "--fuzz-examples", "100", "--output", str(output)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, f"seed {seed}:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
    result = json.loads(output.read_text())
    assert result["rounds"] >= 1 and not result["failures"] and result["fuzz"]["passed"]

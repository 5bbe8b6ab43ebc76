"""``kill -9`` at any point of a run, checkpoint writes included, then ``--resume``: the
resumed run is the uninterrupted run bit for bit, and its metrics hold every row once."""

import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import DQN, assert_same_state, rows

import jaxrl_fdg as rl

VICTIM = Path(__file__).with_name("victim.py")


def _kill_at(fault: str, out: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, str(VICTIM), str(out), fault],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, (fault, proc.returncode, proc.stderr[-2000:])
    return out / "run"


def _resume_and_compare(run: Path, reference) -> None:
    full, final = reference
    resumed = rl.train(DQN.replace(out=str(run.parent), run_name="run"), resume=run)
    assert_same_state(resumed.state, final)
    assert [(r["iteration"], r["loss"]) for r in rows(run)] == [
        (r["iteration"], r["loss"]) for r in rows(full)
    ]
    leftovers = [p.name for p in run.rglob("*") if p.name.endswith(".tmp") or "-tmp" in p.name]
    assert leftovers == []


def test_killed_inside_a_checkpoint_write_resumes_bit_for_bit(reference, tmp_path):
    run = _kill_at("finalize:2", tmp_path)  # the checkpoint at iteration 8, not yet in place
    assert not (run / "checkpoints" / "8").exists()
    _resume_and_compare(run, reference)


# row:1 dies before the first checkpoint (iteration 4): the resume starts from iteration 0.
@pytest.mark.slow
@pytest.mark.parametrize("fault", ["manifest:2", "row:1", "row:3", "summary", "finalize:3"])
def test_killed_at_a_chosen_point_resumes_bit_for_bit(fault, reference, tmp_path):
    _resume_and_compare(_kill_at(fault, tmp_path), reference)


@pytest.mark.slow
@pytest.mark.parametrize("draw", range(4))
def test_killed_at_a_random_time_resumes_bit_for_bit(draw, reference, tmp_path):
    delay = random.Random(draw).uniform(0.0, 0.6)
    run = _kill_at(f"after:{delay:.3f}", tmp_path)
    _resume_and_compare(run, reference)

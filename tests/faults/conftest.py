"""Shared set-up of the fault-injection suite: the uninterrupted reference run."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for ``faultkit``

from faultkit import DQN  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """``(run folder, final state)`` of the uninterrupted run; copy the folder before changing
    it (``faultkit.copy_run``)."""
    out = tmp_path_factory.mktemp("reference")
    result = rl.train(DQN.replace(out=str(out), run_name="full"))
    return result.run_dir, result.state

"""Helpers of the fault-injection suite (importable from its tests: conftest puts this folder
on ``sys.path``, since the suite imports test files by path)."""

import json
import shutil
from pathlib import Path

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.run.checkpoint import Checkpointer

# Twelve iterations of 4 envs × 4 steps, checkpointed every 4 (at 4, 8 and 12), rows every 2.
# Off-policy, so a checkpoint must carry the replay buffer for a resume to be bit-exact.
DQN = rl.TrainConfig(
    algo="dqn",
    total_steps=16 * 12,
    num_envs=4,
    rollout_len=4,
    progress=False,
    log_every=2,
    checkpoint_every=64,
    hparams={"learning_starts": 32, "batch_size": 16, "buffer_size": 128},
)
# The same run as ``jaxrl-fdg train`` flags.
DQN_FLAGS = [
    "--algo", "dqn", "--total-steps", "192", "--num-envs", "4", "--rollout-len", "4",
    "--log-every", "2", "--checkpoint-every", "64", "--learning-starts", "32",
    "--batch-size", "16", "--buffer-size", "128", "--no-progress",
]  # fmt: skip


def copy_run(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


def assert_same_state(a, b) -> None:
    """The same fragment states, key stream and iteration, bit for bit."""
    testing.assert_same_bits((a.fragments, a.key, a.iteration), (b.fragments, b.key, b.iteration))


def final_checkpoint(run: Path, like):
    checkpointer = Checkpointer(run / "checkpoints")
    try:
        return checkpointer.restore(like)
    finally:
        checkpointer.close()


def rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def one_line_error(capsys) -> str:
    """The command's stderr, which must be one line without a traceback."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err

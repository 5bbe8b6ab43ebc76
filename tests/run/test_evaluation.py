"""Evaluation during and after training (``jaxrl_fdg.run.evaluation``) and ``jaxrl-fdg
evaluate``: deterministic, mode-independent, and without effect on what training computes (the
evaluation fragment itself: tests/core/test_evaluation.py)."""

import json

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.run import compile_cache

DQN = rl.TrainConfig(
    algo="dqn",
    total_steps=16 * 8,
    num_envs=4,
    rollout_len=4,
    progress=False,
    log_every=2,
    eval_every=64,
    eval_episodes=5,
    hparams={"learning_starts": 32, "batch_size": 16, "buffer_size": 128},
)


def _rows(path):
    return [json.loads(line) for line in (path / "metrics.jsonl").open()]


def test_evaluation_changes_nothing_and_is_the_same_in_every_mode(tmp_path):
    plain = rl.train(DQN.replace(out=None, eval_every=0))
    scan = rl.train(DQN.replace(out=str(tmp_path), run_name="scan"))
    rl.train(DQN.replace(out=str(tmp_path), run_name="step", fusion="step"))
    testing.assert_same_bits(scan.state.fragments, plain.state.fragments)
    scan_rows, step_rows = _rows(tmp_path / "scan"), _rows(tmp_path / "step")
    evaluated = [r["iteration"] for r in scan_rows if r["eval_return"] is not None]
    assert evaluated == [4, 8]  # every 64 env steps = 4 iterations
    assert [r["eval_return"] for r in scan_rows] == [r["eval_return"] for r in step_rows]
    header = (tmp_path / "scan" / "metrics.csv").read_text().splitlines()[0]
    assert header.endswith("eval_return,eval_return_std,eval_length")


def test_evaluate_command_reproduces_the_runs_last_evaluation(tmp_path, monkeypatch):
    rl.train(DQN.replace(out=str(tmp_path), run_name="r"))
    last = _rows(tmp_path / "r")[-1]
    # The run kept the compilation cache on, so its evaluation turns it on too.
    enabled = []
    monkeypatch.setattr(compile_cache, "enable", lambda: enabled.append(True))
    result = rl.evaluate(tmp_path / "r")
    assert enabled == [True]
    assert result["iteration"] == 8 and result["episodes"] == 5
    assert result["eval_return"] == pytest.approx(last["eval_return"], rel=1e-6)
    saved = json.loads((tmp_path / "r" / "evaluation.json").read_text())
    assert saved["eval_return"] == result["eval_return"]
    assert rl.evaluate(tmp_path / "r", episodes=2)["episodes"] == 2


def test_evaluate_without_checkpoints_is_a_clear_error(tmp_path):
    with pytest.raises(rl.ConfigError, match="is not a run folder"):
        rl.evaluate(tmp_path)

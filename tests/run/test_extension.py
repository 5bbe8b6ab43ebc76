"""Extending a run (``train --resume RUN --total-steps N``): the rows already written stay as they
are; a run extended from budget A to B equals, bit for bit, the run started with budget B and its
schedules' horizon at A (``schedule_steps``), which for an algorithm without budget-dependent
schedules is the run started with budget B; a budget below the iterations done is refused."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.cli import main
from jaxrl_fdg.config import load
from jaxrl_fdg.run import extension

PER = 2 * 8  # env steps per iteration of the runs below
PPO = rl.TrainConfig(
    total_steps=3 * PER,
    num_envs=2,
    rollout_len=8,
    progress=False,
    log_every=1,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)
DQN = rl.TrainConfig(
    algo="dqn",
    total_steps=6 * 16,
    num_envs=4,
    rollout_len=4,
    progress=False,
    log_every=2,
    hparams={"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "epsilon_fraction": 0.9},
)
# Columns that time the run: the only ones two runs of one computation may differ in.
CLOCKS = ("wall_s", "steps_per_s")


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "metrics.jsonl").open()]


def _computed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in CLOCKS} for row in rows]


def _extend(config, tmp_path, budget, **changes):
    """A run of ``config`` in ``tmp_path/part``, then extended to ``budget``: (the first run's
    result, the extension's, the first run's metrics lines)."""
    first = rl.train(config.replace(out=str(tmp_path), run_name="part", **changes))
    lines = (tmp_path / "part" / "metrics.jsonl").read_text().splitlines()
    longer = config.replace(out=str(tmp_path), run_name="part", total_steps=budget, **changes)
    return first, rl.train(longer, resume=tmp_path / "part"), lines


def test_an_extended_run_equals_the_run_started_with_its_budget(tmp_path):
    config = PPO.replace(hparams={**PPO.hparams, "anneal_lr": False})  # no schedule
    straight = rl.train(config.replace(out=str(tmp_path), run_name="full", total_steps=7 * PER))
    _, extended, before = _extend(config, tmp_path, 7 * PER)
    testing.assert_same_bits(extended.state, straight.state)
    part, full = tmp_path / "part", tmp_path / "full"
    assert _computed(_rows(part)) == _computed(_rows(full))
    # The rows written before the extension are the same lines, untouched.
    assert (part / "metrics.jsonl").read_text().splitlines()[:3] == before
    assert [r["iteration"] for r in _rows(part)] == list(range(1, 8))
    recorded = load(part / "config.toml")
    assert (recorded["total_steps"], recorded["schedule_steps"]) == (7 * PER, 3 * PER)
    summary = json.loads((part / "summary.json").read_text())
    assert (summary["status"], summary["env_steps"]) == ("completed", 7 * PER)
    history = extension.read(part)
    assert [(e["from_iteration"], e["from_total_steps"], e["total_steps"]) for e in history] == [
        (3, 3 * PER, 7 * PER)
    ]
    assert summary["extensions"] == history


@pytest.mark.parametrize(
    "config",
    [PPO, pytest.param(DQN, marks=pytest.mark.slow)],  # the same check on another schedule
    ids=["ppo-annealed-lr", "dqn-epsilon"],
)
def test_an_extended_schedule_keeps_the_horizon_it_ran_under(tmp_path, config, capsys):
    per = config.num_envs * config.rollout_len
    first_budget, budget = config.total_steps, config.total_steps + 3 * per
    horizon = config.replace(
        out=str(tmp_path), run_name="full", total_steps=budget, schedule_steps=first_budget
    )
    straight = rl.train(horizon)
    first, extended, before = _extend(config, tmp_path, budget)
    testing.assert_same_bits(extended.state, straight.state)
    part = tmp_path / "part"
    assert _computed(_rows(part)) == _computed(_rows(tmp_path / "full"))
    assert (part / "metrics.jsonl").read_text().splitlines()[: len(before)] == before
    if config.algo == "ppo":  # its learning rate is 0 past the horizon: the policy stays
        from jaxrl_fdg.fragments import normalization

        def trained(result):
            return normalization.trainable(result.state.fragments["learner"].params)

        # To rounding: XLA divides by the schedule's length as a product with its reciprocal,
        # so 1 - count / T is about ±1e-7 rather than 0 past the horizon.
        same = lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)  # noqa: E731
        jax.tree.map(same, trained(extended), trained(first))
        err = capsys.readouterr().err
        assert "anneals its learning rate to 0 over the first 48 env steps" in err


# One seed's extension is in the default tier (the test above).
@pytest.mark.slow
def test_an_extended_run_of_several_seeds_equals_the_run_started_with_its_budget(tmp_path):
    config = PPO.replace(num_seeds=2, hparams={**PPO.hparams, "anneal_lr": False})
    straight = rl.train(config.replace(out=str(tmp_path), run_name="full", total_steps=5 * PER))
    _, extended, _ = _extend(config, tmp_path, 5 * PER)
    testing.assert_same_bits(extended.state, straight.state)
    for lane in ("seed-0", "seed-1"):
        rows = _computed(_rows(tmp_path / "part" / lane))
        assert rows == _computed(_rows(tmp_path / "full" / lane)) and len(rows) == 5
        assert load(tmp_path / "part" / lane / "config.toml")["total_steps"] == 5 * PER


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but the lock, with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


FLAGS = ["--num-envs", "2", "--rollout-len", "8", "--num-minibatches", "2", "--no-progress"]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--total-steps", str(2 * PER)], "has done 3 iterations (48 env steps) already"),
        (["--schedule-steps", str(6 * PER)], "(schedule_steps: 48 -> 96)"),
    ],
    ids=["fewer-steps-than-done", "another-horizon"],
)
def test_a_change_to_what_was_computed_is_refused_in_one_line(tmp_path, capsys, flags, says):
    run = tmp_path / "r"
    assert (
        main(
            [
                "train",
                *FLAGS,
                "--total-steps",
                str(3 * PER),
                "--out",
                str(tmp_path),
                "--run-name",
                "r",
            ]
        )
        == 0
    )
    files = _files(run)
    capsys.readouterr()
    assert main(["train", "--resume", str(run), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
    assert _files(run) == files


def test_the_command_extends_a_run_and_says_so(tmp_path, capsys):
    run = tmp_path / "r"
    argv = ["train", *FLAGS, "--anneal-lr", "false", "--out", str(tmp_path), "--run-name", "r"]
    assert main([*argv, "--total-steps", str(3 * PER)]) == 0
    assert main(["train", "--resume", str(run), "--total-steps", str(5 * PER)]) == 0
    out = capsys.readouterr().out
    assert f"completed: {5 * PER} env steps" in out
    assert [r["iteration"] for r in _rows(run)] == [1, 2, 3, 4, 5]
    # Resumed again with no budget given, the run keeps the one it was extended to.
    assert main(["train", "--resume", str(run)]) == 0
    assert len(extension.read(run)) == 1

"""The jaxrl-fdg command: list, graph, train; bad input exits 2 with one line and no traceback."""

import json
import subprocess
import sys
import tomllib

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main

TINY = [
    "--total-steps",
    "48",
    "--num-envs",
    "2",
    "--rollout-len",
    "8",
    "--log-every",
    "2",
    "--num-minibatches",
    "2",
    "--update-epochs",
    "2",
    "--no-progress",
]


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for needle in ("ppo", "CartPole-v1", *rl.FUSION_MODES):
        assert needle in out


def test_graph(capsys):
    assert main(["graph", "ppo"]) == 0
    out = capsys.readouterr().out
    assert "learner.params" in out and "actor.params" in out and "scan" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["train", "--fusion", "nope"],
            "unknown fusion mode 'nope' (valid: eager, step, fragment, iteration, scan)",
        ),
        (["train", "--algo", "dqnn"], "unknown algorithm 'dqnn'"),
        (
            ["train", "--env", "cartpole"],
            "unknown environment 'cartpole'; did you mean 'CartPole-v1'?",
        ),
        (["train", "--num-envs", "0"], "num_envs must be a positive integer, got 0"),
        (["train", "--total-steps", "-5"], "total_steps must be a positive integer, got -5"),
        (["train", "--num-minibatches", "3"], "does not divide into num_minibatches = 3"),
        (["train", "--lr", "fast"], "lr must be of type float, got 'fast'"),
        (
            ["train", "--config", "no/such/file.toml"],
            "config file 'no/such/file.toml' does not exist",
        ),
        (["graph", "nope"], "unknown algorithm 'nope'"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_flag_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--num-env", "4"])
    assert exc.value.code == 2


def test_bad_input_in_a_subprocess_has_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "jaxrl_fdg", "train", "--fusion", "fused"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "unknown fusion mode 'fused'" in proc.stderr and "Traceback" not in proc.stderr


def test_train_writes_a_run_folder_that_reruns_identically(tmp_path, capsys):
    assert (
        main(["train", *TINY, "--out", str(tmp_path / "a"), "--run-name", "first", "--seed", "5"])
        == 0
    )
    out = capsys.readouterr().out
    assert "env steps" in out and "final return" in out and "waiting on the device" in out
    run = tmp_path / "a" / "first"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["env_steps"] == 48
    assert summary["compile_s"] > 0 and summary["run_s"] > 0 and summary["steps_per_s"] > 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [32, 48]
    for key in (
        "step",
        "wall_s",
        "episode_return",
        "loss",
        "policy_loss",
        "value_loss",
        "steps_per_s",
    ):
        assert key in rows[0]
    config = tomllib.loads((run / "config.toml").read_text())
    assert config["seed"] == 5 and config["hparams"]["num_minibatches"] == 2

    assert (
        main(
            [
                "train",
                "--config",
                str(run / "config.toml"),
                "--out",
                str(tmp_path / "b"),
                "--run-name",
                "again",
            ]
        )
        == 0
    )
    again = [
        json.loads(line)
        for line in (tmp_path / "b" / "again" / "metrics.jsonl").read_text().splitlines()
    ]
    for a, b in zip(rows, again, strict=True):
        for key in ("loss", "policy_loss", "value_loss", "entropy", "episode_return"):
            assert a[key] == b[key], key


def test_command_line_overrides_config_file(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('fusion = "step"\nseed = 1\n[hparams]\nlr = 0.001\n')
    assert (
        main(
            [
                "train",
                "--config",
                str(path),
                *TINY,
                "--seed",
                "2",
                "--out",
                str(tmp_path),
                "--run-name",
                "r",
            ]
        )
        == 0
    )
    config = tomllib.loads((tmp_path / "r" / "config.toml").read_text())
    assert (config["fusion"], config["seed"], config["hparams"]["lr"]) == ("step", 2, 0.001)

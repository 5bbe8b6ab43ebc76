"""What the commands share: bad input of any kind exits 2 with one line and no traceback."""

import argparse

import pytest

from jaxrl_fdg.cli import common, main
from jaxrl_fdg.core import algorithm as algorithms


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["train", "--fusion", "nope"],
            "unknown fusion mode 'nope' (valid: eager, step, fragment, iteration, scan, auto)",
        ),
        (["train", "--algo", "dqnn"], "unknown algorithm 'dqnn'"),
        (
            ["train", "--env", "cartpole"],
            "unknown environment 'cartpole'; did you mean 'CartPole-v1'",
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


def _parser(leave_out=()) -> argparse.ArgumentParser:
    spec = algorithms.get("ppo")
    parser = argparse.ArgumentParser(allow_abbrev=False)
    common.add_run_flags(parser, spec, leave_out=leave_out)
    common.add_hparam_flags(parser, spec)
    return parser


def test_flags_layer_over_a_config_files_settings():
    argv = ["--seed", "3", "--lr", "0.5", "--env-option", "max_steps=200", "--no-progress"]
    data = {"seed": 1, "fusion": "step", "hparams": {"gamma": 0.9, "lr": 0.1}, "env_options": {}}
    config = common.config_from(_parser().parse_args(argv), data, skip=())
    assert (config.seed, config.fusion, config.progress) == (3, "step", False)
    # Hyperparameters and environment options merge key by key; a flag's value is coerced
    # when the config is resolved.
    assert config.hparams == {"gamma": 0.9, "lr": "0.5"}
    assert config.env_options == {"max_steps": 200}


def test_run_flags_left_out_are_not_flags(capsys):
    assert _parser().parse_args(["--algo", "dqn"]).algo == "dqn"
    with pytest.raises(SystemExit):
        _parser(leave_out=("algo",)).parse_args(["--algo", "dqn"])
    assert "unrecognized arguments: --algo dqn" in capsys.readouterr().err

"""Configurations a third hostile probe sent: a YAML alias bomb, environment options of the wrong
type or out of range, and the Python API given something other than a ``TrainConfig``. Each is
refused before anything compiles, in one line (exit 2 from the command line), with no folder."""

import numpy as np
import pytest
from faultkit import one_line_error

import jaxrl_fdg as rl
from jaxrl_fdg import config as cfg
from jaxrl_fdg.cli import main
from jaxrl_fdg.errors import ConfigError

# Seven levels of nine aliases each: 500 bytes of YAML, 9**7 (4.8 million) strings expanded.
_LEVELS = "abcdefg"
BOMB = 'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n' + "".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n" for a, b in zip(_LEVELS, _LEVELS[1:], strict=False)
)


@pytest.mark.timeout(60)  # it used to hang, deep-copying the expansion
def test_a_yaml_alias_bomb_is_refused_in_one_line(tmp_path, capsys):
    nested = "".join(f"    {line}\n" for line in BOMB.splitlines())
    (tmp_path / "bomb.yaml").write_text(f"env_options:\n  x:\n{nested}")
    argv = ["train", "--config", str(tmp_path / "bomb.yaml"), "--out", str(tmp_path / "runs")]
    assert main(argv) == 2
    assert "holds more than 10,000 values (counting each use of a YAML alias)" in one_line_error(
        capsys
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.timeout(60)
def test_a_bomb_built_in_python_is_refused_before_it_is_copied():
    import yaml

    options = yaml.safe_load(BOMB)
    with pytest.raises(ConfigError, match="^env_options holds more than 10,000 values"):
        rl.train(rl.TrainConfig(env_options=options, out=None))


@pytest.mark.parametrize(
    "option, message",
    [
        ("gravity=heavy", "parameter gravity of 'CartPole-v1' takes a number, got 'heavy'"),
        ("gravity=nan", "parameter gravity of 'CartPole-v1' must be finite, got nan"),
        ("max_steps=2.5", "parameter max_steps of 'CartPole-v1' takes a whole number, got 2.5"),
        ("max_steps=-5", "max_steps of 'CartPole-v1' must be in [1, 2147483647], got -5"),
        ("max_steps=0", "max_steps of 'CartPole-v1' must be in [1, 2147483647], got 0"),
        ("max_steps=1e13", "must be in [1, 2147483647], got 10000000000000"),
        ("euler=1", "parameter euler of 'CartPole-v1' takes true or false, got 1"),
    ],
)
def test_an_env_option_of_the_wrong_type_or_range_is_one_line(option, message, tmp_path, capsys):
    argv = ["train", "--env-option", option, "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 2
    assert message in one_line_error(capsys)
    assert list(tmp_path.iterdir()) == []


def test_env_options_of_the_right_type_are_taken_as_the_fields_types():
    resolved = cfg.resolve(rl.TrainConfig(env_options={"max_steps": 200.0, "gravity": 10}))
    assert (resolved.env_params.max_steps, resolved.env_params.gravity) == (200, 10.0)
    assert isinstance(resolved.env_params.max_steps, int)


@pytest.mark.parametrize("given", [{"algo": "ppo"}, None, "ppo"], ids=["dict", "None", "str"])
def test_the_python_api_refuses_what_is_not_a_config_in_one_line(given):
    with pytest.raises(ConfigError, match=r"^a run takes a TrainConfig, got (dict|NoneType|str)"):
        rl.train(given)


def test_numpy_scalars_are_taken_as_pythons():
    config = rl.TrainConfig(num_envs=np.int64(4), total_steps=np.int32(1024), seed=np.uint8(3))
    resolved = cfg.resolve(config)
    assert (resolved.config.num_envs, resolved.config.total_steps, resolved.config.seed) == (
        4,
        1024,
        3,
    )
    assert all(type(v) is int for v in (config.num_envs, config.total_steps, config.seed))

"""``jaxrl-fdg check-env ID``: a line per check, exit 0 where all pass, 1 where a contract is
broken (one line on stderr naming the checks), 2 for a bad name or value (one line, no
traceback)."""

import re
import subprocess
import sys

import pytest

from jaxrl_fdg import cli
from jaxrl_fdg.cli import main
from jaxrl_fdg.envs.check import CHECKS

BROKEN = '''
import jax.numpy as jnp
from jaxrl_fdg import envs
from jaxrl_fdg.envs import Box, Discrete
from jaxrl_fdg.envs.classic.catch import Catch


class NanCatch(Catch):
    """Catch whose reward is NaN where the ball is caught or missed."""

    def step_env(self, key, state, action, params):
        state, obs, reward, terminated = super().step_env(key, state, action, params)
        return state, obs, jnp.where(terminated, jnp.nan, reward), terminated


envs.register("NanCatch-v0", NanCatch)
'''


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    path = tmp_path_factory.mktemp("envs") / "nan_catch.py"
    path.write_text(BROKEN)
    return f"{path}:NanCatch-v0"


def test_an_environment_that_keeps_every_contract_exits_0(capsys):
    assert main(["check-env", "Catch-bsuite", "--steps", "24", "--num-envs", "2"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "check-env Catch-bsuite: 2 environments, 24 steps, seed 0"
    assert [line.split()[1] for line in lines[1:-1]] == list(CHECKS)
    assert lines[1] == "pass  reset         reset_env and reset_batch run"
    assert lines[-1] == "Catch-bsuite: all 13 checks passed, 2 skipped"
    assert captured.err == ""


def test_a_broken_contract_exits_1_and_names_it(broken, capsys):
    code = main(["check-env", broken, "--steps", "24", "--num-envs", "2", "--seed", "3"])
    captured = capsys.readouterr()
    assert code == 1
    assert "FAIL  finite        reward is nan after step 9 (env 0)" in captured.out
    assert captured.out.splitlines()[-1].endswith("1 of 13 checks failed (finite), 2 skipped")
    assert captured.err.splitlines() == [
        f"jaxrl-fdg: error: {broken} breaks the contract of finite (see above)"
    ]


def test_env_options_reach_the_environment(broken, capsys):
    """``--env-option rows=5`` makes episodes of 4 steps: the NaN comes at step 4."""
    argv = ["check-env", broken, "--steps", "8", "--num-envs", "1", "--env-option", "rows=5"]
    assert main(argv) == 1
    assert "reward is nan after step 4 (env 0)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["CartPol-v1"], "unknown environment 'CartPol-v1'; did you mean 'CartPole-v1'"),
        (["CartPole-v1", "--steps", "0"], "steps must be an integer in [1, 100,000], got 0"),
        (["CartPole-v1", "--num-envs", "-2"], "num_envs must be an integer in [1, 4,096]"),
        (["CartPole-v1", "--seed", "-1"], "seed must be an integer in [0, 4,294,967,295]"),
        (["CartPole-v1", "--steps", "100000", "--num-envs", "11"], "at most 1,000,000"),
        (["CartPole-v1", "--env-option", "bogus=1"], "unknown parameter(s) ['bogus']"),
        (["CartPole-v1", "--env-option", "bogus"], "--env-option takes KEY=VALUE"),
        (["no_such_module:Maze-v0"], "cannot import module 'no_such_module'"),
    ],
)
def test_a_bad_name_or_value_exits_2_in_one_line(argv, message, capsys):
    assert main(["check-env", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("jaxrl-fdg: error: ") and message in captured.err
    assert len(captured.err.splitlines()) == 1


def test_bad_input_in_a_subprocess_has_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "jaxrl_fdg", "check-env", "CartPol-v1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "did you mean 'CartPole-v1'" in proc.stderr and "Traceback" not in proc.stderr


def test_the_command_is_listed_and_every_flag_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert re.search(r"\n    check-env\s", capsys.readouterr().out)
    parser = cli._parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["check-env"]
    flags = [a for a in sub._actions if a.dest != "help"]
    assert {a.dest for a in flags} == {"env", "steps", "num_envs", "seed", "env_option"}
    assert all(a.help for a in flags)

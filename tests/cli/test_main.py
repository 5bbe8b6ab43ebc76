"""The ``jaxrl-fdg`` command as a whole: its commands, and ``python -m jaxrl_fdg``."""

import subprocess
import sys

import pytest

from jaxrl_fdg import cli
from jaxrl_fdg.cli import main


def test_bad_input_in_a_subprocess_has_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "jaxrl_fdg", "train", "--fusion", "fused"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "unknown fusion mode 'fused'" in proc.stderr and "Traceback" not in proc.stderr


def test_the_command_lists_its_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("train", "evaluate", "list", "graph", "profile", "plot", "compare"):
        assert f"\n    {command} " in out, command


@pytest.mark.parametrize("argv", [[], ["bogus"], ["list", "--bogus"]])
def test_no_or_an_unknown_command_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: jaxrl-fdg" in capsys.readouterr().err


def test_what_the_module_exported_before_its_commands_were_modules_still_imports():
    assert cli.__all__ == ["main", "_RUN_FLAGS", "_env_options", "_flag"]
    assert cli._flag("num_envs") == "--num-envs" and "num_envs" in cli._RUN_FLAGS
    assert cli._env_options(["max_steps=200"]) == {"max_steps": 200}

"""``jaxrl-fdg list``: what there is to choose from, JaxMARL's games named without importing it."""

import importlib.machinery
import importlib.util
import json
import subprocess
import sys

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.envs import prefixes, source_names


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for needle in ("ppo", "CartPole-v1", *rl.FUSION_MODES):
        assert needle in out


JAXMARL_NAMES = ("MPE_simple_spread_v3", "HeuristicEnemySMAX", "overcooked", "hanabi")


def _jaxmarl_at(monkeypatch, origin):
    """``find_spec("jaxmarl")`` answers a package at ``origin`` (None: not installed)."""
    real = importlib.util.find_spec

    def find_spec(name, *args):
        if name != "jaxmarl":
            return real(name, *args)
        return None if origin is None else importlib.machinery.ModuleSpec(name, None, origin=origin)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.skipif(importlib.util.find_spec("jaxmarl") is None, reason="jaxmarl not installed")
def test_list_names_jaxmarl_games_without_importing_jaxmarl():
    code = """
import contextlib, io, json, sys
from jaxrl_fdg.cli import main
from jaxrl_fdg.envs import prefixes, source_names
with contextlib.redirect_stdout(io.StringIO()) as out:
    main(["list"])
names = prefixes.jaxmarl_names()
print(json.dumps([out.getvalue(), names, "jaxmarl" in sys.modules]))
"""
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    out, names, imported = json.loads(run.stdout.splitlines()[-1])
    assert not imported
    assert set(JAXMARL_NAMES) <= set(names)
    listed = out[out.index("jaxmarl/<name>") :].split("gymnax-api/")[0]
    assert "names: MPE_simple_v3, " in listed
    assert all(name in listed for name in JAXMARL_NAMES)


@pytest.mark.parametrize(
    "source",
    [
        None,  # no registration.py
        "registered_envs = [",  # not Python
        "registered_envs = sorted(ENVS)",  # not a literal
        "registered_envs = ['SMAX', 3]",  # not all strings
        "other = ['SMAX']",  # no such list
    ],
)
def test_list_shows_the_jaxmarl_pattern_where_its_names_cannot_be_read(
    monkeypatch, tmp_path, capsys, source
):
    if source is not None:
        (tmp_path / "registration.py").write_text(source)
    _jaxmarl_at(monkeypatch, str(tmp_path / "__init__.py"))
    assert prefixes.jaxmarl_names() == ()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "e.g. jaxmarl/MPE_simple_spread_v3 (installed)" in out and "names:" not in out


def test_list_shows_jaxmarl_not_installed_without_names(monkeypatch, capsys):
    _jaxmarl_at(monkeypatch, None)
    assert prefixes.jaxmarl_names() == ()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "jaxmarl/MPE_simple_spread_v3 (not installed: pip install jaxrl-fdg[jaxmarl])" in out
    assert "names:" not in out


def test_literal_strings_reads_the_last_module_level_assignment(tmp_path):
    source = tmp_path / "registration.py"
    source.write_text(
        "registered_envs = ['old']\n"
        "def make():\n    registered_envs = ['local']\n"
        "registered_envs: list[str] = ['a', 'b']\n"
    )
    assert source_names.literal_strings(source, "registered_envs") == ("a", "b")

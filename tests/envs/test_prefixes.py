"""``envs.make`` and ``envs.check_name`` on every kind of name: registered, ``brax/``, ``gym/``,
``gymnax/``; the errors for bad ones, and ``adapters()`` for ``jaxrl-fdg list``. The JAX suites'
prefixes (``craftax/`` ... ``timestep-api/``) are tested in ``test_suites.py``."""

import importlib.util
import subprocess
import sys

import pytest

from jaxrl_fdg import envs
from jaxrl_fdg.envs import prefixes

PREFIXES = (
    "brax/",
    "gym/",
    "gymnax/",
    "playground/",
    "envpool/",
    "craftax/",
    "xminigrid/",
    "navix/",
    "jumanji/",
    "jaxmarl/",
    "gymnax-api/",
    "timestep-api/",
)


def test_registered_names_apply_overrides_to_params():
    env, params = envs.make("CartPole-v1", max_steps=200, gravity=5.0)
    assert isinstance(env, envs.CartPole) and (params.max_steps, params.gravity) == (200, 5.0)
    assert env.on_host is False and envs.Environment.on_host is False


def test_brax_names_default_to_mjx_and_take_max_steps():
    pytest.importorskip("brax")
    env, params = envs.make("brax/inverted_pendulum")
    assert (env.env_name, env.backend, params.max_steps) == ("inverted_pendulum", "mjx", 1000)
    env, params = envs.make("brax/inverted_pendulum:generalized", max_steps=50)
    assert (env.backend, params.max_steps, env.on_host) == ("generalized", 50, False)


def test_gym_names_are_host_simulators_without_params():
    pytest.importorskip("gymnasium")
    simulator, params = envs.make("gym/CartPole-v1", max_episode_steps=10)
    assert params is None and simulator.on_host is True
    assert simulator.name == "gym/CartPole-v1"
    assert simulator.action_space == envs.Discrete(2)
    batch = simulator.make_batch(1, 0)  # keywords went to gymnasium.make
    assert batch.envs[0].spec.max_episode_steps == 10
    batch.close()


def test_gymnax_names_wrap_gymnax():
    pytest.importorskip("gymnax")
    env, params = envs.make("gymnax/Catch-bsuite", max_steps=12)
    assert env.name == "gymnax-Catch-bsuite" and env.on_host is False
    assert params.max_steps == params.gymnax.max_steps_in_episode == 12


def test_unknown_names_raise_one_line_errors_with_close_matches():
    cases = [
        ("CartPol-v1", "did you mean 'CartPole-v1'"),
        ("bax/ant", r"unknown environment prefix 'bax/'.*brax/<env>\[:<backend>\], gym/<id>"),
        ("brax/ant:mjz", "unknown Brax backend 'mjz'; did you mean 'mjx'"),
        ("brax/", "names no Brax environment"),
        ("gymnax/", "needs an id"),
    ]
    for name, message in cases:
        for call in (envs.check_name, envs.make):
            with pytest.raises(envs.UnknownEnvironmentError, match=message) as error:
                call(name)
            assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    "name, module, message",
    [
        ("gymnax/Breakout-Minatar", "gymnax", "did you mean 'Breakout-MinAtar'"),
        ("brax/inverted_pendulm", "brax", "did you mean 'inverted_pendulum'"),
        ("gym/NoSuchEnv-v0", "gymnasium", "gymnasium cannot make 'NoSuchEnv-v0'"),
        ("envpool/Pongg-v5", "envpool", "did you mean 'Pong-v5'"),
        ("playground/CartpoleBalanse", "mujoco_playground", "did you mean 'CartpoleBalance'"),
    ],
)
def test_unknown_ids_are_found_when_built(name, module, message):
    pytest.importorskip(module)
    envs.check_name(name)  # the id itself is the library's to judge
    with pytest.raises(envs.UnknownEnvironmentError, match=message) as error:
        envs.make(name)
    assert "\n" not in str(error.value)


def test_a_missing_package_names_the_extra_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gymnax" else real(name, *a)
    )
    expected = r'needs the gymnax package: pip install "jaxrl-fdg\[gymnax\]"'
    for call in (envs.check_name, envs.make):
        with pytest.raises(envs.MissingDependencyError, match=expected):
            call("gymnax/CartPole-v1")
    rows = {row.prefix: row for row in envs.adapters()}
    assert rows["gymnax/"].installed is False and rows["gym/"].installed is (
        real("gymnasium") is not None
    )
    assert issubclass(envs.MissingDependencyError, ValueError)


def test_a_package_that_fails_to_import_is_a_missing_dependency(monkeypatch):
    pytest.importorskip("gymnax")

    def import_module(name, *args):
        raise ModuleNotFoundError("No module named 'six'")

    monkeypatch.setattr(prefixes.importlib, "import_module", import_module)
    with pytest.raises(envs.MissingDependencyError, match=r"jaxrl-fdg\[gymnax\].*'six'"):
        envs.make("gymnax/CartPole-v1")


def test_adapters_list_every_prefix_with_an_example_that_checks():
    rows = envs.adapters()
    assert tuple(row.prefix for row in rows) == PREFIXES
    for row, adapter in zip(rows, prefixes.ADAPTERS, strict=True):
        assert row.example.startswith(row.prefix) and row.description
        assert row.installed is (importlib.util.find_spec(adapter.module) is not None)
        if row.installed:
            envs.check_name(row.example)


def test_checking_names_imports_no_optional_package():
    code = """
import sys, jaxrl_fdg.envs as e
e.adapters()
for name in ('CartPole-v1', 'brax/ant:mjx', 'gym/x', 'gymnax/x', 'playground/x', 'envpool/x',
             'craftax/Craftax-Classic-Symbolic-v1', 'xminigrid/MiniGrid-Empty-5x5',
             'navix/Navix-Empty-5x5-v0', 'jumanji/Game2048-v1', 'gymnax-api/gymnax:make',
             'timestep-api/jumanji:make'):
    try:
        e.check_name(name)
    except e.MissingDependencyError:
        pass
mods = ('brax', 'gymnasium', 'gymnax', 'mujoco', 'mujoco_playground', 'envpool', 'craftax',
        'xminigrid', 'navix', 'jumanji')
print([m for m in mods if m in sys.modules])
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"

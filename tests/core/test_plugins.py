"""User algorithms and environments reach the command line: by reference (``module:NAME``,
``path/file.py:NAME``) and by entry point; their run folders work in a fresh process."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import plugins
from jaxrl_fdg.cli import main
from jaxrl_fdg.core import algorithm as algorithms

ROOT = Path(__file__).resolve().parents[2]
VTRACE = ROOT / "examples" / "vtrace.py"
TINY = ["--num-envs", "2", "--rollout-len", "8", "--no-progress", "--profile", "off"]


def test_references_are_told_from_names_with_colons():
    assert plugins.split_reference("mylab.algos:SPEC") == ("mylab.algos", "SPEC")
    assert plugins.split_reference("dir/algo.py:SPEC") == ("dir/algo.py", "SPEC")
    assert plugins.split_reference("mylab.envs:brax/ant:generalized") == (
        "mylab.envs",
        "brax/ant:generalized",
    )
    for name in ("ppo", "brax/ant:generalized", "gym/CartPole-v1", "mylab.algos:"):
        assert plugins.split_reference(name) is None
    assert plugins.normalize("examples/vtrace.py:SPEC") == f"{VTRACE}:SPEC"
    assert plugins.normalize("mylab.algos:SPEC") == "mylab.algos:SPEC"


def test_builtins_are_entry_points_found_as_a_users_would_be():
    points = plugins.entry_points(plugins.ALGORITHMS)
    assert {"a2c", "ppo", "dqn", "c51", "pqn", "sac", "td3", "ddpg"} <= set(points)
    assert algorithms.get("ppo").name == "ppo"


@pytest.mark.parametrize(
    "algo, message",
    [
        ("no_such_module_x:SPEC", "cannot import module 'no_such_module_x'"),
        (f"{VTRACE}:NOPE", "has no attribute 'NOPE'"),
        (f"{VTRACE}:build", "is a function, not an AlgorithmSpec"),
        ("missing/file.py:SPEC", "does not exist"),
        ("pp0", "unknown algorithm 'pp0'; did you mean 'ppo'"),
    ],
)
def test_bad_references_exit_2_with_one_line(algo, message, capsys, tmp_path):
    assert main(["train", "--algo", algo, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not list(tmp_path.iterdir())


def test_a_syntax_error_in_user_code_is_one_line(tmp_path, capsys):
    bad = tmp_path / "broken.py"
    bad.write_text("def build(ctx:\n")
    assert main(["train", "--algo", f"{bad}:SPEC", "--out", ""]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: syntax error" in err and err.count("\n") == 1


def test_a_graph_error_in_user_code_is_one_line_exit_2(tmp_path, capsys):
    # Two transforms that read each other's outputs: a cycle the graph names.
    code = textwrap.dedent(
        """
        import jaxrl_fdg as rl
        from jaxrl_fdg.fragments.algorithms import ppo

        def swap(a, b):
            return lambda state, inputs, key: (state, {b: inputs[a]})

        def build(ctx):
            one = rl.fragment("one", "transform", swap("a", "b"), inputs=("a",), outputs=("b",))
            two = rl.fragment("two", "transform", swap("b", "a"), inputs=("b",), outputs=("a",))
            return ppo.SPEC.build(ctx).with_fragments(one, two)

        SPEC = ppo.SPEC._replace(name="cyclic", build=build)
        """
    )
    (tmp_path / "cyclic.py").write_text(code)
    assert main(["train", "--algo", f"{tmp_path / 'cyclic.py'}:SPEC", "--out", ""]) == 2
    err = capsys.readouterr().err
    assert "a cycle: 'one' reads 'a' from 'two'" in err and err.count("\n") == 1, err
    assert main(["graph", f"{tmp_path / 'cyclic.py'}:SPEC"]) == 2


@pytest.fixture(scope="module")
def vtrace_run(tmp_path_factory):
    """A V-trace run from the stock command: 3 checkpoints, by the file's path."""
    out = tmp_path_factory.mktemp("vtrace")
    flags = ["--total-steps", "96", "--checkpoint-every", "32", "--log-every", "2", *TINY]
    relative = f"{os.path.relpath(VTRACE)}:SPEC"  # as typed in a shell
    code = main(["train", "--algo", relative, *flags, "--out", str(out)])
    assert code == 0
    (folder,) = out.iterdir()
    return folder


def test_a_user_algorithm_runs_from_the_stock_command(vtrace_run):
    assert vtrace_run.name.startswith("vtrace-CartPole-v1-scan-s0-")
    config = (vtrace_run / "config.toml").read_text()
    assert f'algo = "{VTRACE}:SPEC"' in config  # absolute: found again from any folder
    assert "rho_bar = 1.0" in config  # its hyperparameters, spelled out
    summary = json.loads((vtrace_run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["iterations"] == 6


def test_a_user_algorithms_run_resumes_and_evaluates_in_a_fresh_process(vtrace_run, tmp_path):
    # As if the run had died after its first checkpoint: a fresh process, started elsewhere,
    # resumes it from the config alone and evaluates it.
    part = tmp_path / "part"
    shutil.copytree(vtrace_run, part)
    for late in ("4", "6"):
        shutil.rmtree(part / "checkpoints" / late)
    script = (
        "from jaxrl_fdg.cli import main\n"
        "import sys\n"
        "assert main(['train', '--resume', sys.argv[1], '--no-progress']) == 0\n"
        "assert main(['evaluate', sys.argv[1], '--episodes', '2']) == 0\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(part)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "iteration 6 (96 env steps), 2 episodes: return" in proc.stdout
    rows = [json.loads(line) for line in (part / "metrics.jsonl").open()]
    full = [json.loads(line) for line in (vtrace_run / "metrics.jsonl").open()]
    assert [r["iteration"] for r in rows] == [2, 4, 6]
    for key in ("policy_loss", "value_loss", "entropy"):  # the resumed run computed the same
        np.testing.assert_array_equal([r[key] for r in rows], [r[key] for r in full])


def _module(tmp_path, name: str, code: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(code))


def test_a_module_reference_and_a_users_environment(tmp_path, monkeypatch, capsys):
    # A package module on the path holds an algorithm; another registers an environment.
    _module(tmp_path, "lab_algos", "from jaxrl_fdg.fragments.algorithms.a2c import SPEC as A2C\n")
    _module(
        tmp_path,
        "lab_envs",
        """
        from jaxrl_fdg import envs
        envs.register("LabCartPole-v0", envs.CartPole)
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    flags = ["--algo", "lab_algos:A2C", "--env", "lab_envs:LabCartPole-v0", "--total-steps", "32"]
    assert main(["train", *flags, *TINY, "--out", str(tmp_path / "runs")]) == 0
    (folder,) = (tmp_path / "runs").iterdir()
    assert folder.name.startswith("a2c-LabCartPole-v0-scan")
    assert 'env = "lab_envs:LabCartPole-v0"' in (folder / "config.toml").read_text()


def test_a_gymnasium_environment_registered_by_a_users_module(tmp_path, capsys):
    pytest.importorskip("gymnasium")
    _module(
        tmp_path,
        "gym_lab",
        """
        import gymnasium
        gymnasium.register(
            "LabCartPoleGym-v0",
            entry_point="gymnasium.envs.classic_control:CartPoleEnv",
            max_episode_steps=50,
        )
        """,
    )
    env = f"{tmp_path / 'gym_lab.py'}:gym/LabCartPoleGym-v0"
    flags = ["--env", env, "--total-steps", "32", "--fusion", "step", *TINY, "--out", ""]
    assert main(["train", *flags]) == 0


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A distribution on the path declaring an algorithm and an environment entry point."""
    _module(
        tmp_path,
        "labplugin",
        """
        from jaxrl_fdg import envs
        from jaxrl_fdg.fragments.algorithms.a2c import SPEC as A2C

        SPEC = A2C._replace(name="lab-a2c", summary="A2C, from an installed package")

        def make_env():
            return envs.CartPole()
        """,
    )
    info = tmp_path / "labplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[jaxrl_fdg.algorithms]\nlab-a2c = labplugin:SPEC\n\n"
        "[jaxrl_fdg.envs]\nLabPole-v0 = labplugin:make_env\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.entry_points.cache_clear()
    yield
    plugins.entry_points.cache_clear()


def test_an_installed_packages_entry_points_are_listed_and_run(installed_plugin, capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "lab-a2c" in listed and "A2C, from an installed package" in listed
    assert "LabPole-v0" in listed
    flags = ["--algo", "lab-a2c", "--env", "LabPole-v0", "--total-steps", "32", *TINY]
    assert main(["train", *flags, "--out", ""]) == 0
    with pytest.raises(rl.ConfigError, match="already registered"):
        algorithms.register(algorithms.get("lab-a2c"))


def test_a_hyperparameter_named_like_a_run_setting_is_refused(tmp_path, capsys):
    code = textwrap.dedent(
        """
        import dataclasses
        import jaxrl_fdg as rl
        from jaxrl_fdg.fragments.algorithms import ppo

        @dataclasses.dataclass(frozen=True)
        class Clashing(ppo.PPOConfig):
            eval_every: int = rl.hparam(10, "iterations between evaluations")

        SPEC = ppo.SPEC._replace(name="clashing", hparams=Clashing)
        """
    )
    (tmp_path / "clashing.py").write_text(code)
    assert main(["train", "--algo", f"{tmp_path / 'clashing.py'}:SPEC", "--help"]) == 2
    err = capsys.readouterr().err
    assert "names hyperparameter(s) eval_every like run settings" in err


def test_plot_and_compare_read_a_user_algorithms_run_folder(vtrace_run, tmp_path, capsys):
    # They read the folder's files alone: the algorithm's code is not needed, its name is shown.
    assert main(["plot", str(vtrace_run), "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").stat().st_size > 0
    out = tmp_path / "comparison.png"
    assert main(["compare", str(vtrace_run), "--metric", "episode_return", "--out", str(out)]) == 0
    assert out.stat().st_size > 0


def test_a_module_that_registers_no_such_environment_says_so(tmp_path, capsys):
    _module(tmp_path, "empty_envs", "x = 1\n")
    env = f"{tmp_path / 'empty_envs.py'}:Nothing-v0"
    assert main(["train", "--env", env, "--out", ""]) == 2
    err = capsys.readouterr().err
    assert "registered no such environment: unknown environment 'Nothing-v0'" in err


def test_a_file_imported_by_name_is_the_module_its_reference_loads(tmp_path, monkeypatch):
    # `import lab_walk` and `lab_walk.py:...` are one module: it registers its environment once.
    _module(
        tmp_path,
        "lab_walk",
        """
        from jaxrl_fdg import envs
        envs.register("LabWalk-v0", envs.CartPole)
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import lab_walk

    assert plugins.import_module(str(tmp_path / "lab_walk.py"), "test") is lab_walk
    env, _ = rl.envs.make(f"{tmp_path / 'lab_walk.py'}:LabWalk-v0")
    assert isinstance(env, rl.envs.CartPole)

"""The layout of ``jaxrl_fdg.fragments``: algorithms in ``algorithms/``, building blocks beside
it, and the algorithms' old paths still importing the same modules with a DeprecationWarning."""

import importlib
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import jaxrl_fdg.fragments as fragments
from jaxrl_fdg.fragments import algorithms

ROOT = Path(__file__).resolve().parents[2]
ALGORITHMS = sorted(
    p.stem for p in (ROOT / "fragments" / "algorithms").glob("*.py") if p.stem != "__init__"
)
# The modules that lived beside the building blocks before algorithms/ (their old paths warn).
MOVED = sorted(fragments._MOVED)


@pytest.fixture
def fresh(monkeypatch):
    """No old path imported yet: neither in ``sys.modules`` nor bound on the package."""
    for name in MOVED:
        monkeypatch.delitem(sys.modules, f"jaxrl_fdg.fragments.{name}", raising=False)
        if name in vars(fragments):
            monkeypatch.delitem(vars(fragments), name)


def _new(name):
    return importlib.import_module(f"jaxrl_fdg.fragments.algorithms.{name}")


def _run(statement, namespace):
    """Run ``statement`` as a line of a user's file, ``user.py``."""
    exec(compile(statement, "user.py", "exec"), namespace)


def _warned(record, name):
    """The warnings were for ``name``'s old path, and point at the user's line."""
    assert record and all(w.filename == "user.py" for w in record), [str(w) for w in record]
    assert all(f"fragments.algorithms.{name}" in str(w.message) for w in record)


def test_the_moved_modules_are_the_algorithms_folder():
    assert ALGORITHMS == sorted(algorithms.__all__) and set(MOVED) <= set(ALGORITHMS)
    assert not [name for name in ALGORITHMS if (ROOT / "fragments" / f"{name}.py").exists()]


@pytest.mark.parametrize("name", MOVED)
def test_import_of_an_old_path_is_the_new_module_with_a_warning(fresh, name):
    namespace = {}
    with pytest.warns(DeprecationWarning) as record:
        _run(f"import jaxrl_fdg.fragments.{name} as old", namespace)
    _warned(record, name)
    new = _new(name)
    assert namespace["old"] is new
    assert sys.modules[f"jaxrl_fdg.fragments.{name}"] is new
    # The module keeps its own name and spec under the alias.
    assert new.__name__ == new.__spec__.name == f"jaxrl_fdg.fragments.algorithms.{name}"


@pytest.mark.parametrize("name", MOVED)
def test_from_fragments_import_an_old_name_is_the_new_module_with_a_warning(fresh, name):
    namespace = {"fragments": fragments}
    with pytest.warns(DeprecationWarning) as record:
        _run(f"from jaxrl_fdg.fragments import {name}", namespace)
    _warned(record, name)
    assert namespace[name] is _new(name)
    with pytest.warns(DeprecationWarning) as record:
        _run(f"attribute = fragments.{name}", namespace)
    _warned(record, name)
    assert namespace["attribute"] is _new(name)


@pytest.mark.parametrize(
    ("name", "spec"), [("ppo", "SPEC"), ("dpg", "TD3_SPEC"), ("actor_critic", "Policy")]
)
def test_from_an_old_path_import_a_name(fresh, name, spec):
    namespace = {}
    with pytest.warns(DeprecationWarning) as record:
        _run(f"from jaxrl_fdg.fragments.{name} import {spec}", namespace)
    _warned(record, name)
    assert namespace[spec] is getattr(_new(name), spec)


def test_unknown_names_are_still_errors(fresh):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("jaxrl_fdg.fragments.not_an_algorithm")
    with pytest.raises(AttributeError):
        fragments.not_an_algorithm  # noqa: B018


def test_the_new_paths_warn_nothing(fresh, recwarn):
    for name in MOVED:
        _new(name)
    exec("from jaxrl_fdg.fragments.algorithms import ppo, dpg", {})
    exec("from jaxrl_fdg.fragments import losses, networks, replay", {})
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_entry_points_name_the_new_modules():
    points = importlib.metadata.entry_points(group="jaxrl_fdg.algorithms")
    built_in = [p for p in points if p.value.startswith("jaxrl_fdg.")]
    assert len(built_in) == 15
    assert all(p.module.startswith("jaxrl_fdg.fragments.algorithms.") for p in built_in)


def test_building_blocks_import_no_algorithm_at_run_time(run_time_imports):
    """Outside ``if TYPE_CHECKING:``, no building block imports from ``algorithms/``."""
    folder = ROOT / "fragments"
    blocks = [p for p in folder.rglob("*.py") if "algorithms" not in p.parts]
    blocks.remove(folder / "__init__.py")  # the package, which imports both
    moved = {f"jaxrl_fdg.fragments.{name}" for name in MOVED}
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in blocks
        for line, modules in run_time_imports(path)
        if any(m in moved or m.startswith("jaxrl_fdg.fragments.algorithms") for m in modules)
    ]
    assert not offenders


def test_importing_the_library_imports_no_fragments():
    script = "import sys, jaxrl_fdg; print(sorted(m for m in sys.modules if '.fragments' in m))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""pyproject.toml lists every package of the library, so the wheel holds all of them."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where each top-level folder installs: envs/, fragments/ and profiling/ under jaxrl_fdg.
TOPS = {"jaxrl_fdg": "jaxrl_fdg", "envs": "jaxrl_fdg.envs", "fragments": "jaxrl_fdg.fragments"}
TOPS["profiling"] = "jaxrl_fdg.profiling"


def test_every_package_folder_is_listed_with_its_folder():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {}
    for top, package in TOPS.items():
        for init in (ROOT / top).rglob("__init__.py"):
            folder = init.parent.relative_to(ROOT)
            found[".".join([package, *folder.parts[1:]])] = folder.as_posix()
    assert sorted(setuptools["packages"]) == sorted(found)
    assert setuptools["package-dir"] == found

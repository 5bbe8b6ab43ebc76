"""Making a JaxMARL game imports that game's module alone: ``import jaxmarl`` imports every suite
it has, MABrax's Brax and MuJoCo among them (about 9 s on 2 CPU cores, whichever game is made).
The JaxMARL cases run in fresh processes, as a run does."""

import json
import subprocess
import sys

import pytest

from jaxrl_fdg.envs.partial_imports import defining_module

HEAVY = ("brax", "mujoco", "matplotlib", "jaxmarl.registration", "jaxmarl.environments.storm")


def _run(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_defining_module_follows_re_exports(tmp_path, monkeypatch):
    package = tmp_path / "suite"
    (package / "games" / "grid").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "try:\n    from .games import Grid, Maze\nexcept ImportError:\n    pass\n"
        "from os import path as Path\n"
    )
    (package / "games" / "__init__.py").write_text(
        "from .grid import Grid\nfrom .maze import MazeEnv as Maze\nfrom .gone import Gone\n"
    )
    (package / "games" / "grid" / "__init__.py").write_text("from .world import Grid\n")
    (package / "games" / "grid" / "world.py").write_text("class Grid: ...\n")
    (package / "games" / "maze.py").write_text("class MazeEnv: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert defining_module("suite", "Grid") == ("suite.games.grid.world", "Grid")
    assert defining_module("suite", "Maze") == ("suite.games.maze", "MazeEnv")  # renamed
    assert defining_module("suite", "Path") is None  # not a relative import of the package
    assert defining_module("suite", "Gone") is None  # re-exported from a file that is not there
    assert defining_module("suite", "Nowhere") is None
    assert defining_module("not_a_package_here", "Grid") is None
    assert defining_module("suite.games", "Grid") == ("suite.games.grid.world", "Grid")
    assert "suite" not in sys.modules  # read, never imported: not even the top package


_MAKE_THEN_IMPORT = f"""
import json, sys, io
from jaxrl_fdg import envs
spread, _ = envs.make("jaxmarl/MPE_simple_spread_v3")
smax, _ = envs.make("jaxmarl/HeuristicEnemySMAX", map="3m", world_state=True)
heavy = [m for m in {HEAVY!r} if m in sys.modules]
out, sys.stdout = sys.stdout, io.StringIO()
from jaxrl_fdg.envs.jaxmarl_imports import import_jaxmarl
jaxmarl = import_jaxmarl()  # the whole package now, its __init__ run late
printed, sys.stdout = sys.stdout.getvalue(), out
theirs = jaxmarl.make("MPE_simple_spread_v3")
again, _ = envs.make("jaxmarl/MPE_simple_spread_v3")  # the registry's, imported now
print(json.dumps({{
    "heavy": heavy,
    "printed": printed,
    "same_class": type(theirs) is type(spread.game) is type(again.game),
    "smax": type(smax.game).__name__,
    "registered": len(jaxmarl.registered_envs),
}}))
"""


def test_making_games_imports_no_other_suite_and_jaxmarl_stays_whole():
    pytest.importorskip("jaxmarl")
    out = _run(_MAKE_THEN_IMPORT)
    assert out["heavy"] == [] and out["printed"] == ""
    assert out["same_class"] and out["smax"] == "HeuristicEnemySMAX" and out["registered"] >= 30


@pytest.mark.full
def test_the_table_read_from_jaxmarl_names_every_game_and_its_class():
    # Read from JaxMARL's registration.py without running it, then compared with what it imports.
    pytest.importorskip("jaxmarl")
    out = _run(
        """
import json
from jaxrl_fdg.envs.jaxmarl_imports import _builtin_classes, import_jaxmarl
from jaxrl_fdg.envs.partial_imports import defining_module, import_alone
table = _builtin_classes()
where = {n: defining_module("jaxmarl.environments", c) for n, c in table.items()}
alone = {n: getattr(import_alone(w[0]), w[1]) for n, w in where.items() if w}
jaxmarl = import_jaxmarl()
from jaxmarl import registration
print(json.dumps({
    "missing": sorted(set(jaxmarl.registered_envs) - set(alone)),
    "classes": all(getattr(registration, table[n]) is c for n, c in alone.items()),
}))
"""
    )
    # JaxRobotarium's games live in another package, which jaxmarl.make imports for them.
    assert all(name.startswith("JaxRobotarium") for name in out["missing"]), out
    assert out["classes"]

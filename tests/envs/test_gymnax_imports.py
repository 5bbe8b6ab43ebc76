"""Making a gymnax environment imports that environment's module alone: ``import gymnax`` imports
every environment it has, and with them matplotlib, seaborn and scipy.stats (about 2.9 s on 2
CPU cores whichever environment is made). Each case runs in a fresh process, as a run does."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("gymnax")

HEAVY = ("matplotlib", "seaborn", "scipy.stats", "pandas")

_MAKE_THEN_IMPORT = f"""
import json, sys
from jaxrl_fdg import envs
env, params = envs.make("gymnax/Breakout-MinAtar")
heavy = [m for m in {HEAVY!r} if m in sys.modules]
import gymnax  # the whole package, as if nothing had been imported before
theirs, _ = gymnax.make("Breakout-MinAtar")
print(json.dumps({{
    "heavy": heavy,
    "same_class": type(theirs) is type(env.gymnax_env),
    "registered": len(gymnax.registered_envs),
    "params": gymnax.EnvParams.__name__,
}}))
"""


def _run(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_making_minatar_imports_no_plotting_and_gymnax_stays_whole():
    out = _run(_MAKE_THEN_IMPORT)
    assert out["heavy"] == []
    assert out["same_class"] and out["registered"] >= 26 and out["params"] == "EnvParams"


def test_the_table_read_from_gymnax_names_every_builtin_and_its_class():
    # Read from gymnax's registration.py without running it; compared here with the registry.
    out = _run(
        """
import json
from jaxrl_fdg.envs.gymnax_imports import _builtin_modules
from jaxrl_fdg.envs.partial_imports import import_alone
table = _builtin_modules()
classes = {i: getattr(import_alone("gymnax.environments." + m), c) for i, (m, c) in table.items()}
from gymnax import registration
print(json.dumps({
    "ids": sorted(table) == sorted(registration.registered_envs),
    "classes": all(registration._registry[i] is c for i, c in classes.items()),
}))
"""
    )
    assert out == {"ids": True, "classes": True}


def test_the_executable_caches_key_leaves_gymnax_imported_in_part():
    # The key stamps every library module a process imported; asking the part-imported gymnax
    # package for its __version__ ran its whole __init__ (1.1 s of a MinAtar warm start).
    out = _run(
        f"""
import json, sys
from jaxrl_fdg import envs
from jaxrl_fdg.run import executables
envs.make("gymnax/Breakout-MinAtar")
code = executables.loaded_code()
print(json.dumps({{
    "heavy": [m for m in {HEAVY!r} if m in sys.modules],
    "whole": "gymnax.registration" in sys.modules,
    "stamped": "module gymnax" in code,
}}))
"""
    )
    assert out == {"heavy": [], "whole": False, "stamped": True}

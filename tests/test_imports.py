"""Importing the library loads no optional or heavy backend until it is used."""

import json
import subprocess
import sys

HEAVY = (
    "orbax",
    "matplotlib",
    "yaml",
    "tensorboardX",
    "wandb",
    "scipy",
    "brax",
    "gymnasium",
    "gymnax",
    "mujoco",
    "craftax",
    "xminigrid",
    "navix",
    "jumanji",
)

_SCRIPT = """
import json, sys
import jax, flax, optax  # what the core needs anyway; some of them bring yaml or rich
before = set(sys.modules)
import jaxrl_fdg, jaxrl_fdg.envs, jaxrl_fdg.fragments, jaxrl_fdg.profiling, jaxrl_fdg.cli
import jaxrl_fdg.run.loggers, jaxrl_fdg.compare, jaxrl_fdg.stats  # loggers and statistics too
added = {m.split(".")[0] for m in set(sys.modules) - before}
print(json.dumps(sorted(added)))
"""


def test_import_loads_no_heavy_backend():
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    added = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "jaxrl_fdg" in added
    assert not added & set(HEAVY), sorted(added & set(HEAVY))


def test_import_starts_no_jax_backend():
    """Importing the library makes no JAX array: a multi-process run must configure JAX's
    backend (``jax.distributed.initialize``) after the import and before any array exists."""
    script = (
        "import jaxrl_fdg, jaxrl_fdg.envs, jaxrl_fdg.fragments, jaxrl_fdg.run\n"
        "from jax._src import xla_bridge\n"
        "print(xla_bridge.backends_are_initialized())"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "False"

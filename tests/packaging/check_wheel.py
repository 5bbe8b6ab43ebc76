"""Check a built wheel: only the jaxrl_fdg namespace, every subpackage present, importable.

    python tests/packaging/check_wheel.py dist/jaxrl_fdg-*.whl

Run it with the interpreter of an environment the wheel is installed in, from outside the
repository (CI does: see .ci/run).
"""

import importlib
import importlib.util
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REQUIRED = [
    "jaxrl_fdg/__init__.py",
    "jaxrl_fdg/cli/__init__.py",
    "jaxrl_fdg/cli/graph.py",
    "jaxrl_fdg/plots.py",
    "jaxrl_fdg/compare.py",
    "jaxrl_fdg/stats.py",
    "jaxrl_fdg/core/loop.py",
    "jaxrl_fdg/core/record.py",
    "jaxrl_fdg/policies/base.py",
    "jaxrl_fdg/tuning/population.py",
    "jaxrl_fdg/experiment/runner.py",
    "jaxrl_fdg/testing.py",
    "jaxrl_fdg/config/resolve.py",
    "jaxrl_fdg/run/compile_cache.py",
    "jaxrl_fdg/run/run_folder.py",
    "jaxrl_fdg/envs/__init__.py",
    "jaxrl_fdg/envs/classic/cartpole.py",
    "jaxrl_fdg/fragments/algorithms/ppo.py",
    "jaxrl_fdg/fragments/replay/sum_tree.py",
    "jaxrl_fdg/profiling/timers.py",
]


def main(wheel: str) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    if tops != {"jaxrl_fdg"}:
        raise SystemExit(f"wheel has top-level entries other than jaxrl_fdg: {sorted(tops)}")
    missing = [r for r in REQUIRED if r not in names]
    if missing:
        raise SystemExit(f"wheel lacks {missing}")
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    for module in (
        "jaxrl_fdg",
        "jaxrl_fdg.envs",
        "jaxrl_fdg.fragments.algorithms.ppo",
        "jaxrl_fdg.profiling",
    ):
        path = Path(importlib.import_module(module).__file__).resolve()
        if site not in path.parents:
            raise SystemExit(f"{module} was imported from {path}, not from the installed wheel")
    for module in ("jaxrl_fdg.cli", "jaxrl_fdg.plots", "jaxrl_fdg.run.run_folder"):
        importlib.import_module(module)
    heavy = {m.split(".")[0] for m in sys.modules} & {
        "matplotlib",
        "tensorboardX",
        "orbax",
        "brax",
        "gymnasium",
        "gymnax",
        "wandb",
    }
    if heavy:
        raise SystemExit(f"importing jaxrl_fdg imported {sorted(heavy)}: import them lazily")
    for generic in ("envs", "fragments", "profiling"):
        if importlib.util.find_spec(generic) is not None:
            raise SystemExit(f"a top-level {generic!r} package is importable: namespace leak")
    out = subprocess.run(
        [sys.executable, "-m", "jaxrl_fdg", "list"], capture_output=True, text=True
    )
    if out.returncode != 0 or "CartPole-v1" not in out.stdout:
        raise SystemExit(f"`python -m jaxrl_fdg list` failed: {out.stderr}")
    print(
        f"wheel ok: {len(names)} files, imported from "
        f"{Path(importlib.import_module('jaxrl_fdg').__file__).parent}"
    )


if __name__ == "__main__":
    main(sys.argv[1])

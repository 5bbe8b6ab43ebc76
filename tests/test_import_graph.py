"""The library's parts import one another without a circle but one, named below
(docs/architecture.md draws them).

A part is a subpackage of ``jaxrl_fdg`` (``core``, ``policies``, ``config``, ``run``, ``cli``,
``tuning``, and ``envs``, ``fragments``, ``profiling``, which sit at the top of the repository
and install inside the namespace) or one of its top-level modules. Every import counts, those
inside functions included; those under ``if TYPE_CHECKING:`` do not, since they never run.
"""

import graphlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"jaxrl_fdg": ROOT / "jaxrl_fdg"} | {
    name: ROOT / name for name in ("envs", "fragments", "profiling")
}


def _part(path: Path) -> str:
    for name, folder in SOURCES.items():
        if path.is_relative_to(folder):
            if name != "jaxrl_fdg":
                return name
            inner = path.relative_to(folder).parts
            return inner[0] if len(inner) > 1 else Path(inner[0]).stem
    raise AssertionError(path)


def _module(path: Path) -> list[str]:
    for name, folder in SOURCES.items():
        if path.is_relative_to(folder):
            prefix = ["jaxrl_fdg"] + ([] if name == "jaxrl_fdg" else [name])
            parts = list(path.relative_to(folder).with_suffix("").parts)
            return prefix + (parts[:-1] if parts[-1] == "__init__" else parts)
    raise AssertionError(path)


def part_graph(run_time_imports) -> dict[str, set[str]]:
    """Each part and the other parts it imports."""
    graph: dict[str, set[str]] = {}
    for folder in SOURCES.values():
        for path in folder.rglob("*.py"):
            module = _module(path)
            package = ".".join(module if path.name == "__init__.py" else module[:-1])
            named = {m for _, modules in run_time_imports(path, package) for m in modules}
            parts = {m.split(".")[1] for m in named if m.startswith("jaxrl_fdg.")}
            graph.setdefault(_part(path), set()).update(parts - {_part(path)})
    return graph


# The one circle left, named so that no other joins it: the W&B logger (run/loggers.py) draws
# the learning curve with plots.plot_runs inside a method, and plots reads a run's lane table with
# run.lanes inside a function. Neither import runs when the other module loads.
KNOWN_CIRCLE_EDGE = ("run", "plots")


def test_the_parts_import_one_another_without_a_circle(run_time_imports):
    graph = part_graph(run_time_imports)
    assert {"core", "policies", "config", "run", "fragments"} <= set(graph)
    source, target = KNOWN_CIRCLE_EDGE
    assert target in graph[source] and source in graph[target], "the known circle is gone"
    graph[source].discard(target)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        raise AssertionError(f"an import circle: {' -> '.join(error.args[1])}") from None


def test_placements_are_written_against_the_core_not_the_run_config(run_time_imports):
    graph = part_graph(run_time_imports)
    assert "config" not in graph["policies"] and "run" not in graph["policies"], graph["policies"]
    # The core imports only the environments and the leaf modules (errors, rng, branch, plugins).
    assert graph["core"] <= {"envs", "errors", "rng", "branch", "plugins"}, graph["core"]
    assert graph["rng"] <= {"errors"} and graph["plugins"] <= {"errors"}
    assert graph["branch"] == set()


_BY_ATTRIBUTE = """
import sys
import jaxrl_fdg as rl
assert "jax" not in sys.modules, "import jaxrl_fdg imported JAX"
assert rl.config.from_mapping and rl.core.algorithm.get and rl.envs.make and rl.run.checkpoint
assert rl.run.train is rl.train and rl.TrainConfig is rl.config.TrainConfig
try:
    rl.nothing_of_that_name
except AttributeError as e:
    assert "no attribute 'nothing_of_that_name'" in str(e)
else:
    raise SystemExit("an unknown name was found")
"""


def test_the_package_imports_no_jax_and_reaches_its_parts_by_attribute():
    # Its names load on first use; subpackages are reached as attributes as when it imported them.
    proc = subprocess.run([sys.executable, "-c", _BY_ATTRIBUTE], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr

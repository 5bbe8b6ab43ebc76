"""The library's parts import one another without a circle (docs/architecture.md draws them).

A part is a subpackage of ``jaxrl_fdg`` (``core``, ``policies``, ``config``, ``run``, ``cli``,
``tuning``, and ``envs``, ``fragments``, ``profiling``, which sit at the top of the repository
and install inside the namespace) or one of its top-level modules. Every import counts, those
inside functions included; those under ``if TYPE_CHECKING:`` do not, since they never run.
"""

import ast
import graphlib
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


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    package = _module(path)
    if path.name != "__init__.py":
        package = package[:-1]
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                names.add(".".join(base + ([node.module] if node.module else [])))
            else:
                names.add(node.module or "")
    return {name.split(".")[1] for name in names if name.startswith("jaxrl_fdg.")}


def part_graph() -> dict[str, set[str]]:
    """Each part and the other parts it imports."""
    graph: dict[str, set[str]] = {}
    for folder in SOURCES.values():
        for path in folder.rglob("*.py"):
            part = _part(path)
            graph.setdefault(part, set()).update(_imported(path) - {part})
    return graph


def test_the_parts_import_one_another_without_a_circle():
    graph = part_graph()
    assert {"core", "policies", "config", "run", "fragments"} <= set(graph)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        raise AssertionError(f"an import circle: {' -> '.join(error.args[1])}") from None


def test_placements_are_written_against_the_core_not_the_run_config():
    graph = part_graph()
    assert "config" not in graph["policies"] and "run" not in graph["policies"], graph["policies"]
    assert graph["core"] <= {"envs", "errors"}, graph["core"]

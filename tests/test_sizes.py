"""Sizes a reader holds in their head: no library function over 60 lines (from its ``def`` line
to its last, docstring included) and no library module over 450 lines. Benchmarks and tests
aside; the library is ``jaxrl_fdg/`` and the packages it installs from the top of the tree."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("jaxrl_fdg", "envs", "fragments", "profiling")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450


def library_files() -> list[Path]:
    return sorted(p for folder in LIBRARY for p in (ROOT / folder).rglob("*.py"))


def functions(tree: ast.Module) -> list[tuple[str, int]]:
    """``(qualified name, lines)`` of every function in ``tree``, methods and nested ones
    included; a decorator's lines are not the function's."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append((name, child.end_lineno - child.lineno + 1))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def oversized(paths: list[Path]) -> list[str]:
    """Every module over :data:`MAX_MODULE_LINES` lines and function over
    :data:`MAX_FUNCTION_LINES` among ``paths``, with its size."""
    found = []
    for path in paths:
        text = path.read_text()
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines (module, at most {MAX_MODULE_LINES})")
        for function, length in functions(ast.parse(text)):
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{name}::{function}: {length} lines (function, at most {MAX_FUNCTION_LINES})"
                )
    return found


def test_the_walk_finds_every_library_package():
    folders = {p.relative_to(ROOT).parts[0] for p in library_files()}
    assert folders == set(LIBRARY)
    assert ROOT / "jaxrl_fdg" / "run" / "runner.py" in library_files()


def test_functions_are_counted_from_def_to_last_line_nested_and_methods_included():
    tree = ast.parse(
        "@decorator\n"  # not counted
        "def f():\n"  # 1
        '    """Doc."""\n'  # 2
        "    def g():\n"  # 3: g is 2 lines
        "        pass\n"  # 4
        "    return g\n"  # 5: f is 5 lines
        "class C:\n"
        "    async def m(self):\n"  # m is 2 lines
        "        pass\n"
    )
    assert functions(tree) == [("f", 5), ("f.g", 2), ("C.m", 2)]


def test_an_oversized_module_and_function_are_named(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))  # def + 60 = 61 lines
    long = tmp_path / "long.py"
    long.write_text("def long():\n" + body + "\n" + "y = 0\n" * MAX_MODULE_LINES)
    short = tmp_path / "short.py"
    short.write_text("def short():\n" + "\n".join(body.splitlines()[1:]) + "\n")  # 60 lines
    assert oversized([long, short]) == [
        f"{long}: {1 + MAX_FUNCTION_LINES + MAX_MODULE_LINES} lines (module, at most 450)",
        f"{long}::long: 61 lines (function, at most 60)",
    ]


def test_no_library_module_or_function_is_too_long():
    found = oversized(library_files())
    assert not found, "too long to hold in one's head:\n  " + "\n  ".join(found)

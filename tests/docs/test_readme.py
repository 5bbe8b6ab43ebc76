"""The README holds: its set-up commands are CI's, its extras and links exist, its algorithm table
is what the code accepts, every flag it shows exists, and every command it shows runs (slow)."""

import re
import sys
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for ``docs_code``
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_gen"))

import docs_code  # noqa: E402
from docs_code import ROOT  # noqa: E402

README = ROOT / "README.md"
# Every page whose jaxrl-fdg commands are checked flag by flag.
DOCS = [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _text() -> str:
    return README.read_text()


def test_readme_is_a_short_guide():
    assert len(_text().splitlines()) <= 250


def test_set_up_commands_are_the_ones_ci_runs():
    text = _text()
    install_and_train = (
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/jaxrl-fdg train"
    )
    install_and_test = (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest'
    )
    assert install_and_train in text and install_and_test in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert '.ci-venv/bin/pip install -q -e ".[test]"' in ci
    assert re.search(r"^\.ci-venv/bin/python -m pytest$", ci, re.M), "CI runs the README's command"


def test_every_extra_named_in_the_docs_exists():
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    named = set()
    for page in DOCS:
        for group in re.findall(r'\.\[([a-z0-9_,]+)\]"', page.read_text()):
            named.update(group.split(","))
    table = re.findall(r"^\| `([a-z0-9_]+)`(?:, `([a-z0-9_]+)`)? \|", _text(), re.M)
    named.update(name for row in table for name in row if name and name in extras | named)
    assert named, "the README names extras"
    assert named <= extras, f"not in pyproject.toml: {sorted(named - extras)}"
    # The README's extras table lists every extra.
    listed = {name for row in table for name in row if name}
    assert extras <= listed, f"extras the README's table leaves out: {sorted(extras - listed)}"


def test_relative_links_point_at_files():
    for target in re.findall(r"\]\(([^)#:]+)\)", _text()):
        assert (ROOT / target).exists(), f"README links to a missing {target}"


def test_the_algorithm_table_is_what_the_code_accepts():
    import algorithm_pages

    rows = {}
    for line in _text().splitlines():
        cells = r" \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|"
        match = re.match(r"^\| `([a-z0-9][a-z0-9-]*)`" + cells, line)
        if match:
            name, _, spaces, memory, torso = (part.strip() for part in match.groups())
            rows[name] = (spaces, memory, torso)
    facts = {f.name: f for f in algorithm_pages.all_facts()}
    assert set(rows) == set(facts), "one row per registered algorithm"
    for name, (spaces, memory, torso) in rows.items():
        f = facts[name]
        assert spaces == ", ".join(f.action_spaces), name
        assert memory == (", ".join(f.memory) or "—"), name
        assert torso == (", ".join(f.torsos) or "—"), name


def _flags(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_text))


def test_every_flag_in_the_docs_exists(tmp_path, monkeypatch):
    """Each ``jaxrl-fdg`` command on a page names only flags its parser prints in ``--help``, read
    where the page's commands run (its files saved, ``examples/`` at hand)."""
    import cli_help

    helps: dict[tuple[str, ...], set[str]] = {}
    for i, page in enumerate(DOCS):
        folder = tmp_path / str(i)
        folder.mkdir()
        monkeypatch.chdir(docs_code.workspace(folder, page))
        for args in docs_code.jaxrl_fdg_commands(page):
            if not args:
                continue
            key = (args[0],)
            if args[0] == "train" and "--algo" in args:
                key = ("train", "--algo", args[args.index("--algo") + 1])
            # A reference (``--algo file.py:SPEC``) may name a file of this page's own.
            cached = (*key, str(page)) if ":" in key[-1] else key
            if cached not in helps:
                helps[cached] = _flags(cli_help.help_text(*key, "--help"))
            used = {a.split("=")[0] for a in args if a.startswith("--")}
            unknown = used - helps[cached]
            assert not unknown, f"{page.relative_to(ROOT)}: jaxrl-fdg {' '.join(args)}: {unknown}"


def test_documented_budgets_are_whole_iterations_within_a_percent():
    """Every ``jaxrl-fdg train`` a page shows with ``--total-steps`` runs the budget it gives,
    within the 1% a run rounds down without a warning: no page's command prints one."""
    from jaxrl_fdg.cli import common
    from jaxrl_fdg.cli import train as train_command
    from jaxrl_fdg.core import algorithm as algorithms
    from jaxrl_fdg.run import runner

    checked = 0
    for page in DOCS:
        for args in docs_code.jaxrl_fdg_commands(page):
            if args[:1] != ["train"] or "--total-steps" not in args or "--resume" in args:
                continue
            algo = args[args.index("--algo") + 1] if "--algo" in args else "ppo"
            env = args[args.index("--env") + 1] if "--env" in args else ""
            if ".py:" in algo + env or "--config" in args:  # a file of the page's own
                continue
            parsed = train_command.parser(algo).parse_args(args[1:])
            config = common.config_from(parsed, {}, skip=("config", "resume", "verbose"))
            config = config.with_defaults(algorithms.get(algo).defaults)
            runs = config.num_iterations * config.steps_per_iteration
            left_out = (config.total_steps - runs) / config.total_steps
            assert left_out <= runner.STEPS_LEFT_OUT_QUIETLY, f"{page.name}: {' '.join(args)}"
            checked += 1
    assert checked >= 10


def test_cheap_readme_commands_run_in_process(capsys):
    """``jaxrl-fdg list`` and ``jaxrl-fdg graph ppo`` as the README shows them; the training
    commands run in the slow tier."""
    from jaxrl_fdg import cli

    ran = 0
    for args in docs_code.jaxrl_fdg_commands(README):
        if args[:1] in (["list"], ["graph"]):
            assert cli.main(args) == 0, args
            ran += 1
    out = capsys.readouterr().out
    assert ran == 2 and "placements" in out and "compiled programs by fusion mode" in out


def test_the_guarantees_page_names_tests_that_exist():
    page = (ROOT / "docs" / "concepts" / "guarantees.md").read_text()
    current = None
    named = 0
    for file, test in re.findall(
        r"`(?:tests/[\w/]+/)?(test_\w+\.py)?::(test_\w+)(?:\[\w+\])?`", page
    ):
        current = file or current
        matches = list((ROOT / "tests").rglob(current))
        assert matches, f"no {current}"
        assert any(f"def {test}(" in m.read_text() for m in matches), f"{current}::{test}"
        named += 1
    assert named >= 20


@pytest.mark.slow
def test_every_readme_command_runs(tmp_path):
    """Every shell command of the README, in order, in one folder, at the tiny size; the set-up
    lines (virtual environments, pip) are the ones CI runs and are checked above."""
    docs_code.workspace(tmp_path, README)
    ran = 0
    for _, body in docs_code.blocks(README, "bash"):
        for argv in docs_code.commands(body):
            if Path(argv[0]).name != "jaxrl-fdg":
                continue
            proc = docs_code.run(argv, tmp_path)
            assert proc.returncode == 0, docs_code.explain(proc)
            assert "warning" not in proc.stderr, docs_code.explain(proc)  # none for a newcomer
            ran += 1
    assert ran >= 10


def test_excerpts_are_in_their_files():
    """A block marked ``excerpt="path"`` shows lines of that file, in its order."""
    for page in DOCS:
        for block in docs_code.fenced(page, "python", "toml", "bash"):
            if block.excerpt:
                missing = docs_code.missing_from_excerpt(block)
                assert not missing, f"{page.relative_to(ROOT)}: not in {block.excerpt}: {missing}"


@pytest.mark.slow
def test_the_readme_python_blocks_run(tmp_path):
    """Every Python block of the README that is not an excerpt, as a script, in order."""
    docs_code.workspace(tmp_path, README)
    ran = 0
    for block in docs_code.fenced(README, "python"):
        if block.excerpt:
            continue
        if block.file:
            proc = docs_code.run_script(docs_code.save(block, tmp_path), tmp_path)
        else:
            proc = docs_code.run_python(block.body, tmp_path)
        assert proc.returncode == 0, docs_code.explain(proc)
        ran += 1
    assert ran >= 1

"""Every code block of every tutorial runs, in order, at a tiny size (slow tier), and every page of
the docs shows only commands whose flags exist (``test_readme.py``)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for ``docs_code``

import docs_code  # noqa: E402
from docs_code import ROOT  # noqa: E402

TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))


def test_there_are_tutorials_with_code():
    assert [p.stem for p in TUTORIALS] == [
        "add-a-fragment",
        "compare",
        "dict-observations-and-masks",
        "experiments",
        "extend-a-built-in",
        "host-simulator",
        "multi-agent",
        "own-jax-env",
        "populations",
        "profile",
        "write-an-algorithm",
    ]
    for page in TUTORIALS:
        assert docs_code.blocks(page, "bash", "python"), page


@pytest.mark.slow
@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_every_block_of_a_tutorial_runs(page, tmp_path):
    """Shell blocks command by command and Python blocks as scripts, in the page's order, in one
    folder (:func:`docs_code.workspace`), so a block may use what an earlier one wrote; a file
    block is saved under its title there, then run. ``pip install`` lines are skipped (the test
    extra holds every package the tutorials use); excerpts are checked in ``test_readme.py``."""
    docs_code.workspace(tmp_path)
    ran = 0
    for block in docs_code.fenced(page, "bash", "python", "toml"):
        if block.excerpt:
            continue
        if block.language == "toml":
            if block.file:
                docs_code.save(block, tmp_path)
            continue
        if block.language == "python":
            if block.file:
                proc = docs_code.run_script(docs_code.save(block, tmp_path), tmp_path)
            else:
                proc = docs_code.run_python(block.body, tmp_path)
            assert proc.returncode == 0, docs_code.explain(proc)
            ran += 1
            continue
        for argv in docs_code.commands(block.body):
            if Path(argv[0]).name == "pip":
                continue
            proc = docs_code.run(argv, tmp_path)
            assert proc.returncode == 0, docs_code.explain(proc)
            ran += 1
    assert ran >= 3

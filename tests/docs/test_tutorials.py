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
    assert [p.stem for p in TUTORIALS] == ["compare", "host-simulator", "profile"]
    for page in TUTORIALS:
        assert docs_code.blocks(page, "bash", "python"), page


@pytest.mark.slow
@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_every_block_of_a_tutorial_runs(page, tmp_path):
    """Shell blocks command by command and Python blocks as scripts, in the page's order, in one
    folder, so a block may read what an earlier one wrote. ``pip install`` lines are skipped (the
    test extra holds every package the tutorials use)."""
    ran = 0
    for language, body in docs_code.blocks(page, "bash", "python"):
        if language == "python":
            proc = docs_code.run_python(body, tmp_path)
            assert proc.returncode == 0, docs_code.explain(proc)
            ran += 1
            continue
        for argv in docs_code.commands(body):
            if Path(argv[0]).name == "pip":
                continue
            proc = docs_code.run(argv, tmp_path)
            assert proc.returncode == 0, docs_code.explain(proc)
            ran += 1
    assert ran >= 3

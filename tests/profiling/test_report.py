"""The summary and its table: programs compiled at the same time, and why their seconds overlap."""

import json
import re

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.profiling import ScopeStats, Timings, summarize, summary_table
from jaxrl_fdg.run.metrics import format_summary


def _issue_timings() -> Timings:
    """The figures a user met: init 9.89 s and scan 23.56 s compiled on worker threads while the
    run waited 24.31 s, and an evaluation program compiled after them, alone, in 1.00 s."""
    timings = Timings("host")
    timings.scopes["compile"] = ScopeStats(
        calls=1, wall=24.31, exclusive=24.31, children={"compile:init": 1, "compile:scan": 1}
    )
    timings.scopes["compile:init"] = ScopeStats(calls=1, wall=9.89, exclusive=9.89)
    timings.scopes["compile:scan"] = ScopeStats(calls=1, wall=23.56, exclusive=23.56)
    timings.scopes["compile:evaluate"] = ScopeStats(calls=1, wall=1.00, exclusive=1.00)
    timings.scopes["scan"] = ScopeStats(calls=3, wall=0.5, exclusive=0.5)
    return timings


def test_programs_compiled_together_are_marked_and_the_sums_add_up():
    summary = summarize(_issue_timings(), 10.0)
    assert summary["compiled_together"] == ["init", "scan"]
    assert summary["programs"]["evaluate"]["together"] is False
    # The headline's compile: the wall waited for the two (24.31) + the one compiled alone (1.00).
    assert summary["compile_s"] == pytest.approx(25.31)
    assert summary["compile_together_s"] == pytest.approx(24.31)
    assert summary["compile_one_at_a_time_s"] == pytest.approx(1.00)
    # The column: every program's own seconds, 9.89 + 23.56 + 1.00 = 34.45 > 25.31.
    assert summary["compile_programs_s"] == pytest.approx(34.45)


def test_table_says_why_the_compile_column_exceeds_the_headline():
    text = summary_table(summarize(_issue_timings(), 10.0))
    assert re.search(r"init ∥\s*│\s*0 │\s*9\.89", text)
    assert re.search(r"scan ∥\s*│\s*3 │\s*23\.56", text)
    assert re.search(r"evaluate\s*│", text)  # compiled alone: no mark
    note = " ".join(text.split())  # the caption wraps to the table's width
    assert "∥ compiled at the same time, on worker threads: init ∥ + scan ∥ = 33.45 s" in note
    assert "the run waited 24.31 s for them" in note
    assert "the compile column sums to 34.45 s, more than the headline's 25.31 s" in note
    assert "= 24.31 s waited for them + 1.00 s of programs compiled one at a time" in note


def test_without_programs_compiled_together_there_is_no_note():
    timings = Timings("host")
    timings.scopes["compile:scan"] = ScopeStats(calls=1, wall=2.0, exclusive=2.0)
    summary = summarize(timings, 1.0)
    assert summary["compiled_together"] == [] and summary["compile_s"] == pytest.approx(2.0)
    assert "∥" not in summary_table(summary)


def test_a_run_prints_and_writes_figures_that_add_up(tiny, tmp_path):
    result = rl.train(tiny.replace(out=str(tmp_path), run_name="r"))
    summary = result.summary
    timing = summary["timing"]
    assert {"init", "scan"} <= set(timing["compiled_together"])
    assert timing["compile_s"] == pytest.approx(
        timing["compile_together_s"] + timing["compile_one_at_a_time_s"]
    )
    rows = timing["programs"].values()
    assert timing["compile_programs_s"] == pytest.approx(sum(r["compile_s"] for r in rows))
    text = format_summary(summary)
    headline = re.search(r"\(\+(\d+\.\d\d) s compile\)", text)[1]
    note = " ".join(text.split())
    assert f"the headline's {headline} s compile" in note
    assert f"sums to {timing['compile_programs_s']:.2f} s" in note
    written = json.loads((tmp_path / "r" / "profile.json").read_text())
    assert written["compiled_together"] == timing["compiled_together"]
    assert written["compile_programs_s"] == pytest.approx(timing["compile_programs_s"])

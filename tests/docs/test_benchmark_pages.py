"""The benchmark pages show every results file, each table stamped with what its file recorded."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pages  # noqa: E402


def test_every_results_file_is_on_a_page():
    files = {p.name for p in pages.RESULTS.glob("*.json")}
    assert files and files <= pages.covered(), sorted(files - pages.covered())


def test_every_page_renders_with_a_stamp_per_file():
    for page in pages.pages():
        text = pages.render(page)
        for section in page.sections:
            assert section.files, (page.slug, section.title)
            for name in section.files:
                assert f"- `benchmarks/results/{name}` · date: " in text, name
        assert "| ---" in text.replace("|---", "| ---") or "|---" in text, page.slug


def test_a_stamp_says_what_was_not_recorded():
    stamp = pages.stamp("x.json", {"results": {}})
    assert stamp.count(pages.NOT_RECORDED) == 4, stamp  # date, commit, device, load


def test_a_stamp_shows_what_write_report_records(tmp_path):
    from jaxrl_fdg.profiling import write_report

    out = tmp_path / "r.json"
    write_report(str(out), "x", {}, {})
    report = json.loads(out.read_text())
    recorded = report["recorded"]
    assert recorded["date"].endswith("Z") and len(recorded["loadavg"]) == 3
    # The commit is the measured code's, though the file went to a folder outside the checkout.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode == 0:
        assert recorded["commit"] == head.stdout.strip()
    stamp = pages.stamp("r.json", {**report, "recorded": {**recorded, "commit": "abc123"}})
    assert f"date: {recorded['date']}" in stamp and "commit: abc123" in stamp
    assert "device: cpu" in stamp and "load: 1-min load average" in stamp
    assert pages.NOT_RECORDED not in stamp


def test_every_results_file_says_when_and_from_which_commit():
    # Files measured before the benchmarks stamped themselves carry the commit that wrote them.
    for path in sorted(pages.RESULTS.glob("*.json")):
        report = json.loads(path.read_text())
        recorded = report.get("recorded", {})
        assert recorded.get("date") and recorded.get("commit"), path.name
        stamp = pages.stamp(path.name, report)
        if recorded.get("source"):
            assert "(committed; measured before)" in stamp, path.name


def test_images_the_pages_show_exist():
    shown = {
        line.split("](img/", 1)[1].split(")", 1)[0]
        for page in pages.pages()
        for line in pages.render(page).splitlines()
        if "](img/" in line
    }
    assert shown and shown <= {pages.image_name(p) for p in pages.images()}

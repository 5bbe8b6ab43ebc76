"""mkdocs hooks: the pages drawn from the code and from ``benchmarks/results`` at build time.

- ``algorithms/*.md``: one page per registered algorithm and an index (``algorithm_pages.py``);
- ``benchmarks/*.md``: the benchmark pages and the images they show (``benchmarks/pages.py``,
  ``benchmarks/page_tables.py``);
- ``<!-- cli: COMMAND -->`` in a page: what ``jaxrl-fdg COMMAND --help`` prints (``cli_help.py``);
- ``<!-- output: ARGS -->`` in a page: what ``jaxrl-fdg ARGS`` prints, for a quick command
  (``graph ppo``), run in the build;
- ``build/docs-api/jaxrl_fdg``: the package laid out as it installs (``envs/`` as
  ``jaxrl_fdg/envs`` and so on), in links, for the API reference's static analysis.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "docs" / "_gen", ROOT / "benchmarks"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import algorithm_pages  # noqa: E402
import cli_help  # noqa: E402
import pages  # noqa: E402

CLI_MARKER = re.compile(r"<!-- cli: ?([a-z-]*) -->")
OUTPUT_MARKER = re.compile(r"<!-- output: ([^>]+?) -->")
API_LAYOUT = ROOT / "build" / "docs-api" / "jaxrl_fdg"
NAMESPACED = ("envs", "fragments", "profiling")  # top-level folders installed under jaxrl_fdg


def on_startup(command, dirty):
    """Lay ``jaxrl_fdg`` out as it installs, in symbolic links, for mkdocstrings to read (before
    any plugin reads its configuration, which drops search paths that do not exist)."""
    if API_LAYOUT.exists():
        shutil.rmtree(API_LAYOUT)
    API_LAYOUT.mkdir(parents=True)
    for entry in (ROOT / "jaxrl_fdg").iterdir():
        if entry.name != "__pycache__":
            (API_LAYOUT / entry.name).symlink_to(entry)
    for name in NAMESPACED:
        (API_LAYOUT / name).symlink_to(ROOT / name)


def on_files(files, config):
    def add(uri: str, content: str) -> None:
        files.append(File.generated(config, uri, content=content))

    add("algorithms/index.md", algorithm_pages.index())
    for facts in algorithm_pages.all_facts():
        add(f"algorithms/{facts.name}.md", algorithm_pages.page(facts))
    add("benchmarks/index.md", pages.index())
    for page in pages.pages():
        add(f"benchmarks/{page.slug}.md", pages.render(page))
    for image in pages.images():
        files.append(
            File.generated(
                config, f"benchmarks/img/{pages.image_name(image)}", abs_src_path=str(image)
            )
        )
    return files


def on_page_markdown(markdown, page, config, files):
    markdown = CLI_MARKER.sub(lambda m: cli_help.section(m.group(1)), markdown)
    return OUTPUT_MARKER.sub(lambda m: cli_help.output(m.group(1)), markdown)

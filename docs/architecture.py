"""Draw docs/architecture.png: the packages and what imports what (left), the schedule tree of
one iteration and where each fusion mode cuts it into programs (right).

    python docs/architecture.py
"""

import ast
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).with_name("architecture.png")

ROOT = Path(__file__).resolve().parents[1]
# The layered packages, top (imports the others) to bottom, each with the folder it lives in.
LAYERS = [
    ("cli/", "jaxrl_fdg/cli"),
    ("experiment/", "jaxrl_fdg/experiment"),
    ("run/", "jaxrl_fdg/run"),
    ("config/", "jaxrl_fdg/config"),
    ("tuning/", "jaxrl_fdg/tuning"),
    ("policies/", "jaxrl_fdg/policies"),
    ("core/", "jaxrl_fdg/core"),
]
# Installed under jaxrl_fdg from the top of the repository.
SIDE_FOLDERS = [("envs/", "envs"), ("fragments/", "fragments"), ("profiling/", "profiling")]


def modules(folder: str) -> list[str]:
    """The modules of a package folder, as the picture names them (``__init__`` left out)."""
    names = sorted(p.stem for p in (ROOT / folder).glob("*.py") if p.stem != "__init__")
    subpackages = sorted(p.parent.name + "/" for p in (ROOT / folder).glob("*/__init__.py"))
    return names + subpackages


def wrapped(names: list[str], width: int = 70) -> str:
    """``names`` joined with `` · ``, in lines of at most ``width`` characters."""
    lines: list[str] = []
    for name in names:
        if lines and len(lines[-1]) + 3 + len(name) <= width:
            lines[-1] += f" · {name}"
        else:
            lines.append(name)
    return "\n".join(lines)


def imports(folder: str) -> set[str]:
    """The layered packages the modules of ``folder`` import (``jaxrl_fdg.<name>``)."""
    found = set()
    for path in (ROOT / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[0] == "jaxrl_fdg" and len(parts) > 1:
                    found.add(parts[1])
    return found


PACKAGES = [
    (name, wrapped(modules(folder)), 0.5, len(LAYERS) - i)
    for i, (name, folder) in enumerate(LAYERS)
]
SIDE = [
    (name, wrapped(modules(folder), 38), 1.45, y)
    for (name, folder), y in zip(SIDE_FOLDERS, (1.4, 3.75, 5.6), strict=True)
]
IMPORTS = [  # (from, to) between layers, as the modules import them
    (a, b) for a, folder in LAYERS for b, _ in LAYERS if a != b and b.rstrip("/") in imports(folder)
]


def _box(ax, x, y, w, h, title, body, color):
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02", fc=color, ec="#333", lw=1
        )
    )
    top = y + h / 2
    ax.text(x, top - 0.14, title, ha="center", va="center", fontsize=10, weight="bold")
    ax.text(x, top - 0.27, body, ha="center", va="top", fontsize=6.2, color="#222")


def _arrow(ax, a, b, text="", color="#333", rad=0.0, at=None):
    ax.add_patch(
        FancyArrowPatch(
            a,
            b,
            arrowstyle="-|>",
            mutation_scale=12,
            color=color,
            lw=1.2,
            connectionstyle=f"arc3,rad={rad}",
        )
    )
    if text:
        mx, my = at or ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
        ax.text(
            mx,
            my,
            text,
            fontsize=7.5,
            ha="center",
            va="center",
            bbox=dict(fc="white", ec="none", pad=0.5),
        )


def packages(ax):
    ax.set_title("packages, their modules and imports, read from the tree", fontsize=11)
    where = {}
    for name, body, x, y in PACKAGES:
        _box(ax, x, y, 1.1, 0.8, name, body, "#dbe8f5")
        where[name] = (x, y)
    for name, body, x, y in SIDE:  # as tall as its list of modules
        _box(ax, x, y, 0.62, max(1.1, 0.5 + 0.11 * body.count("\n")), name, body, "#eef2e4")
    below = {
        a: sorted((b for a2, b in IMPORTS if a2 == a), key=lambda b: -where[b][1])
        for a, _ in LAYERS
    }
    for a, targets in below.items():
        (xa, ya) = where[a]
        for b in targets:
            (xb, yb) = where[b]
            if yb > ya:  # an import upward: the layering is broken, and the picture says so
                _arrow(ax, (xa + 0.35, ya + 0.41), (xb + 0.35, yb - 0.41), color="#c33")
            elif ya - yb == 1:
                _arrow(ax, (xa, ya - 0.41), (xb, yb + 0.41))
        skipped = [b.rstrip("/") for b in targets if ya - where[b][1] > 1]
        if skipped:
            ax.text(
                xa - 0.6,
                ya - 0.3,
                "also → " + ", ".join(skipped),
                fontsize=6.5,
                ha="left",
                color="#555",
            )
    ax.text(
        1.45,
        -0.1,
        "fragments use core's types; core wraps envs'\nenvironments (envs import nothing of it);\n"
        "the core imports no backend",
        ha="center",
        fontsize=7.5,
        color="#555",
    )
    ax.set_xlim(-0.15, 1.85)
    ax.set_ylim(-0.4, len(LAYERS) + 0.6)
    ax.axis("off")


# The schedule tree of one iteration: (label, depth, cadence colour) in drawing order.
TREE = [
    ("iteration", 0, "#dddddd"),
    ("rollout × T steps (every step)", 1, "#f4d9c6"),
    ("actor", 2, "#f4d9c6"),
    ("env", 2, "#f4d9c6"),
    ("after the rollout", 1, "#dddddd"),
    ("every iteration: replay store, on-policy learner", 2, "#d9c6f4"),
    ("k rounds when warmed up: sample → learner → update", 2, "#c6f4d9"),
    ("every n iterations: auxiliary phase, evaluator", 2, "#f4f0c6"),
]
# Where each fusion mode cuts the tree into compiled programs: (mode, rows it spans, text).
CUTS = [
    ("step", (2, 3), "one per call"),
    ("step", (4, 7), "learner"),
    ("fragment", (1, 3), "rollout"),
    ("fragment", (4, 7), "learner"),
    ("iteration", (0, 7), "the whole iteration"),
    ("scan", (0, 7), "× chunk iterations"),
]


def dataflow(ax):
    ax.set_title(
        "one iteration: the schedule tree, and where each fusion mode cuts it", fontsize=11
    )
    rows = len(TREE)
    y = {i: rows - i for i in range(rows)}
    for i, (label, depth, color) in enumerate(TREE):
        x = 0.02 + 0.07 * depth
        ax.add_patch(
            FancyBboxPatch(
                (x, y[i] - 0.32),
                0.62 - 0.07 * depth,
                0.64,
                boxstyle="round,pad=0.02",
                fc=color,
                ec="#666",
                lw=0.8,
            )
        )
        ax.text(x + 0.015, y[i], label, fontsize=8, va="center")
        if depth:
            parent = max(j for j in range(i) if TREE[j][1] == depth - 1)
            px = 0.02 + 0.07 * (depth - 1) + 0.03
            ax.plot([px, px, x], [y[parent] - 0.32, y[i], y[i]], color="#999", lw=0.8)
    columns = {"step": 0.70, "fragment": 0.79, "iteration": 0.88, "scan": 0.97}
    for mode, (first, last), text in CUTS:
        x = columns[mode]
        top, bottom = y[first] + 0.35, y[last] - 0.35
        ax.add_patch(
            FancyBboxPatch(
                (x, bottom),
                0.05,
                top - bottom,
                boxstyle="round,pad=0.005",
                fc="#dbe8f5",
                ec="#336",
                lw=0.8,
            )
        )
        ax.text(
            x + 0.025, (top + bottom) / 2, text, rotation=90, fontsize=6.5, ha="center", va="center"
        )
    for mode, x in columns.items():
        ax.text(x + 0.025, rows + 0.55, mode, fontsize=7.5, ha="center", weight="bold")
    ax.text(
        0.5,
        -0.05,
        "a placement maps or splits the tree (lanes: vmap; shards: shard_map; actor_learner:\n"
        "the rollout on one device, the rest on another; host_env: the rollout in two halves)",
        ha="center",
        fontsize=7.5,
        color="#555",
    )
    ax.set_xlim(0, 1.05)
    ax.set_ylim(-0.4, rows + 1)
    ax.axis("off")


def main() -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(16, 8), width_ratios=(1.3, 1))
    packages(left)
    dataflow(right)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print(OUT)


if __name__ == "__main__":
    main()

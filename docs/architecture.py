"""Draw docs/architecture.png: the packages and what imports what (left), the data flow of one
iteration as the graph schedules it (right).

    python docs/architecture.py
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).with_name("architecture.png")

# (name, what it holds, x, y) for the package panel; y grows upward.
PACKAGES = [
    ("cli · plots", "jaxrl-fdg train / evaluate / list / graph / profile / plot", 0.5, 5.0),
    ("run/", "runner · session · checkpoint · run folder · evaluation · metrics", 0.5, 4.0),
    ("config/", "schema · files · sweeps (lanes once) · resolve", 0.5, 3.0),
    (
        "policies/",
        "fusion plans · Placement registry: single, data_parallel,\n"
        "actor_learner, host_env · replication (seeds, sweeps)",
        0.5,
        2.0,
    ),
    ("core/", "fragment · graph + schedule · algorithm · loop · protocol", 0.5, 1.0),
]
SIDE = [
    ("envs/", "Environment, registry,\nadapters (make parses prefixes)", 1.45, 1.0),
    ("fragments/", "networks, losses,\nPPO A2C DQN SAC TD3 DDPG, replay", 1.45, 2.2),
    ("profiling/", "scopes, timers,\ntrace attribution, reports", 1.45, 3.4),
]
IMPORTS = [  # (from, to): each package imports only those below it
    ("cli · plots", "run/"),
    ("run/", "config/"),
    ("config/", "policies/"),
    ("policies/", "core/"),
]


def _box(ax, x, y, w, h, title, body, color):
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02", fc=color, ec="#333", lw=1
        )
    )
    ax.text(x, y + h * 0.18, title, ha="center", va="center", fontsize=11, weight="bold")
    ax.text(x, y - h * 0.18, body, ha="center", va="center", fontsize=7.5, color="#222")


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
    ax.set_title("packages: each imports only those below it", fontsize=11)
    where = {}
    for name, body, x, y in PACKAGES:
        _box(ax, x, y, 1.1, 0.7, name, body, "#dbe8f5")
        where[name] = (x, y)
    for name, body, x, y in SIDE:
        _box(ax, x, y, 0.62, 0.8, name, body, "#eef2e4")
    for a, b in IMPORTS:
        (xa, ya), (xb, yb) = where[a], where[b]
        _arrow(ax, (xa, ya - 0.36), (xb, yb + 0.36))
    _arrow(ax, (1.14, 2.2), (1.06, 1.3), color="#7a9a4a")
    _arrow(ax, (1.14, 1.0), (1.06, 1.0), color="#7a9a4a")
    ax.text(
        1.45,
        0.35,
        "fragments and envs use core's types;\nthe core imports no backend",
        ha="center",
        fontsize=7.5,
        color="#555",
    )
    ax.set_xlim(-0.15, 1.85)
    ax.set_ylim(0.2, 5.5)
    ax.axis("off")


def dataflow(ax):
    ax.set_title("one iteration, as the graph schedules it", fontsize=11)
    ax.add_patch(
        FancyBboxPatch(
            (0.02, 2.45), 0.96, 1.45, boxstyle="round,pad=0.02", fc="#f7f7f7", ec="#999", ls="--"
        )
    )
    ax.text(0.05, 3.8, "step phase × T (one env step each)", fontsize=8.5, color="#555")
    ax.add_patch(
        FancyBboxPatch(
            (0.02, 0.15), 0.96, 2.1, boxstyle="round,pad=0.02", fc="#f7f7f7", ec="#999", ls="--"
        )
    )
    ax.text(0.6, 2.15, "learn phase (once per iteration)", fontsize=8.5, color="#555")
    nodes = {
        "actor": (0.25, 3.1, "#f4d9c6"),
        "env": (0.75, 3.1, "#f4d9c6"),
        "transform\n(optional)": (0.2, 1.6, "#eee"),
        "learner": (0.75, 1.6, "#d9c6f4"),
        "replay": (0.2, 0.6, "#c6f4d9"),
    }
    for name, (x, y, color) in nodes.items():
        _box(ax, x, y, 0.3, 0.45, name, "", color)
    _arrow(ax, (0.4, 3.2), (0.6, 3.2), "action")
    _arrow(ax, (0.6, 2.95), (0.4, 2.95), "observation (published)", at=(0.5, 2.78))
    _arrow(ax, (0.5, 2.5), (0.25, 1.85), "trajectory [T, B]")
    _arrow(ax, (0.35, 1.6), (0.6, 1.6), "trajectory")
    _arrow(ax, (0.78, 1.85), (0.3, 2.86), "params (published)", rad=0.25, at=(0.8, 2.5))
    _arrow(ax, (0.35, 0.65), (0.62, 1.38), "batch (sample)", rad=-0.2, at=(0.4, 1.05))
    _arrow(ax, (0.7, 1.37), (0.36, 0.52), "td_error (update)", rad=-0.2, at=(0.72, 0.8))
    ax.text(
        0.5,
        -0.05,
        "a placement wraps this loop (shards, lanes, two devices, halves);\n"
        "a fusion plan decides what is compiled together",
        ha="center",
        fontsize=7.5,
        color="#555",
    )
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.2, 4.0)
    ax.axis("off")


def main() -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 6.2), width_ratios=(1.15, 1))
    packages(left)
    dataflow(right)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print(OUT)


if __name__ == "__main__":
    main()

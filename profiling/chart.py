"""A stacked-bar PNG per program: host (dispatch), device, compile, transfer. matplotlib is
imported when a chart is drawn, never when the library is imported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_PARTS = (("dispatch_s", "host (dispatch)"), ("device_s", "device"), ("compile_s", "compile"))


def stacked_bars(summary: dict[str, Any], path: str | Path, title: str = "") -> Path:
    """Draw one bar per program (plus the host boundaries) and save it to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["programs"])
    rows = [summary["programs"][n] for n in names]
    names.append("boundaries")
    rows.append(
        {
            "dispatch_s": summary["host_bookkeeping_s"],
            "device_s": summary["device_wait_s"] - sum(r["device_s"] for r in rows),
            "compile_s": 0.0,
            "transfer_s": summary["d2h_s"],
        }
    )
    scoped = summary.get("device_by_scope")
    fig, axes = plt.subplots(1, 2 if scoped else 1, figsize=(11 if scoped else 7, 4))
    ax = axes[0] if scoped else axes
    bottom = [0.0] * len(names)
    for key, label in (*_PARTS, ("transfer_s", "transfer (device→host)")):
        values = [r.get(key, 0.0) for r in rows]
        ax.bar(names, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("seconds")
    ax.set_title(f"{title} — by program ({summary['mode']})")
    ax.legend(fontsize=8)
    ax.tick_params(axis="x", rotation=30)
    if scoped:
        device = scoped["device_exclusive_s"]
        axes[1].bar(list(device), [v * 1e3 for v in device.values()], color="tab:orange")
        axes[1].set_ylabel("device ms in traced window")
        axes[1].set_title("device time by fragment (trace)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

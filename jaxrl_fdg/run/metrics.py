"""Metric rows and run summaries: what ``metrics.jsonl`` and ``summary.json`` hold."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxrl_fdg.core.loop import INFO_SUM, RUNS
from jaxrl_fdg.core.names import (
    EPISODE_LENGTH,
    EPISODE_LENGTH_SUM,
    EPISODE_RETURN,
    EPISODE_RETURN_SUM,
    EPISODES,
)
from jaxrl_fdg.profiling import summary_table
from jaxrl_fdg.tuning import LINEAGE_PREFIXES

EPISODE_KEYS = (EPISODES, EPISODE_RETURN_SUM, EPISODE_LENGTH_SUM)
WALL_CLOCK = ("wall_s", "steps_per_s")  # a row's columns that the machine's speed decides


def length(metrics: dict[str, np.ndarray]) -> int:
    return len(next(iter(metrics.values())))


def row(metrics, iterations, config, wall, window_wall) -> dict[str, Any]:
    """One ``metrics.jsonl`` row for a chunk of iterations: counters, episode statistics and
    the mean of every other metric over the chunk. A population's lineage (``pbt/...``,
    ``halving/...``) is its value after the chunk's last iteration, in each lane's row only.

    A fragment of a periodic node reports ``<fragment>/runs`` (1 where it ran): its row holds
    the number of runs in the chunk, and its other metrics ``<fragment>/...`` are means over
    the iterations that ran (``None`` if none did)."""
    n = length(metrics)
    out: dict[str, Any] = {
        "iteration": iterations,
        "step": iterations * config.steps_per_iteration,
        "wall_s": round(wall, 4),
        "steps_per_s": n * config.steps_per_iteration / max(window_wall, 1e-9),
    }
    out.update(_episode_stats(metrics))
    suffix = f"/{RUNS}"
    ran = {k[: -len(suffix)]: np.asarray(v) > 0 for k, v in metrics.items() if k.endswith(suffix)}
    for key, values in metrics.items():
        fragment = key.split("/")[0] if "/" in key else None
        if key in EPISODE_KEYS:
            continue
        if key.startswith(INFO_SUM):  # an env info key: its mean over the ended episodes
            episodes = out[EPISODES]
            total = float(np.sum(values))
            out[key[len(INFO_SUM) :]] = total / episodes if episodes else None
            continue
        if key.startswith(LINEAGE_PREFIXES):  # a lane's state after the chunk; no mean over lanes
            if np.ndim(values) == 1:
                out[key] = float(np.asarray(values)[-1])
            continue
        if key.endswith(suffix):
            out[key] = int(np.sum(ran[fragment]))
        elif fragment in ran:
            mask = ran[fragment]
            out[key] = float(np.mean(np.asarray(values)[mask])) if mask.any() else None
        else:
            out[key] = float(np.mean(values))
    return out


def _episode_stats(metrics: dict[str, np.ndarray]) -> dict[str, Any]:
    episodes = float(np.sum(metrics.get(EPISODES, 0.0)))
    stats: dict[str, Any] = {
        "episodes": int(episodes),
        "episode_return": None,
        "episode_length": None,
    }
    if episodes > 0 and EPISODE_RETURN_SUM in metrics:
        stats[EPISODE_RETURN] = float(np.sum(metrics[EPISODE_RETURN_SUM]) / episodes)
        stats[EPISODE_LENGTH] = float(np.sum(metrics[EPISODE_LENGTH_SUM]) / episodes)
    return stats


def concat(history: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if not history:
        return {}
    return {k: np.concatenate([h[k] for h in history]) for k in history[0]}


def summary(
    config, status, rows, timing, elapsed_before: float = 0.0, iterations: int | None = None
) -> dict[str, Any]:
    """What ``summary.json`` holds. ``elapsed_before``: run seconds of the earlier segments of a
    resumed run (up to its checkpoint), so run time and steps/s cover the whole run; the
    ``timing`` table is this segment's. ``iterations``: those the run's state has done (default:
    the last row's), which a resume whose rows were lost still counts from its checkpoint."""
    if iterations is None:
        iterations = rows[-1]["iteration"] if rows else 0
    steps = iterations * config.steps_per_iteration
    run_s = elapsed_before + timing["run_s"]
    final = next(
        (r["episode_return"] for r in reversed(rows) if r["episode_return"] is not None), None
    )
    return {
        "status": status,
        "algo": config.algo,
        "env": config.env,
        "fusion": config.fusion,
        "seed": config.seed,
        "iterations": iterations,
        "env_steps": steps,
        "final_return": final,
        "steps_per_s": steps / run_s if run_s > 0 else None,
        "compile_s": timing["compile_s"],
        "run_s": run_s,
        "segment_run_s": timing["run_s"],
        "timing": timing,
    }


def format_summary(summary: dict[str, Any], detail: bool = True) -> str:
    """The summary as a person reads it: how the run ended, its env steps, run and compile
    seconds (and whether the programs came from the executable cache), final return and speed;
    with ``detail``, the timing table below (per program, the host's shares, the device's
    scopes and, where measured, each program's bound)."""
    final = summary["final_return"]
    cached = summary.get("executables") == "loaded"
    lines = [
        f"{summary['status']}: {summary['env_steps']:,} env steps in {summary['run_s']:.2f} s "
        f"(+{summary['compile_s']:.2f} s compile{', from the executable cache' if cached else ''})",
        f"final return {'—' if final is None else f'{final:.1f}'}   "
        f"{(summary['steps_per_s'] or 0):,.0f} env-steps/s",
    ]
    if detail:
        lines.append(summary_table(summary["timing"]).rstrip())
    return "\n".join(lines)

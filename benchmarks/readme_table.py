"""Rewrite the README's fusion-mode table from ``results/fusion_modes*.json``.

python benchmarks/readme_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
START, END = "<!-- fusion-table -->", "<!-- /fusion-table -->"

WHAT = {
    "handwritten": "the whole run, written by hand",
    "scan": "up to `log_every` iterations per call",
    "iteration": "rollout + update, one call per iteration",
    "fragment": "rollout scan; update; host loop between",
    "step": "each policy call, each env step; update",
    "eager": "nothing (`jax.disable_jit`)",
}


def _fmt(value, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def table(all_cores: dict, one_core: dict) -> str:
    cores = all_cores["machine"].get("cpus_used", all_cores["machine"]["cpu_count"])
    lines = [
        f"| mode | what is compiled together | compile s | run s ({cores} cores) "
        f"| env-steps/s ({cores} cores) | env-steps/s (1 core) | final return |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for mode, what in WHAT.items():
        a, b = all_cores["results"][mode], one_core["results"][mode]
        name = mode if mode == "handwritten" else f"`{mode}`" + (" (default)" * (mode == "scan"))
        note = " ¹" if "measured_iterations" in a else ""
        lines.append(
            f"| {name} | {what} | {_fmt(a['compile_s'], '.2f')} | {a['run_s']:.2f}{note} "
            f"| {a['steps_per_s']:,.0f} | {b['steps_per_s']:,.0f} "
            f"| {_fmt(a['final_return'], '.0f')} |"
        )
    eager_iterations = all_cores["results"]["eager"]["measured_iterations"]
    r, r1 = all_cores["ratios"], one_core["ratios"]
    lines += [
        "",
        f"¹ `eager` is timed over {eager_iterations} iterations after one warm-up iteration; "
        "its per-iteration cost is flat.",
        "",
        f"| ratio | {cores} cores | 1 core | target |",
        "|---|---:|---:|---:|",
        f"| `scan` / handwritten | {r['scan_vs_handwritten']:.3f} "
        f"| {r1['scan_vs_handwritten']:.3f} | ≥ 0.95 |",
        f"| `scan` / `step` | {r['scan_vs_step']:.1f}× | {r1['scan_vs_step']:.1f}× | ≥ 20× |",
        f"| `scan` / `eager` | {r['scan_vs_eager']:,.0f}× | {r1['scan_vs_eager']:,.0f}× | |",
    ]
    return "\n".join(lines)


def main() -> None:
    all_cores = json.loads((RESULTS / "fusion_modes.json").read_text())
    one_core = json.loads((RESULTS / "fusion_modes_1cpu.json").read_text())
    readme = ROOT / "README.md"
    text = readme.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    body = table(all_cores, one_core)
    # Keep the prose that follows the generated tables (it sits before the end marker).
    prose = rest.split(END, 1)[0].split("\n\n`scan` matches", 1)
    after = "\n\n`scan` matches" + prose[1] if len(prose) == 2 else "\n"
    readme.write_text(f"{head}{START}\n\n{body}{after.rstrip()}\n\n{END}{tail}")
    print(f"updated {readme}")


if __name__ == "__main__":
    main()

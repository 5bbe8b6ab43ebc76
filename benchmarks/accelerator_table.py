"""The accelerator tables, from a report written by ``benchmarks/accelerator.py``.

    python benchmarks/accelerator_table.py benchmarks/results/accelerator-cpu.json

prints them as Markdown; the docs site's benchmark pages draw them from every
``results/accelerator-*.json`` the same way (``benchmarks/pages.py``).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A section's progress lines ("round 1: ppo scan ..."), left out of a stopped section's tail.
_PROGRESS = re.compile(r"^round \d+: \S+ \S+ \.\.\.$")


def _rate(value: float | None) -> str:
    """``20.8M``, ``176k``, ``70``."""
    if value is None:
        return "—"
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    return f"{value / 1e3:.0f}k" if value >= 1e4 else f"{value:,.0f}"


def _num(value: float | None, spec: str = ".3g") -> str:
    return "—" if value is None else format(value, spec)


def _report(report: dict, section: str) -> dict | None:
    entry = report["results"].get(section)
    return entry.get("report") if entry else None


def fusion_line(r: dict) -> str:
    res, ratios = r["results"], r["ratios"]
    parts = [f"`scan` {_rate(res['scan']['steps_per_s'])} env-steps/s"]
    parts.append(f"{ratios['scan_vs_handwritten']:.2f} × handwritten")
    if "scan_vs_step" in ratios:
        parts.append(f"{ratios['scan_vs_step']:.1f} × `step`")
    if "scan_vs_eager" in ratios:
        parts.append(f"{ratios['scan_vs_eager']:,.0f} × `eager`")
    return ", ".join(parts)


def envs_line(r: dict) -> str:
    cells = []
    for env, rows in r["results"].items():
        largest = max(rows, key=int)
        cells.append(f"{env} at {int(largest):,} envs: {_rate(rows[largest]['ours'])}/s")
    return "; ".join(cells)


def seeds_line(r: dict) -> str:
    cells = []
    for algo, series in sorted(r["results"]["seeds"].items(), reverse=True):
        points = ", ".join(
            f"{_rate(series[n]['steps_per_s'])} at {n}" for n in sorted(series, key=int)
        )
        cells.append(f"{algo.upper()} {points} seed(s)")
    cells[-1:] = [f"{cells[-1]} (env-steps/s, all seeds together)"] if cells else []
    return "; ".join(cells)


def devices_line(r: dict) -> str:
    strong = r["results"]["devices"].get("shard_map_strong", {})
    cells = [
        f"{n}: {_rate(e['steps_per_s'])} ({_num(e.get('ratio_to_base'), '.2f')}×)"
        for n, e in sorted(strong.items(), key=lambda kv: int(kv[0]))
    ]
    return "shard_map, 64 envs in all, by devices: " + ", ".join(cells)


def compile_line(r: dict) -> str:
    cells = r["results"]
    worst = max(cells, key=lambda c: cells[c]["compile_wall_s"])
    first = next(iter(cells))
    line = f"{first} {cells[first]['compile_wall_s']:.1f} s cold"
    if worst != first:
        line += f"; slowest {worst} {cells[worst]['compile_wall_s']:.1f} s"
    return line


def precision_line(r: dict) -> str:
    force = r["precision_in_force"]
    default = force["jax_default_matmul_precision"] or "default"
    tf32 = "TF32" if force["tf32_measured"] else "full float32"
    cells = [
        f"`{default}` precision: {tf32} (matmul error {force['matmul_rel_error_default']:.0e})"
    ]
    for algo, c in r["results"].items():
        same = "identical" if c["identical"] else f"max abs Δ {c['max_abs_diff']:.1e}"
        cells.append(
            f"{algo.upper()} at `highest`: parameters {same}, final return "
            f"{_num(c['final_return_default'], '.1f')} vs {_num(c['final_return_highest'], '.1f')}"
        )
    return "; ".join(cells)


def mode_pairs_line(r: dict) -> str:
    """Each algorithm's paired rate ratio of its first mode to its last (scan / step by default),
    and whether every mode ended on the same bits."""
    modes = r["config"]["modes"]
    first, last = modes[0], modes[-1]
    cells = [
        f"{algo.upper()} {first}/{last} {_num(res.get(f'{first}/{last}', {}).get('median'))}"
        for algo, res in r["results"].items()
    ]
    same = all(res["same_bits"] for res in r["results"].values())
    return "; ".join(cells) + ("; every mode the same bits" if same else "; **modes differ**")


def roofline_line(r: dict) -> str:
    def ms(seconds: float | None) -> str:  # a roofline is None where no peak is known
        return _num(None if seconds is None else seconds * 1e3)

    def line(name: str, c: dict) -> str:
        if "roofline_here_iteration_s" not in c:  # a record from before the overhead model
            return (
                f"{name}: {ms(c['measured_iteration_s'])} ms an iteration measured, roofline "
                f"{ms(c['predicted_here_iteration_s'])} ms here, "
                f"{ms(c['predicted_h100_iteration_s'])} ms on an H100"
            )
        return (
            f"{name}: {ms(c['measured_iteration_s'])} ms an iteration measured, predicted "
            f"{ms(c['predicted_here_iteration_s'])} ms here (roofline "
            f"{ms(c['roofline_here_iteration_s'])}), predicted on H100 "
            f"{ms(c['predicted_h100_iteration_s'])} ms (assumed costs)"
        )

    return "; ".join(line(name, c) for name, c in r["results"].items())


LINES = {
    "fusion_modes": fusion_line,
    "algorithms": lambda r: f"{len(r['results'])} algorithms: table below",
    "mode_pairs": mode_pairs_line,
    "envs": envs_line,
    "seeds": seeds_line,
    "devices": devices_line,
    "compile_time": compile_line,
    "precision": precision_line,
    "roofline": roofline_line,
}


def sections_table(report: dict) -> list[str]:
    lines = ["| section | result | wall s | CPU s |", "|---|---|---:|---:|"]
    for name, entry in report["results"].items():
        again = entry.get("rerun")
        if "skipped" in entry:
            result = f"skipped: {entry['skipped']}"
        elif entry.get("timed_out"):
            result = f"**killed at its limit** of {entry['limit_s']:.0f} s"
        elif not entry["ok"]:
            result = f"**failed** (exit {entry['returncode']})"
        else:
            result = LINES[name](entry["report"])
            if "second_call" in entry:
                result = f"{result} (a second call, at smaller sizes: `{entry['command']}`)"
        if again:
            result = f"{result} (run again on {again['date'][:10]}, {again['why']})"
        wall, cpu = _num(entry.get("wall_s"), ".0f"), _num(entry.get("cpu_s"), ".0f")
        lines.append(f"| {name} | {result} | {wall} | {cpu} |")
    return lines


def stopped_tails(report: dict) -> list[str]:
    """What each section stopped at its time limit had printed (its report is lost with it,
    its figures so far are not), as one fenced block per section."""
    lines = []
    for name, entry in report["results"].items():
        if not entry.get("timed_out"):
            continue
        printed = [line.strip() for line in entry["tail"] if not _PROGRESS.match(line.strip())]
        lines += [
            f"`{name}` printed before its limit of {entry['limit_s']:.0f} s "
            f"(`{entry['command']}`):",
            "",
            "```",
            *(printed or ["(nothing)"]),
            "```",
            "",
        ]
    return lines[:-1]


def algorithms_table(report: dict) -> list[str]:
    algos = _report(report, "algorithms")
    if algos is None:
        return []
    compile_cells = (_report(report, "compile_time") or {}).get("results", {})
    settings = algos["config"]["settings"]
    lines = [
        "| algo | env | `scan` env-steps/s | `step` env-steps/s | `scan` / `step` "
        "| cold compile wall s (`scan`) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for algo, modes in algos["results"].items():
        scan, step = modes.get("scan", {}), modes.get("step", {})
        ratio = modes.get("scan_vs_step")
        compiled = compile_cells.get(f"{algo}/scan", {}).get("compile_wall_s")
        lines.append(
            f"| {algo} | {settings[algo]['env']} | {_rate(scan.get('steps_per_s'))} "
            f"| {_rate(step.get('steps_per_s'))} | {_num(ratio, '.1f')} | {_num(compiled, '.1f')} |"
        )
    return lines


def describe(device: dict) -> str:
    """``cpu``, ``NVIDIA H100 80GB HBM3 (gpu)``."""
    kind, platform = device["device_kind"], device["platform"]
    return kind if kind.lower() == platform else f"{kind} ({platform})"


def table(report: dict) -> str:
    """A report's tables: the run, each section's result, and the per-algorithm table."""
    device, machine = report["config"]["device"], report["machine"]
    size, load = report["config"]["size"], report["loadavg"]
    where = f"{device['device_count']} × {describe(device)}"
    path = Path(report.get("path", "benchmarks/results/accelerator-*.json"))
    lines = [
        f"`python benchmarks/accelerator.py --size {size}` on {where}, JAX {machine['jax']}, "
        f"{machine['cpus_used']} CPU cores; {report['wall_s']:.0f} s in all (`{path.name}`; "
        f"1-min load average {load['start'][0]:.1f} at the start, {load['end'][0]:.1f} at the "
        "end).",
    ]
    if "added_xla_flags" in report["config"]:
        lines[0] += f" XLA flags added: `{report['config']['added_xla_flags']}`."
    if device["platform"] == "cpu":
        lines[0] += " **These are CPU figures**"
        lines[0] += "." if size == "full" else f", at the `{size}` preset's sizes."
    lines += ["", *sections_table(report)]
    algorithms = algorithms_table(report)
    if algorithms:
        lines += ["", *algorithms]
    stopped = stopped_tails(report)
    if stopped:
        lines += ["", *stopped]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a report of benchmarks/accelerator.py")
    args = parser.parse_args()
    report = json.loads(Path(args.report).read_text())
    print(table({**report, "path": args.report}))


if __name__ == "__main__":
    main()

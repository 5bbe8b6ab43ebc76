"""The benchmark pages of the docs site, drawn from ``benchmarks/results/*.json``.

Every figure on these pages is read from a results file when the page is drawn; none is typed by
hand. Each table is stamped with what its file recorded of when and where it was measured
(date, commit, device, load); a stamp the file lacks reads "not recorded".

    python benchmarks/pages.py --out site-pages/   # write the pages as Markdown files

The docs build (``docs/_gen/hooks.py``) draws them the same way on every ``mkdocs build``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NOT_RECORDED = "not recorded"


class Section(NamedTuple):
    title: str
    files: tuple[str, ...]  # results files the section reads, by name
    render: Callable[[dict[str, dict]], str]
    command: str  # the command that writes the files


class Page(NamedTuple):
    slug: str
    title: str
    intro: str
    sections: tuple[Section, ...]


# ---------------------------------------------------------------- formatting


def _rate(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}"


def _s(value: float | None, spec: str = ".2f") -> str:
    return "—" if value is None else format(value, spec)


def _ratio(value: float | None, spec: str = ".2f") -> str:
    return "—" if value is None else f"{value:{spec}}×"


def _table(header: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    align = align or "|".join("---" if i == 0 else "---:" for i in range(len(header)))
    lines = ["| " + " | ".join(header) + " |", "|" + align + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------- stamps


def _load(report: dict) -> str:
    recorded = report.get("recorded", {})
    if "loadavg" in recorded:
        return "1-min load average " + f"{recorded['loadavg'][0]:.1f}"
    load = report.get("loadavg")
    if isinstance(load, dict) and "start" in load:
        start, end = load["start"][0], load["end"][0]
        return f"1-min load average {start:.1f} at the start, {end:.1f} at the end"
    if isinstance(load, list):
        return f"1-min load average {load[0]:.1f} at the end"
    avg = report.get("load_average")
    if isinstance(avg, dict):
        return f"1-min load average {avg['before'][0]:.1f} before, {avg['after'][0]:.1f} after"
    return NOT_RECORDED


def _device(report: dict) -> str:
    machine = report.get("machine")
    if not machine:
        return NOT_RECORDED
    if "backend" not in machine:  # an older, shorter record
        return ", ".join(f"{k} {v}" for k, v in machine.items())
    devices = machine.get("devices")
    where = f"{machine['backend']}"
    if devices:
        where += f" ({len(devices)} device{'s' * (len(devices) != 1)}: {', '.join(devices)})"
    cores = machine.get("cpus_used")
    if cores is not None:
        where += f", {cores} of {machine['cpu_count']} CPU cores"
    elif machine.get("cpu_count"):
        where += f", {machine['cpu_count']} CPU cores"
    return f"{where}, JAX {machine['jax']}, Python {machine['python']}"


def stamp(name: str, report: dict) -> str:
    """``name`` · date · commit · device · load, each as the file recorded it."""
    recorded = report.get("recorded", {})
    date = recorded.get("date") or report.get("date") or NOT_RECORDED
    commit = recorded.get("commit") or report.get("commit") or NOT_RECORDED
    if recorded.get("dirty"):
        commit += " (with uncommitted changes)"
    return (
        f"`benchmarks/results/{name}` · date: {date} · commit: {commit} · "
        f"device: {_device(report)} · load: {_load(report)}"
    )


# ---------------------------------------------------------------- sections


def _defaults(r: dict[str, dict]) -> str:
    report = r["defaults.json"]
    rows = []
    for algo, x in sorted(report["results"].items()):
        ratio = x.get("compile_over_run", x["compile_s"] / x["run_s"])
        rows.append(
            [
                f"`{algo}`",
                x["env"],
                f"{x['env_steps']:,}",
                f"{x['final_return']:.1f}",
                f"{x['threshold']:g}",
                "yes" if x["reached"] else "**no**",
                _s(x["wall_s"], ".1f"),
                _s(x["run_s"]),
                _s(x["compile_s"]),
                _s(ratio),
                _rate(x["steps_per_s"]),
                len(x.get("runs", [])) or 1,
            ]
        )
    header = "algo env steps return threshold reached wall_s run_s compile_s compile/run"
    del header
    return _table(
        [
            "`jaxrl-fdg train --algo …`",
            "env",
            "env steps",
            "final return",
            "threshold",
            "reached",
            "wall s",
            "run s",
            "compile s",
            "compile / run",
            "env-steps/s",
            "cold runs (median)",
        ],
        rows,
        "---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:",
    )


def _cold_pairs(r: dict[str, dict]) -> str:
    report = r["cold_pairs.json"]
    rows = []
    for algo, x in report["results"].items():
        c, run = x["compile_s"], x["run_s"]
        ratios = c["pair_ratios"]
        rows.append(
            [
                f"`{algo}`",
                _s(c["baseline"]),
                _s(c["current"]),
                f"{min(ratios):.2f}–{max(ratios):.2f}",
                _s(run["baseline"]),
                _s(run["current"]),
            ]
        )
    return (
        f"Baseline: `{report['config']['baseline']}`, {report['config']['pairs']} interleaved "
        "cold pairs; medians.\n\n"
        + _table(
            [
                "`jaxrl-fdg train --algo …`",
                "compile s, baseline",
                "compile s, current",
                "pair ratios (compile)",
                "run s, baseline",
                "run s, current",
            ],
            rows,
        )
    )


_WHAT = {
    "handwritten": "the whole run, written by hand in one `lax.scan`",
    "scan": "up to `log_every` iterations per call",
    "iteration": "rollout + update, one call per iteration",
    "fragment": "rollout scan; update; host loop between",
    "step": "each policy call, each env step; update",
    "eager": "nothing (`jax.disable_jit`)",
}


def _fusion_modes(r: dict[str, dict]) -> str:
    both = [(name, r[name]) for name in ("fusion_modes.json", "fusion_modes_1cpu.json")]
    header = ["mode", "what is compiled together"]
    for _name, report in both:
        cores = report["machine"].get("cpus_used", report["machine"]["cpu_count"])
        header += [
            f"compile s ({cores} core{'s' * (cores != 1)})",
            f"env-steps/s ({cores} core{'s' * (cores != 1)})",
        ]
    header.append("final return")
    rows = []
    first = both[0][1]
    for mode, what in _WHAT.items():
        row: list[Any] = [f"`{mode}`" if mode != "handwritten" else mode, what]
        for _, report in both:
            x = report["results"][mode]
            row += [_s(x["compile_s"]), _rate(x["steps_per_s"])]
        ret = first["results"][mode]["final_return"]
        row.append("—" if ret is None else f"{ret:.0f}")
        rows.append(row)
    config = first["config"]
    ratio_rows = []
    for key, label in (
        ("scan_vs_handwritten", "`scan` / handwritten"),
        ("scan_vs_step", "`scan` / `step`"),
        ("scan_vs_eager", "`scan` / `eager`"),
    ):
        ratio_rows.append([label, *(_ratio(rep["ratios"].get(key), ",.2f") for _, rep in both)])
    eager = first["results"]["eager"].get("measured_iterations")
    return (
        f"PPO on {config['env']}, {config['num_envs']} envs × {config['rollout_len']} steps, "
        f"{config['update_epochs']} epochs × {config['num_minibatches']} minibatches, "
        f"{'×'.join(map(str, config['hidden_sizes']))} {config['activation']} MLP, "
        f"{config['total_steps']:,} steps, seed {config['seed']}, medians of "
        f"{config['repeats']}; `eager` timed over {eager} iterations.\n\n"
        + _table(header, rows, "---|---|---:|---:|---:|---:|---:")
        + "\n\n"
        + _table(["ratio", *(f"`{name}`" for name, _ in both)], ratio_rows)
    )


_MODES = ("scan", "iteration", "fragment", "step", "eager")


def _algorithms(r: dict[str, dict]) -> str:
    report = r["algorithms.json"]
    rows = []
    for algo, modes in report["results"].items():
        rows.append([f"`{algo}`", *(_rate(modes.get(m, {}).get("steps_per_s")) for m in _MODES)])
    iterations = report["config"]["iterations"]
    counts = ", ".join(f"{a} {n}" for a, n in iterations.items())
    return (
        f"Env-steps/s, medians of {report['config']['rounds']} interleaved rounds; iterations "
        f"per compiled mode: {counts}.\n\n" + _table(["algorithm", *_MODES], rows)
    )


def _mode_pairs(r: dict[str, dict]) -> str:
    report = r["mode_pairs.json"]
    rows = []
    for algo, x in report["results"].items():
        row: list[Any] = [f"`{algo}`"]
        row += [
            _rate(x["modes"][m]["steps_per_s"]) for m in ("scan", "iteration", "fragment", "step")
        ]
        for pair in ("scan/iteration", "iteration/step", "scan/step"):
            p = x[pair]
            row.append(f"{p['median']:.3f} ({p['min']:.2f}–{p['max']:.2f})")
        row.append("yes" if x["same_bits"] else "**no**")
        rows.append(row)
    return (
        f"Each algorithm's plans compiled in one process and advanced from the same state, "
        f"{report['config']['rounds']} rounds in rotating order; env-steps/s medians, then the "
        "median paired ratio (range over the rounds).\n\n"
        + _table(
            [
                "algorithm",
                "scan",
                "iteration",
                "fragment",
                "step",
                "scan / iteration",
                "iteration / step",
                "scan / step",
                "same final bits",
            ],
            rows,
            "---|---:|---:|---:|---:|---:|---:|---:|---",
        )
    )


def _profile_overhead(r: dict[str, dict]) -> str:
    parts = []
    for name in ("profile_overhead_scan.json", "profile_overhead_step.json"):
        report = r[name]
        config = report["config"]
        rows = []
        for mode, x in report["results"].items():
            target = report.get("targets", {}).get(mode)
            rows.append(
                [
                    f"`{mode}`",
                    _s(x["run_s"], ".3f"),
                    f"{x['overhead']:+.1%}",
                    "—" if target is None else f"≤ {target:.0%}",
                    x["scope_events"],
                    _s(x["overhead_per_event_s"] * 1e6, ".2f"),
                ]
            )
        parts.append(
            f"`--fusion {config['fusion']}`, {config['algo']} on {config['env']}, "
            f"{config['total_steps']:,} steps, medians of {config['repeats']}:\n\n"
            + _table(
                ["`--profile`", "run s", "against `off`", "target", "scope events", "µs / event"],
                rows,
            )
        )
    return "\n\n".join(parts)


def _compile_time(r: dict[str, dict]) -> str:
    report = r["compile_time.json"]
    rows = []
    for cell, x in report["results"].items():
        algo, mode = cell.split("/")
        programs = x["programs"]
        own = sum(v for k, v in programs.items() if k not in ("init", "evaluate"))
        rows.append(
            [
                algo,
                mode,
                _s(programs.get("init")),
                _s(own),
                _s(programs.get("evaluate")),
                _s(x["compile_wall_s"]),
                _s(x["backend_s"]),
            ]
        )
    return (
        "Cold compile seconds per program, the persistent cache off, each cell a fresh process. "
        "Programs compile two at a time, so their own seconds add up to more than the wall.\n\n"
        + _table(
            [
                "algo",
                "mode",
                "init s",
                "mode's programs s",
                "evaluate s",
                "compile wall s",
                "XLA s",
            ],
            rows,
            "---|---|---:|---:|---:|---:|---:",
        )
    )


def _compile_cache(r: dict[str, dict]) -> str:
    report = r["compile_cache.json"]
    rows = []
    for mode, x in report["results"].items():
        rows.append(
            [
                f"`{mode}`",
                _s(x["first_compile_s"]),
                _s(x["second_compile_s"]),
                _s(x["ratio"]),
            ]
        )
    c = report["config"]
    return (
        f"{c['algo']} on {c['env']}: the same configuration twice, each in a fresh process "
        f"sharing one fresh cache; medians of {c['repeats']} pairs.\n\n"
        + _table(["mode", "first compile s", "second compile s", "second / first"], rows)
    )


def _compile_options(r: dict[str, dict]) -> str:
    report = r["compile_options.json"]
    rows = []
    for algo, x in report["results"].items():
        for key in ("compile_s", "init_s", "run_s"):
            y = x[key]
            rows.append(
                [
                    f"`{algo}`",
                    key,
                    _s(y["earlier"]),
                    _s(y["current"]),
                    _s(y["median_pair_ratio"], ".3f"),
                ]
            )
    earlier = ", ".join(f"`{k}={v}`" for k, v in report["config"]["earlier"].items())
    return (
        f"Earlier compile options ({earlier}) against the current ones, "
        f"{report['config']['pairs']} cold pairs.\n\n"
        + _table(["algo", "figure", "earlier", "current", "median pair ratio"], rows)
    )


def _learning(r: dict[str, dict]) -> str:
    report = r["learning.json"]
    rows = []
    for _, x in report["results"].items():
        rows.append(
            [
                f"`{x['command']}`",
                f"{x['env_steps']:,}",
                f"{x['final_return']:.1f}",
                _rate(x["steps_per_s"]),
                _s(x["compile_s"], ".1f"),
                x.get("source", ""),
            ]
        )
    return _table(
        ["command", "env steps", "final return", "env-steps/s", "compile s", "settings from"],
        rows,
        "---|---:|---:|---:|---:|---",
    )


def _simulator_curves(r: dict[str, dict]) -> str:
    report = r["simulator_curves.json"]
    parts = []
    for task, x in report["results"].items():
        c = report["config"]["tasks"][task]
        runs = ", ".join(
            f"seed {run['seed']}: {run['final_return']:.1f} "
            f"at {run['steps_per_s']:,.0f} env-steps/s"
            for run in x["runs"]
        )
        parts.append(
            f"**{x['env']}**, PPO, {c['num_envs']} envs × {c['rollout_len']} steps, "
            f"{c['total_steps']:,} steps: {runs}.\n\n![{x['env']}](img/{x['image']})"
        )
    return "\n\n".join(parts)


def _offpolicy_baselines(r: dict[str, dict]) -> str:
    report = r["offpolicy_baselines.json"]
    rows = []
    for algo, x in report["results"].items():
        for impl in ("handwritten", "scan"):
            y = x[impl]
            rows.append(
                [
                    f"`{algo}`",
                    impl,
                    f"{y['env_steps']:,}",
                    _rate(y["steps_per_s"]),
                    _s(y["compile_s"]),
                    f"{y['final_return']:.1f}",
                ]
            )
    ratios = ", ".join(f"{k} {v:.3f}" for k, v in report["ratios"].items())
    return (
        _table(
            ["algo", "implementation", "env steps", "env-steps/s", "compile s", "final return"],
            rows,
        )
        + f"\n\nRatios: {ratios}."
    )


def _envs(r: dict[str, dict]) -> str:
    report = r["envs.json"]
    sizes = sorted({int(n) for rows in report["results"].values() for n in rows})
    columns = (
        ("ours", "ours in-scan"),
        ("ours_pregenerated", "ours pre-gen"),
        ("gymnax", "gymnax in-scan"),
        ("gymnax_pregenerated", "gymnax pre-gen"),
        ("gymnasium_sync", "gymnasium sync"),
        ("gymnasium_numpy", "gymnasium numpy"),
    )
    parts = []
    for size in sizes:
        rows = []
        for env, by_size in report["results"].items():
            x = by_size.get(str(size))
            if x is None:
                continue
            rows.append([env, *(_rate(x.get(key)) for key, _ in columns)])
        parts.append(
            f"**{size:,} envs**, env steps/s:\n\n" + _table(["env", *(c for _, c in columns)], rows)
        )
    return "\n\n".join(parts)


def _host_simulators(r: dict[str, dict]) -> str:
    report = r["host_simulators.json"]
    rows = []
    for case, x in report["results"].items():
        sims = [k for k in x if "/" in k]
        rows.append([case, *(_rate(x[k]["steps_per_s"]) for k in sims), _s(x["envpool_vs_gym"])])
    sims = [k for k in next(iter(report["results"].values())) if "/" in k]
    return _table(["case", *(f"`{s}` env-steps/s" for s in sims), "EnvPool / gymnasium"], rows)


def _host_env(r: dict[str, dict]) -> str:
    report = r["host_env.json"]
    rows = [
        [f"`{case}`", _rate(x["steps_per_s"]), _s(x["compile_s"]), _s(x["run_s"])]
        for case, x in report["results"].items()
    ]
    ratios = ", ".join(f"{k} {v:.2f}" for k, v in report["ratios"].items())
    c = report["config"]
    return (
        f"{c['algo']} on `{c['env']}`, {c['num_envs']} envs × {c['rollout_len']} steps, "
        f"{c['total_steps']:,} steps, medians of {c['repeats']}.\n\n"
        + _table(["placement / fusion", "env-steps/s", "compile s", "run s"], rows)
        + f"\n\nRatios: {ratios}."
    )


def _brax_training(r: dict[str, dict]) -> str:
    rows = []
    for report in r.values():
        c = report["config"]
        setup = c["setup"] + (f", learning rate {c['lr']:g}" if "lr" in c else "")
        for side in ("ours", "brax"):
            x = report["results"][side]
            returns = ", ".join(f"{run['final_return']:.1f}" for run in x["runs"])
            rows.append(
                [
                    setup if side == "ours" else "",
                    side,
                    returns,
                    _rate(x["steps_per_s"]),
                    _s(x["compile_s"], ".1f"),
                ]
            )
    return _table(
        ["setup", "framework", "final return (per seed)", "env-steps/s", "compile s"],
        rows,
        "---|---|---|---:|---:",
    )


def _brax_env_step(r: dict[str, dict]) -> str:
    report = r["brax_env_step.json"]
    x = report["results"]
    c = report["config"]
    rows = [
        [
            side,
            _rate(x[side]["steps_per_s"]),
            _s(x[side]["us_per_env_step"]),
            _s(x[side]["compile_s"]),
        ]
        for side in ("brax", "ours")
    ]
    return (
        f"`{c['env']}` alone, {c['num_envs']} envs, {c['actions']} actions, restarts: "
        f"{c['auto_reset']}; medians of {c['rounds']} rounds.\n\n"
        + _table(["wrappers", "env-steps/s", "µs / env-step", "compile s"], rows)
        + f"\n\nOurs / Brax: {x['ours_vs_brax']:.2f}."
    )


def _brax_rollout_cost(r: dict[str, dict]) -> str:
    report = r["brax_rollout_cost.json"]
    rows = []
    for solver, x in report["results"].items():
        rows.append(
            [
                solver,
                _s(x["before"]["us_per_env_step"]),
                _s(x["after"]["us_per_env_step"]),
                _s(x["after_over_before"]),
                f"{x['before']['steps_per_episode']:.1f} → {x['after']['steps_per_episode']:.1f}",
                f"{x['after']['cart_at_rail_end']:.1%}",
            ]
        )
    return (
        "One compiled rollout program timed from the state before and after "
        f"{report['config']['iterations']} PPO iterations.\n\n"
        + _table(
            [
                "solver",
                "µs / env-step before",
                "after",
                "after / before",
                "steps per episode",
                "steps at a rail end (after)",
            ],
            rows,
        )
    )


def _scaling(r: dict[str, dict]) -> str:
    report = r["scaling.json"]
    parts = ["![env-steps/s and cold compile seconds against size](img/scaling.png)"]
    for sweep, points in report["results"].items():
        rows = [
            [f"{p['value']:,}", _rate(p["steps_per_s"]), _s(p["compile_s"]), _s(p["run_s"])]
            for p in points
        ]
        parts.append(
            f"**{sweep}**\n\n" + _table([sweep, "env-steps/s", "compile s", "run s"], rows)
        )
    return "\n\n".join(parts)


def _placement(r: dict[str, dict]) -> str:
    report = r["placement.json"]
    parts = ["![placement scaling](img/placement.png)"]
    devices = report["results"]["devices"]
    counts = sorted({int(n) for series in devices.values() for n in series})
    rows = []
    for series, by_count in devices.items():
        rows.append([series, *(_rate(by_count.get(str(n), {}).get("steps_per_s")) for n in counts)])
    parts.append(
        "PPO with `--placement data_parallel` on forced CPU devices (they share the machine's "
        "cores), env-steps/s:\n\n" + _table(["series", *(f"{n} devices" for n in counts)], rows)
    )
    seeds = report["results"]["seeds"]
    counts = sorted({int(n) for series in seeds.values() for n in series})
    rows = []
    for algo, by_count in seeds.items():
        rows.append(
            [
                f"{algo}, all seeds",
                *(_rate(by_count.get(str(n), {}).get("steps_per_s")) for n in counts),
            ]
        )
        rows.append(
            [
                f"{algo}, compile s",
                *(_s(by_count.get(str(n), {}).get("compile_s"), ".1f") for n in counts),
            ]
        )
    parts.append("`--num-seeds` on one device:\n\n" + _table(["", *(f"{n}" for n in counts)], rows))
    return "\n\n".join(parts)


def _actor_learner(r: dict[str, dict]) -> str:
    report = r["actor_learner.json"]
    rows = [
        [f"`{case}`", _rate(x["steps_per_s"]), _s(x["ratio_to_single"]), _s(x["compile_s"])]
        for case, x in report["results"].items()
    ]
    c = report["config"]
    return (
        f"{c['algo']} on {c['env']}, {c['num_envs']} envs, `--fusion {c['fusion']}`, medians of "
        f"{c['repeats']}, on 2 forced CPU devices.\n\n"
        + _table(["placement", "env-steps/s", "/ single", "compile s"], rows)
    )


def _replay(r: dict[str, dict]) -> str:
    report = r["replay.json"]
    batches = list(report["results"])
    variants = list(next(iter(report["results"].values())))
    rows = []
    for v in variants:
        row: list[Any] = [v]
        for b in batches:
            x = report["results"][b][v]
            row += [_s(x.get("sample_us"), ".0f"), _s(x.get("update_us"), ".0f")]
        rows.append(row)
    header = ["at 2^20 slots" if report["config"]["capacity"] == 2**20 else "variant"]
    for b in batches:
        header += [f"sample µs (B={b})", f"update µs (B={b})"]
    return (
        f"Capacity {report['config']['capacity']:,}; flashbax {report['config']['flashbax']} "
        "for comparison.\n\n" + _table(header, rows)
    )


def _soak_faults(r: dict[str, dict]) -> str:
    report = r["soak_faults.json"]
    rows = [[fault, x["passed"]] for fault, x in sorted(report["by_fault"].items())]
    failures = len(report["failures"])
    return (
        f"{report['rounds']} rounds in {report['minutes']} minutes (seed {report['seed']}), "
        f"{failures} failed.\n\n" + _table(["fault", "rounds passed"], rows)
    )


def _soak_hangs(r: dict[str, dict]) -> str:
    report = r["soak_hangs.json"]
    rows = [
        [f"`{case}`", f"{x['passed']} / {x['rounds']}", _s(max(x["seconds"]), ".1f")]
        for case, x in report["results"].items()
    ]
    return f"Deadline {report['deadline_s']:.0f} s per round.\n\n" + _table(
        ["case", "passed", "slowest round s"], rows
    )


def _accelerator(r: dict[str, dict]) -> str:
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import accelerator_table

    parts = []
    for name, report in r.items():
        parts.append(accelerator_table.table({**report, "path": f"benchmarks/results/{name}"}))
    return "\n\n".join(parts)


# ---------------------------------------------------------------- pages


def _accelerator_files() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in RESULTS.glob("accelerator-*.json")))


def _brax_training_files() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in RESULTS.glob("brax_training-*.json")))


def pages() -> tuple[Page, ...]:
    return (
        Page(
            "defaults",
            "Default runs",
            "Every algorithm's default run (`jaxrl-fdg train --algo X`, nothing else), started "
            "as a new user's first run is: a fresh process, an empty compilation cache. The "
            "threshold is the return each must reach; wall seconds include start-up and compile.",
            (
                Section(
                    "Each default run, cold",
                    ("defaults.json",),
                    _defaults,
                    "python benchmarks/defaults.py",
                ),
                Section(
                    "Two installs' default runs in interleaved cold pairs",
                    ("cold_pairs.json",),
                    _cold_pairs,
                    "python benchmarks/cold_pairs.py --baseline PYTHON --algos a2c,ppo",
                ),
            ),
        ),
        Page(
            "fusion",
            "Fusion modes",
            "The same algorithm under each fusion mode (see "
            "[Fusion modes](../concepts/fusion.md)). Every compiled mode computes the same bits "
            "for a seed; the tables say what each costs on the recorded machine.",
            (
                Section(
                    "PPO, every mode against a hand-written program",
                    ("fusion_modes.json", "fusion_modes_1cpu.json"),
                    _fusion_modes,
                    "python benchmarks/fusion_modes.py; python benchmarks/fusion_modes.py --cpus 1",
                ),
                Section(
                    "Every algorithm under every mode",
                    ("algorithms.json",),
                    _algorithms,
                    "python benchmarks/algorithms.py --algos all",
                ),
                Section(
                    "Modes compared in paired rounds",
                    ("mode_pairs.json",),
                    _mode_pairs,
                    "python benchmarks/mode_pairs.py",
                ),
            ),
        ),
        Page(
            "timing",
            "Timing layer overhead",
            "What each `--profile` mode costs in run time against `--profile off` "
            "(see [The timing layer](../concepts/timing.md)).",
            (
                Section(
                    "Run time by profile mode",
                    ("profile_overhead_scan.json", "profile_overhead_step.json"),
                    _profile_overhead,
                    "python benchmarks/profile_overhead.py; python benchmarks/profile_overhead.py "
                    "--fusion step --total-steps 51200",
                ),
            ),
        ),
        Page(
            "compile",
            "Compile time",
            "Compile seconds per program, the persistent cache, and compiler options.",
            (
                Section(
                    "Cold compile per program",
                    ("compile_time.json",),
                    _compile_time,
                    "python benchmarks/compile_time.py",
                ),
                Section(
                    "The persistent compilation cache",
                    ("compile_cache.json",),
                    _compile_cache,
                    "python benchmarks/compile_cache.py",
                ),
                Section(
                    "Compiler options, paired",
                    ("compile_options.json",),
                    _compile_options,
                    "python benchmarks/compile_options.py --algos ppo,a2c --pairs 6",
                ),
            ),
        ),
        Page(
            "learning",
            "Learning",
            "Longer runs and the returns they reach.",
            (
                Section(
                    "Longer runs, one seed each",
                    ("learning.json",),
                    _learning,
                    "python benchmarks/learning.py",
                ),
                Section(
                    "Brax and MinAtar curves",
                    ("simulator_curves.json",),
                    _simulator_curves,
                    "python benchmarks/simulator_curves.py",
                ),
                Section(
                    "Off-policy algorithms against hand-written programs",
                    ("offpolicy_baselines.json",),
                    _offpolicy_baselines,
                    "python benchmarks/offpolicy_baselines.py",
                ),
            ),
        ),
        Page(
            "environments",
            "Environments and simulators",
            "Environment throughput with random actions, and host simulators under PPO.",
            (
                Section(
                    "JAX environments against gymnax and gymnasium",
                    ("envs.json",),
                    _envs,
                    "python benchmarks/envs.py",
                ),
                Section(
                    "EnvPool against gymnasium",
                    ("host_simulators.json",),
                    _host_simulators,
                    "python benchmarks/host_simulators.py",
                ),
                Section(
                    "Placement `host_env`",
                    ("host_env.json",),
                    _host_env,
                    "python benchmarks/host_env.py",
                ),
            ),
        ),
        Page(
            "brax",
            "Brax side by side",
            "PPO and SAC on Brax's `inverted_pendulum` (MJX), ours against Brax's own trainers "
            "with the same budget, networks and hyperparameters.",
            (
                Section(
                    "Training runs",
                    _brax_training_files(),
                    _brax_training,
                    "python benchmarks/brax_training.py [--setup brax|sac] [--learning-rate 1e-9]",
                ),
                Section(
                    "The simulator step alone",
                    ("brax_env_step.json",),
                    _brax_env_step,
                    "python benchmarks/brax_env_step.py --rounds 5",
                ),
                Section(
                    "What a rollout costs before and after learning",
                    ("brax_rollout_cost.json",),
                    _brax_rollout_cost,
                    "python benchmarks/brax_rollout_cost.py",
                ),
            ),
        ),
        Page(
            "scaling",
            "Scaling",
            "Throughput and compile time against the size of the work, devices and seeds.",
            (
                Section(
                    "Sizes: envs, width, batch, buffer",
                    ("scaling.json",),
                    _scaling,
                    "python benchmarks/scaling.py",
                ),
                Section(
                    "Devices and seeds",
                    ("placement.json",),
                    _placement,
                    "python benchmarks/placement.py",
                ),
                Section(
                    "Actors and learner on two devices",
                    ("actor_learner.json",),
                    _actor_learner,
                    "python benchmarks/actor_learner.py",
                ),
            ),
        ),
        Page(
            "replay",
            "Replay",
            "Uniform and prioritized replay (`jaxrl_fdg.fragments.replay`), sample and update "
            "times per jitted call.",
            (
                Section(
                    "Sample and update", ("replay.json",), _replay, "python benchmarks/replay.py"
                ),
            ),
        ),
        Page(
            "faults",
            "Fault soaks",
            "Faults drawn at random in fresh processes; each resumed run's final checkpoint is "
            "compared with an uninterrupted run's (see [Reliability](../concepts/guarantees.md)).",
            (
                Section(
                    "Kills and damaged folders",
                    ("soak_faults.json",),
                    _soak_faults,
                    "python benchmarks/soak_faults.py --minutes 10",
                ),
                Section(
                    "Runs that used to hang",
                    ("soak_hangs.json",),
                    _soak_hangs,
                    "python benchmarks/soak_hangs.py",
                ),
            ),
        ),
        Page(
            "accelerator",
            "Accelerator suite",
            "`python benchmarks/accelerator.py` runs every benchmark that says something about a "
            "GPU or TPU and merges them into one report per device.",
            (
                Section(
                    "Reports",
                    _accelerator_files(),
                    _accelerator,
                    "python benchmarks/accelerator.py",
                ),
            ),
        ),
    )


def images() -> list[Path]:
    """The result images the pages show (under ``img/``)."""
    return sorted(RESULTS.glob("*.png"))


def render(page: Page) -> str:
    lines = [f"# {page.title}", "", page.intro, ""]
    for section in page.sections:
        reports = {name: json.loads((RESULTS / name).read_text()) for name in section.files}
        lines += [f"## {section.title}", "", f"`{section.command}`", ""]
        lines += [f"- {stamp(name, report)}" for name, report in reports.items()]
        lines += ["", section.render(reports), ""]
    return "\n".join(lines)


def index() -> str:
    lines = [
        "# Benchmarks",
        "",
        "Every table here is drawn from a file in `benchmarks/results/` when the site is built "
        "(`benchmarks/pages.py`); no figure is typed by hand. Each table names its file and what "
        "that file recorded of the measurement: date, commit, device and load. Files written "
        'before the benchmarks recorded a date and a commit say so ("not recorded"). The '
        "command under each heading writes its file again.",
        "",
        "Runs of the same configuration vary by about ±15% on a shared 2-core CPU; compare "
        "figures within one table, and ratios of interleaved runs rather than single rates.",
        "",
    ]
    for page in pages():
        lines.append(f"- [{page.title}]({page.slug}.md): {page.intro.split('. ')[0].rstrip('.')}.")
    return "\n".join(lines) + "\n"


def covered() -> set[str]:
    return {name for page in pages() for section in page.sections for name in section.files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the Markdown pages")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.md").write_text(index())
    for page in pages():
        (out / f"{page.slug}.md").write_text(render(page))
    missing = sorted({p.name for p in RESULTS.glob("*.json")} - covered())
    print(
        f"wrote {len(pages()) + 1} pages to {out}" + (f"; not shown: {missing}" if missing else "")
    )


if __name__ == "__main__":
    main()

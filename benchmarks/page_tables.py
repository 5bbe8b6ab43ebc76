"""The tables of the benchmark pages, one function per results file (or group of files): each takes
``{file name: report}`` and returns Markdown. Every figure is read from the report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


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


def defaults(r: dict[str, dict]) -> str:
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


def cold_pairs(r: dict[str, dict]) -> str:
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


def fusion_modes(r: dict[str, dict]) -> str:
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


def algorithms(r: dict[str, dict]) -> str:
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


def mode_pairs(r: dict[str, dict]) -> str:
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


def mode_pairs_baseline(r: dict[str, dict]) -> str:
    report = r["mode_pairs_baseline.json"]
    rows = []
    for algo, modes in report["results"].items():
        for mode, x in modes.items():
            ratios = x["pair_ratios"]
            rows.append(
                [
                    f"`{algo}`",
                    mode,
                    f"{x['baseline_us']:,.0f}",
                    f"{x['current_us']:,.0f}",
                    f"{x['median_pair_ratio']:.3f} ({min(ratios):.2f}–{max(ratios):.2f})",
                ]
            )
    return (
        f"Baseline: `{report['config']['baseline']}`; {report['config']['pairs']} interleaved "
        f"pairs of `mode_pairs.py` runs ({report['config']['rounds']} rounds each); medians of µs "
        "per iteration, and baseline / current per pair (above 1: the current install is "
        "faster).\n\n"
        + _table(
            ["algorithm", "mode", "µs/it, baseline", "µs/it, current", "baseline / current"],
            rows,
            "---|---|---:|---:|---:",
        )
    )


def profile_overhead(r: dict[str, dict]) -> str:
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


def compile_time(r: dict[str, dict]) -> str:
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


def compile_cache(r: dict[str, dict]) -> str:
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


def warm_start(r: dict[str, dict]) -> str:
    report = r["warm_start.json"]
    x = report["results"]
    names = {
        "cold": "none (cold)",
        "jax-cache": "JAX's compilation cache (the executable cache off)",
        "executable-cache": "JAX's and the executable cache",
    }
    c = report["config"]
    rows = [[names[k], _s(x[k]["start_s"]), _s(x[k]["compile_s"])] for k in names]
    baseline, before = c.get("baseline"), ""
    if baseline:  # another install, measured in the same repeats
        commit = (baseline.get("commit") or "another commit")[:7]
        before = f" Rows naming {commit} are that commit's install, in the same repeats."
        for k in names:
            b = x.get(f"baseline {k}")
            if b is not None:
                rows.append([f"{names[k]}, {commit}", _s(b["start_s"]), _s(b["compile_s"])])
    return (
        f"`jaxrl-fdg train` ({c['algo']} on {c['env']}) in fresh processes, by what its caches "
        f"hold; medians of {c['repeats']} repeats, the states taking turns. Importing what "
        f"`train` imports before it starts takes {_s(x['import_s']['median'])} s of each."
        f"{before}\n\n" + _table(["caches", "launch to first iteration s", "compile s"], rows)
    )


def roofline(r: dict[str, dict]) -> str:
    """Measured against predicted time per iteration, the breakdown by operation class, and the
    check of the GPU model against an H100 record."""
    report = r["roofline.json"]
    results = report["results"]

    def ms(seconds: float | None) -> str:
        return "—" if seconds is None else f"{seconds * 1e3:.3g}"

    rows = []
    for run, x in results.items():
        measured, roof = x["measured_iteration_s"], x["roofline_here_iteration_s"]
        rows.append(
            [
                f"`{run}`",
                ms(measured),
                ms(roof),
                ms(x["predicted_here_iteration_s"]),
                "—" if not roof else f"{measured / roof:.1f}×",
                f"{x['ops_per_iteration']:,.0f}" if x["ops_per_iteration"] else "—",
                ms(x["predicted_h100_iteration_s"]),
            ]
        )
    first = next(iter(results.values()))
    here, gpu = first["overheads"], first["h100_overheads"]
    text = (
        f"`--profile sync` gives the measured time; `--profile trace` counts the operations an "
        f"iteration executes. Predicted = roofline + operations × {here['op_s'] * 1e6:.2g} µs + "
        f"launches × {here['launch_s'] * 1e6:.2g} µs ({here['source']}). On an H100: the "
        f"datasheet's roofline + the same operations × {gpu['op_s'] * 1e6:.2g} µs + launches × "
        f"{gpu['launch_s'] * 1e6:.2g} µs ({gpu['source']}).\n\n"
        + _table(
            [
                "run",
                "measured ms/it",
                "roofline ms/it",
                "predicted ms/it",
                "measured / roofline",
                "ops/it",
                "predicted on H100 ms/it",
            ],
            rows,
        )
    )
    classes: list[str] = []
    for x in results.values():
        classes += [c for c in (x.get("breakdown") or {}) if c not in classes]
    shares = []
    for run, x in results.items():
        parts = x.get("breakdown") or {}
        total = sum(p["s"] for p in parts.values()) or 1.0
        shares.append(
            [f"`{run}`"]
            + [f"{100 * parts[c]['s'] / total:.0f}%" if c in parts else "—" for c in classes]
        )
    if classes:
        text += (
            "\n\nOne iteration by operation class: the trace window's time per class (less the "
            "profiler's cost per event) as shares of the measured time left after the host's "
            "dispatch and the operations' floors.\n\n" + _table(["run", *classes], shares)
        )
    check = report.get("h100_check")
    if check:
        lines = [
            [
                f"`{run}`",
                ms(c["measured_s"]),
                ms(c["predicted_s"]),
                f"{c['measured_over_predicted']:.2f}",
            ]
            for run, c in check["runs"].items()
        ]
        text += (
            f"\n\nThe GPU model against the H100 record `{check['record']}` ({check['date']}): "
            "measured there, predicted here for the same configuration from this CPU program's "
            "operation count (XLA fuses differently on a GPU).\n\n"
            + _table(
                ["run", "measured on H100 ms/it", "predicted ms/it", "measured / predicted"], lines
            )
        )
    return text


def compile_options(r: dict[str, dict]) -> str:
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


def learning(r: dict[str, dict]) -> str:
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


def simulator_curves(r: dict[str, dict]) -> str:
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
            f"**{x['env']}**, {c.get('algo', 'ppo').upper()}, "
            f"{c['num_envs']} envs × {c['rollout_len']} steps, "
            + (f"policy lag {c['policy_lag']}, " if c.get("policy_lag") else "")
            + f"{c['total_steps']:,} steps: {runs}.\n\n![{x['env']}](img/{x['image']})"
        )
    return "\n\n".join(parts)


def minatar_references(r: dict[str, dict]) -> str:
    report = r["minatar_references.json"]
    config = report["config"]
    rows = []
    for algo, x in report["results"].items():
        c = config["settings"][algo]
        aggregates = x["aggregates"]
        rows.append(
            [
                algo.upper(),
                f"{c['num_envs']} × {c['rollout_len']}",
                f"{x['env_steps_per_seed']:,}",
                ", ".join(f"{v:.2f}" for v in x["scores"]),
                *(
                    f"{a['point']:.2f} [{a['low']:.2f}, {a['high']:.2f}]"
                    for a in (aggregates["iqm"], aggregates["mean"])
                ),
                _rate(x["steps_per_s_all_seeds"]),
                _s(x["compile_s"]),
            ]
        )
    header = [
        "algo",
        "envs × steps",
        "env steps per seed",
        "final training return per seed",
        "IQM [95% CI]",
        "mean [95% CI]",
        "env-steps/s (all seeds)",
        "compile s",
    ]
    references = "; ".join(
        f"{algo.upper()}: {c['reference']}" for algo, c in config["settings"].items()
    )
    return (
        f"`{config['env']}`, {config['seeds']} seeds as vmapped lanes of one program; scores "
        "are each seed's last logged training return, aggregated by `jaxrl-fdg compare` "
        f"(stratified bootstrap). Settings from {references}.\n\n"
        + _table(header, rows)
        + f"\n\n![MinAtar Breakout](img/{report['image']})"
    )


def atari_profile(r: dict[str, dict]) -> str:
    results = r["atari_profile.json"]["results"]
    parts = []
    conv = results.get("conv_in_loop")
    if conv:
        rows = [
            [f"`{name}`", _s(x["four_in_a_loop_s"], ".3f"), _s(x["one_outside_s"], ".3f")]
            for name, x in conv.items()
        ]
        parts.append(
            "The nature torso's gradient, 64 frames of 84×84×4 per minibatch:\n\n"
            + _table(["convolution", "4 minibatches in a loop, s", "1 outside a loop, s"], rows)
        )
    pool = results.get("envpool_random")
    if pool:
        rates = ", ".join(f"{x['num_envs']} envs: {_rate(x['steps_per_s'])}" for x in pool)
        parts.append(f"EnvPool Breakout-v5 with random actions (no agent): {rates} env-steps/s.")
    profiles = results.get("profiles")
    if profiles:
        scopes = ("env", "actor", "learner", "keys", "stack", "rest")
        rows = [
            [
                algo.upper(),
                f"{x['num_envs']} × {x['rollout_len']}",
                _rate(x["steps_per_s"]),
                *(_s(x["us_per_env_step"].get(k), ".0f") for k in scopes),
            ]
            for algo, x in profiles.items()
        ]
        parts.append(
            "`--placement host_env --fusion step --profile sync`, µs per env step by program "
            "(`env`: EnvPool stepping on the host; `actor`: inference; `learner`: the update):"
            "\n\n" + _table(["algo", "envs × steps", "env-steps/s", *scopes], rows)
        )
    runs = results.get("runs")
    if runs:
        rows = []
        for algo, x in runs.items():
            tenths = ", ".join("—" if v is None else f"{v:.2f}" for v in x["return_by_tenth"])
            rows.append(
                [
                    algo.upper(),
                    f"{x['env_steps']:,}",
                    tenths,
                    _rate(x["steps_per_s"]),
                    _s(x["peak_rss_gb"]),
                ]
            )
        parts.append(
            "Learning Breakout (episodic life, clipped rewards: a return is one life's):\n\n"
            + _table(
                [
                    "algo",
                    "env steps",
                    "training return, each tenth of the run",
                    "env-steps/s",
                    "peak resident GB",
                ],
                rows,
            )
        )
    return "\n\n".join(parts)


def handwritten_pairs(r: dict[str, dict]) -> str:
    report = r["handwritten_pairs.json"]
    rows = []
    for algo, x in report["results"].items():
        pairs = x["scan_vs_handwritten"]
        steady = x.get("steady_state")
        for impl in ("handwritten", "scan"):
            y = x[impl]
            ratio = (
                f"{pairs['median']:.3f} [{pairs['min']:.2f}, {pairs['max']:.2f}]"
                if impl == "scan"
                else ""
            )
            steady_us = f"{steady['us_per_iteration'][impl]:,.1f}" if steady else "—"
            steady_ratio = ""
            if steady and impl == "scan":
                steady_ratio = f"{steady['scan_vs_handwritten']:.3f}"
            rows.append(
                [
                    f"`{algo}`",
                    impl,
                    f"{y['env_steps']:,}",
                    _rate(y["steps_per_s"]),
                    _s(y["compile_s"]),
                    f"{y['final_return']:.1f}",
                    ratio,
                    steady_us,
                    steady_ratio,
                ]
            )
    header = ["algo", "implementation", "env steps", "env-steps/s (median)", "compile s"]
    header += ["final return", "scan / handwritten, median of pairs [range]"]
    header += ["steady state µs / iteration", "steady state scan / handwritten"]
    runs = report["config"].get("steady_runs")
    steady_note = (
        f" The steady state is the median of {runs} alternating runs per side of one compiled"
        " chunk past a short warm-up (every DQN and SAC iteration updates), no host boundary"
        " inside; the hand-written side, whose scan starts at iteration 0, is its program for the"
        " warm-up and the chunk less its program for the warm-up alone. Its ratio is of rates."
        if runs
        else ""
    )
    return (
        _table(header, rows)
        + f"\n\n{report['config']['pairs']} pairs per algorithm, the order alternating from pair"
        " to pair; above 1, `scan` is faster. Both sides compile in every run (compile seconds"
        " are the first run's)." + steady_note
    )


def loop_share(r: dict[str, dict]) -> str:
    report = r["loop_share.json"]
    rows = []
    for case, x in report["results"].items():
        opcodes = ", ".join(f"{op} {n:,}" for op, n in x["loop_opcodes"].items())
        rows.append(
            [
                f"`{case}`",
                f"{x['loop_share']:.1%}",
                f"{x['ops_per_iteration']:,.0f}",
                f"{x['loop_ops_per_iteration']:,.0f}",
                f"{x['loop_copies_per_iteration']:,.0f}",
                opcodes,
                f"{x['us_per_iteration']:,.1f}",
            ]
        )
    header = ["case", "`loop` share", "ops / it", "`loop` ops / it", "`loop` copies / it"]
    header += ["`loop` ops in the window, by opcode", "µs / it untraced"]
    return (
        _table(header, rows) + "\n\nShares are of traced device time in a window of "
        f"{report['config']['iterations_per_window']} PPO iterations (the reproducer's iteration"
        " is one step of its scan); untraced µs per iteration are medians of "
        f"{report['config']['rounds']} runs of {report['config']['timed_iterations']} iterations."
        " `-unrolled`: JAX's unrolled Threefry lowering registered for CPU while compiling."
        " The hand-written program's window includes its initialisation (the QR custom-calls);"
        " dots that XLA rewrites without metadata count as `loop` on both sides."
    )


def envs(r: dict[str, dict]) -> str:
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


def env_adapters(r: dict[str, dict]) -> str:
    """``benchmarks/env_adapters.py``: each JAX suite's adapter against the suite's own
    auto-resetting environment, env steps/s per number of environments."""
    report = r["env_adapters.json"]
    rows = []
    for entry in report["results"].values():
        for n, x in entry["by_num_envs"].items():
            rows.append(
                [
                    f"`{entry['env']}`",
                    f"{int(n):,}",
                    _rate(x.get("ours")),
                    _rate(x.get("raw")),
                    _ratio(x.get("ours_vs_raw")),
                    _s(x.get("ours_compile_s"), ".1f"),
                    _s(x.get("raw_compile_s"), ".1f"),
                ]
            )
    header = [
        "env",
        "envs",
        "adapter",
        "suite's own",
        "adapter / own",
        "compile s (adapter)",
        "compile s (own)",
    ]
    return _table(header, rows)


ENV_CRAFTAX = "Craftax-Classic-Symbolic-v1"


def run_options(r: dict[str, dict]) -> str:
    report = r["run_options.json"]
    rows = []
    for family, options in report["results"].items():
        for name, x in options.items():
            setting = ", ".join(f"`{k}={v}`" for k, v in x["options"].items())
            if "error" in x:
                rows.append([f"`{family}`", name, setting, "—", "—", x["error"], "—"])
                continue
            us, up = x["us_per_iteration"], x["speedup"]
            rows.append(
                [
                    f"`{family}`",
                    name,
                    setting,
                    _s(us["plain"], ".0f"),
                    _s(us["optioned"], ".0f"),
                    f"{up['median']:.3f} [{up['min']:.2f}, {up['max']:.2f}]",
                    "same" if x["same_bits"] else "changed",
                ]
            )
    return (
        f"The steady-state chunk of the hand-written pairs, compiled with each XLA:CPU option set "
        f"and without, {report['config']['runs']} alternating runs each; speedup is plain over "
        "optioned (above 1, the option is faster), bits compare the state after the chunk.\n\n"
        + _table(
            ["family", "options", "setting", "plain µs/it", "optioned µs/it", "speedup", "bits"],
            rows,
        )
    )


def _side_by_side_row(where: str, label: str, x: dict) -> list[str]:
    """One side of a benchmark beside another project's script: compile and run seconds,
    env-steps/s over all seeds, and the mean final return with its interval."""
    return [
        where,
        label,
        _s(x.get("compile_s"), ".1f"),
        _s(x.get("run_s"), ".1f"),
        _rate(x.get("steps_per_s_all_seeds")),
        _estimate(x.get("final_return_mean"), ".2f"),
    ]


def _estimate(final: dict | None, spec: str) -> str:
    """A mean over seeds with its interval, ``—`` if none was recorded; the point alone where
    the interval is a point (one seed)."""
    if not final:
        return "—"
    point = format(final["point"], spec)
    if final["low"] == final["high"]:
        return point
    return f"{point} [{format(final['low'], spec)}, {format(final['high'], spec)}]"


def craftax_baseline(r: dict[str, dict]) -> str:
    """``benchmarks/craftax_baseline.py``: PPO on Craftax-Classic beside Craftax_Baselines'
    ``ppo.py``, one table row per side and machine (this CPU's ``--size cpu``, an accelerator's
    ``--size full`` where one was measured), with what differs between the two runs."""
    rows, lines = [], []
    names = sorted(r, key=lambda n: (n != "craftax_baseline.json", n))  # the CPU's first
    for name in names:
        report = r[name]
        config, results = report["config"], report["results"]
        machine = report.get("machine", {})
        device = machine.get("devices", ["?"])[0]
        where = f"{device} ({machine.get('backend', '?')}), `--size {config['size']}`"
        rnn = config.get("algo") == "ppo-rnn"
        labels = (
            ("theirs", f"Craftax_Baselines {'ppo_rnn.py' if rnn else 'ppo.py'}"),
            ("ours", "jaxrl_fdg ppo, memory gru, their network" if rnn else "jaxrl_fdg ppo"),
        )
        for side, label in labels:
            rows.append(_side_by_side_row(where, label, results[side]))
        baseline = config["baseline"]
        version = (
            f"commit {baseline['commit'][:12]}"
            if baseline.get("commit")
            else f"ppo.py sha256 {baseline['sha256']['ppo.py'][:12]}"
        )
        lines.append(
            f"- {where} (`{name}`): {config['num_envs']} envs × {config['rollout_len']} steps, "
            f"{config['env_steps_per_seed']:,} env steps per seed, {config['seeds']} "
            f"seed{'s' * (config['seeds'] != 1)}; theirs: Craftax_Baselines {version}; "
            f"ours / theirs env-steps/s: {_ratio(results.get('ours_vs_theirs'))}."
        )
        if config.get("note"):
            lines.append(f"  Note: {config['note']}.")
        if config.get("repeats"):
            lines.append(f"  Repeats: {config['repeats']['note']}.")
        if config.get("earlier_run"):
            lines.append(f"  Also: {config['earlier_run']['note']}.")
    header = ["machine", "side", "compile s", "run s", "env-steps/s (all seeds)", "mean final "
              "return [95% CI]"]  # fmt: skip
    differences = r[names[0]]["results"]["differences"]
    return (
        f"`craftax/{ENV_CRAFTAX}`, the seeds vmapped in one program on each side, the same "
        "hyperparameters and network; env-steps/s after compile.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + _table(header, rows)
        + "\n\nWhat differs between the two runs:\n\n"
        + "\n".join(f"- {d}" for d in differences)
    )


def suite_curves(r: dict[str, dict]) -> str:
    """``benchmarks/suite_curves.py``: PPO's final return on one task of each JAX suite (mean
    over seeds, 95% bootstrap interval), its throughput and compile time."""
    report = r["suite_curves.json"]
    seeds = report["config"]["seeds"]
    rows = []
    for entry in report["results"].values():
        final = entry["final_return"]
        rows.append(
            [
                f"`{entry['env']}`",
                f"{entry['env_steps'][-1]:,}",
                f"{final['mean']:.3f} [{final['low']:.3f}, {final['high']:.3f}]",
                _rate(entry["env_steps_per_s"]),
                _s(entry["compile_s"], ".1f"),
            ]
        )
    header = [
        "env",
        "env steps per seed",
        f"final return, mean of {seeds} seeds [95% interval]",
        "env-steps/s (all seeds)",
        "compile s",
    ]
    return _table(header, rows)


def host_simulators(r: dict[str, dict]) -> str:
    report = r["host_simulators.json"]
    rows = []
    for case, x in report["results"].items():
        sims = [k for k in x if "/" in k]
        rows.append([case, *(_rate(x[k]["steps_per_s"]) for k in sims), _s(x["envpool_vs_gym"])])
    sims = [k for k in next(iter(report["results"].values())) if "/" in k]
    return _table(["case", *(f"`{s}` env-steps/s" for s in sims), "EnvPool / gymnasium"], rows)


def host_env(r: dict[str, dict]) -> str:
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


def brax_training(r: dict[str, dict]) -> str:
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


def brax_env_step(r: dict[str, dict]) -> str:
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


def brax_rollout_cost(r: dict[str, dict]) -> str:
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


def scaling(r: dict[str, dict]) -> str:
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


def placement(r: dict[str, dict]) -> str:
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


def actor_learner(r: dict[str, dict]) -> str:
    parts = []
    for report in r.values():
        rows = [
            [
                f"`{case}`",
                _rate(x["steps_per_s"]),
                _s(x["ratio_to_single"]),
                _s(x["compile_s"]),
                _s(x["final_return"], ".0f"),
            ]
            for case, x in report["results"].items()
        ]
        c = report["config"]
        rollout = f" × {c['rollout_len']} steps" if "rollout_len" in c else ""
        parts.append(
            f"{c['algo']} on {c['env']}, {c['num_envs']} envs{rollout}, `--fusion {c['fusion']}`, "
            f"medians of {c['repeats']}, on 2 forced CPU devices.\n\n"
            + _table(["placement", "env-steps/s", "/ single", "compile s", "final return"], rows)
        )
    return "\n\n".join(parts)


def replay(r: dict[str, dict]) -> str:
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


def replay_memory(r: dict[str, dict]) -> str:
    report = r["replay_memory.json"]
    sizes = report["config"]
    rows = [
        [
            f"`{name}`",
            f"{x['buffer_size']:,}",
            x["replay_storage"],
            "yes" if x["donate"] else "no",
            _s(x["replay_gb"], ".2f"),
            _s(x["peak_rss_gb"], ".2f"),
            f"{x['replay_size']:,}",
            x["updates"],
        ]
        for name, x in report["results"].items()
    ]
    header = [
        "case",
        "buffer_size",
        "storage",
        "donated",
        "replay GB",
        "peak resident GB",
        "stored",
        "updates",
    ]
    return (
        f"DQN, nature CNN, `envpool/Breakout-v5` (84×84×4 uint8), {sizes['num_envs']} envs × "
        f"{sizes['rollout_len']} steps, {sizes['total_steps']:,} steps in a fresh process per "
        "case; peak resident memory is the process's `ru_maxrss`.\n\n" + _table(header, rows)
    )


def soak_faults(r: dict[str, dict]) -> str:
    report = r["soak_faults.json"]
    rows = [
        [f"`{fault}`", x.get("passed", 0), x.get("failed", 0)]
        for fault, x in sorted(report["by_fault"].items())
    ]
    failures = len(report["failures"])
    text = (
        f"{report['rounds']} rounds in {report['minutes']} minutes (seed {report['seed']}), "
        f"{failures} failed.\n\n" + _table(["fault", "rounds passed", "rounds failed"], rows)
    )
    fuzz = report.get("fuzz")
    if fuzz:
        verdict = "passed" if fuzz["passed"] else "failed"
        text += (
            f"\n\nThen the fuzz tests, {fuzz['examples']} examples each: {verdict} "
            f"(`{fuzz['result']}`, {fuzz['minutes']} minutes)."
        )
    return text


def soak_hangs(r: dict[str, dict]) -> str:
    report = r["soak_hangs.json"]
    rows = [
        [f"`{case}`", f"{x['passed']} / {x['rounds']}", _s(max(x["seconds"]), ".1f")]
        for case, x in report["results"].items()
    ]
    return f"Deadline {report['deadline_s']:.0f} s per round.\n\n" + _table(
        ["case", "passed", "slowest round s"], rows
    )


def accelerator(r: dict[str, dict]) -> str:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import accelerator_table

    parts = []
    for name, report in r.items():
        parts.append(accelerator_table.table({**report, "path": f"benchmarks/results/{name}"}))
    return "\n\n".join(parts)


def pbt(r: dict[str, dict]) -> str:
    return "\n\n".join(_pbt(r[name]) for name in ("pbt.json", "pbt-brax.json") if name in r)


def _pbt(report: dict) -> str:
    config, results = report["config"], report["results"]
    steps = results["steps_to_threshold"]
    names = {
        "grid": "grid alone",
        "pbt": "PBT (defaults: redraw 1/4)",
        "pbt_perturb": "PBT, perturb only (`--pbt-resample 0`)",
    }
    rows = []
    for kind, name in names.items():
        best, median = steps[f"{kind}_best"], steps[f"{kind}_median"]
        rows.append(
            [
                name,
                ", ".join(f"{v:,.0f}" for v in best["per_seed"]),
                _interval(best["iqm"]),
                ", ".join(f"{v:,.0f}" for v in median["per_seed"]),
                _interval(median["iqm"]),
                results["lanes_reaching_threshold"][kind],
                ", ".join(
                    f"{f['best']:.0f} / {f['median']:.0f}"
                    for f in results.get("final_return_per_seed", {}).get(kind, [])
                ),
            ]
        )
    header = [
        "run",
        "best lane: steps per seed",
        "best lane IQM [95% CI]",
        "median lane: steps per seed",
        "median lane IQM [95% CI]",
        "lanes reaching it",
        "final return, best / median lane, per seed",
    ]
    grid = ", ".join(f"{v:g}" for v in config["hparams"]["lr"])
    return (
        f"**PPO on `{config['env']}`**, {config['num_envs']} envs × {config['rollout_len']} "
        f"steps, {config['total_steps']:,} env steps per lane, learning rate not annealed. "
        f"Lanes: the learning rates {grid}, each run one vmapped program; PBT every "
        f"{config['pbt_every']:,} env steps, quantile {config['pbt_quantile']}. Env steps until "
        f"a lane's logged training return first reaches {config['threshold']:g} (the budget "
        f"where it never does), seeds {', '.join(map(str, config['seeds']))}; IQM over seeds "
        "with a stratified bootstrap interval.\n\n"
        + _table(header, rows)
        + f"\n\n![The lineage of PBT at its defaults on {config['env']}, seed 0]"
        f"(img/{report['image']})"
    )


def _interval(estimate: dict) -> str:
    return f"{estimate['point']:,.0f} [{estimate['low']:,.0f}, {estimate['high']:,.0f}]"


def lanes(r: dict[str, dict]) -> str:
    report = r["lanes.json"]
    runs = report["config"]["runs"]
    header = [
        "algorithm",
        "lanes",
        "iterations",
        "env-steps/s (all lanes)",
        "× 1 lane's",
        "compile s",
        "peak memory",
        "state",
    ]
    rows = []
    for name, cases in report["results"].items():
        one = cases.get("1", {}).get("steps_per_s")
        for count, row in cases.items():
            if "steps_per_s" not in row:
                why = row.get("refused") or row.get("failed") or "timed out"
                rows.append([name.upper(), count, "", why, "", "", "", ""])
                continue
            memory = (
                f"{row['peak_bytes'] / 1e9:.2f} GB (device)"
                if row.get("peak_bytes") is not None
                else f"{row['peak_rss_gb']:.2f} GB (resident)"
            )
            rows.append(
                [
                    name.upper(),
                    count,
                    row.get("iterations", ""),
                    _rate(row["steps_per_s"]),
                    f"{row['steps_per_s'] / one:.1f}×" if one else "",
                    _s(row["compile_s"], ".1f"),
                    memory,
                    f"{row['state_gb'] * 1e3:,.1f} MB",
                ]
            )
    settings = "; ".join(
        f"{name.upper()} on `{c['env']}`, {c['num_envs']} envs × {c['rollout_len']} steps per "
        f"lane, {c['iterations']} iterations"
        + (
            f" or more (at least {c['min_env_steps']:,} env steps over all lanes)"
            if c["min_env_steps"]
            else ""
        )
        for name, c in runs.items()
    )
    return (
        f"Lanes (`--num-seeds`) of one vmapped program, each case in a fresh process: {settings}. "
        "Env-steps/s over all lanes, compile apart; peak memory is the process's resident peak on "
        "a CPU (Python and JAX included), the allocator's peak on a GPU. SAC's lanes: its "
        "learner's condition (warmed up, replay ready) is per lane, and the lanes skip the "
        "update together while none has warmed up (`jaxrl_fdg.branch.cond`; before 2026-11-29 "
        "a select ran it in every iteration, the warm-up's included, and several lanes made "
        "217-286 env-steps/s here). SAC updates from its 5th iteration.\n\n" + _table(header, rows)
    )


def time_to_result(r: dict[str, dict]) -> str:
    report = r["time_to_result.json"]
    config = report["config"]
    rows, ceilings = [], []
    for entry in report["results"].values():
        ratios, task = entry.get("ratios", {}), f"{entry['env']} to {entry['threshold']:g}"
        # each of ours that was measured, in the script's order: the right side of the ratios
        measured = list(dict.fromkeys(key.split(" / ")[1] for key in ratios))
        for i, (tool, x) in enumerate(entry["tools"].items()):
            over = [ratios.get(f"{tool} / {o}") for o in measured]
            rows.append([task if i == 0 else "", tool, *_time_to_result_row(x, over)])
        if entry.get("ceilings"):
            ceilings.append(
                f"{task}: " + ", ".join(f"`{k}` {v:.1f}×" for k, v in entry["ceilings"].items())
            )
    goals = ", ".join(f"`{k}` ≥ {v:g}×" for k, v in config["goals"].items())
    versions = "; ".join(
        f"{tool}: " + ", ".join(f"{k} {v}" for k, v in sorted(info.get("versions", {}).items()))
        for tool, info in config.get("venvs", {}).items()
        if info.get("ok")
    )
    header = [
        "task",
        "tool",
        "seconds per seed",
        "median s",
        "env steps at the threshold",
        "start s (ours: compile included)",
        "median / ours (defaults · tuned · tuned, warm cache)",
        "settings",
    ]
    ceiling_text = (
        "\n\nCeilings, each baseline's median over the median of our `start_s` (what ours would "
        "reach if training took no time once started): " + "; ".join(ceilings) + "."
        if ceilings
        else ""
    )
    return (
        "Wall seconds from a fresh process's launch to the first logged training return at or "
        f"above the threshold, imports and compile included; {config['seeds']} "
        f"seed{'s' * (config['seeds'] != 1)}, a budget of {config['budget_s']:g} s per run. The "
        "return is the mean over the episodes that ended in a window of env steps, the span of "
        "one of our logged rows (about 1/25 of our run), for every tool; the hand-written "
        "programs' times are interpolated within their one call "
        "(`benchmarks/time_to_result.py` says how each is measured). Ours run three ways where "
        "the task has a tuned config file (`examples/configs/`): the algorithm's defaults, the "
        "file, and the file again on the compilation cache a first run of it filled. Goal: "
        f"{goals}."
        + (f" Baselines: {versions}." if versions else "")
        + "\n\n"
        + _table(header, rows, "---|---|---:|---:|---:|---:|---:|---")
        + ceiling_text
        + f"\n\n![Seconds from launch to the threshold](img/{report['image']})"
    )


def _time_to_result_row(x: dict, over: list[dict | None]) -> list[str]:
    """One tool's cells: each seed's seconds, the median, env steps and start seconds per seed,
    its median over each of ours ("≥" where it missed its budget)."""
    if "runs" not in x:
        return ["—", "—", "—", "—", "—", x.get("skipped", "")]
    runs = x["runs"]
    if x["median_s"] is not None:
        median = f"{x['median_s']:.1f}"
    else:
        median = f"> {x['lower_bound_s']:.0f}"
    cells = [
        "—" if r is None else ("≥ " if r["lower_bound"] else "") + _ratio(r["value"], ".1f")
        for r in over
    ]
    ratio_cell = " · ".join(cells) if any(r is not None for r in over) else "—"
    return [
        ", ".join("> budget" if z["seconds"] is None else f"{z['seconds']:.1f}" for z in runs),
        median,
        ", ".join("—" if z["env_steps"] is None else f"{z['env_steps']:,}" for z in runs),
        ", ".join(_s(z.get("start_s"), ".1f") for z in runs),
        ratio_cell,
        x.get("settings", ""),
    ]


def experiment(r: dict[str, dict]) -> str:
    """A suite's report (``jaxrl-fdg report``): its tables, then its figures."""
    from jaxrl_fdg.experiment import report_text as reports

    ((name, result),) = r.items()
    suite = Path(name).parent.name
    minutes = result.get("wall_s", 0) / 60
    lines = [
        f"{result['stamp']['runs']} runs; the experiment took {minutes:.0f} min of wall time "
        f"(`experiment.toml` beside the file is what ran).",
        "",
    ]
    for heading, note, header, rows in reports.tables(result):
        lines += [f"**{heading}.** {note}", "", _table(header, rows), ""]
    for figure, path in result.get("figures", {}).items():
        title = reports.FIGURE_TITLES[figure]
        lines += [f"![{title}](img/experiments-{suite}-{Path(path).name})", ""]
    return "\n".join(lines)


def random_scores(r: dict[str, dict]) -> str:
    """The uniform random policy's mean return per environment, with its standard error."""
    report = r["random_scores.json"]
    rows = [
        [f"`{env}`", f"{v['mean']:.3f}", f"{v['stderr']:.3f}", f"{v['episodes']:,}"]
        for env, v in report["results"].items()
    ]
    return _table(["environment", "mean return", "standard error", "episodes"], rows)


def jaxmarl_baselines(r: dict[str, dict]) -> str:
    """``benchmarks/jaxmarl_baselines.py``: our multi-agent runs beside JaxMARL's own scripts,
    one row per side and pair (a results file of MPE pairs, or of SMAX pairs with win rates)."""
    (report,) = r.values()
    config, results = report["config"], report["results"]
    # PQN-trained VDN, recorded under its first name (vdn) before the recurrent VDN took it.
    labels = {"ippo_mpe": ("ippo_ff_mpe.py", "ippo"), "vdn_mpe": ("pqn_vdn_ff.py", "pqn-vdn")}
    wins = any("final_win_rate_mean" in result["ours"] for result in results.values())
    rows, lines = [], []
    for pair, result in results.items():
        spec = config["pairs"][pair]
        theirs_label, ours_label = labels.get(pair, (spec["script"].split("/")[-1], spec["algo"]))
        if spec.get("ours_config"):
            ours_label += f"` with `{spec['ours_config'].split('/')[-1]}"
        for side, label in (
            ("theirs", f"JaxMARL {theirs_label}"),
            ("ours", f"`--algo {ours_label}`"),
        ):
            row = _side_by_side_row(pair, label, result[side])
            if wins:
                row.append(_estimate(result[side].get("final_win_rate_mean"), ".0%"))
            rows.append(row)
        seeds = config["seeds"]
        lines.append(
            f"- `{pair}`: {result['env_steps_per_seed']:,} game steps per seed, "
            f"{seeds} seed{'s' if seeds > 1 else ''}; ours / theirs env-steps/s: "
            f"{_ratio(result.get('ours_vs_theirs'))}."
        )
    commit = (config.get("jaxmarl") or {}).get("commit") or "not recorded"
    vmapped = "Each side's seeds vmapped in one program, at" if config["seeds"] > 1 else "At"
    header = ["pair", "side", "compile s", "run s", "env-steps/s (all seeds)", "mean final "
              "return [95% CI]"]  # fmt: skip
    if wins:
        header.append("mean final win rate [95% CI]")
        about = (
            "SMAX (against the heuristic enemy); a return is an agent's (SMAX "
            "gives a team's agents the same reward), a win rate the fraction of the games that "
            "ended in an update that the team won (JaxMARL's QMIX script logs instead each "
            "step's last finished game, averaged over the update). One seed a side: with "
            "vmapped seeds JaxMARL's scripts deadlock XLA:CPU's 2-thread pool in a batched QR "
            "(their orthogonal initializers), so no interval"
        )
    else:
        about = (
            "`MPE_simple_spread_v3` (3 agents); a return is an agent's, averaged over the team "
            "(theirs divided by the 3 their MPE logger multiplies rewards by)"
        )
    return (
        f"{vmapped} JaxMARL's configurations (its repository at commit {commit[:12]}); "
        f"env-steps/s count games' steps after compile; {about}. A "
        "final figure is the mean over a seed's last tenth of updates.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + _table(header, rows)
    )

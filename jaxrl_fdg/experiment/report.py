"""``jaxrl-fdg report``: the statistics a paper reports, for an experiment or any run folders.

Every run is scored by the last value of the metric (``eval_return`` where every run evaluated,
else ``episode_return``). Per environment the scores are normalised to
``(score − random) / (reference − random)`` with the environment's row of the normalisation
table (the suite's, the experiment file's ``[normalize]``, or ``--normalize ENV=RANDOM:REF``),
so that tasks share one scale. Then, with 95% stratified bootstrap intervals
(:mod:`jaxrl_fdg.stats`, the method of Agarwal et al. 2021):

- per algorithm, over all its runs on all tasks: IQM, mean, median and optimality gap;
- performance profiles: the fraction of runs above each normalised score;
- probability of improvement ``P(X > Y)`` for every ordered pair of algorithms;
- sample efficiency: the aggregate IQM of the normalised metric against env steps;
- per environment: the raw final scores, and curves with an IQM band over seeds.

Written to the output folder: ``report.md`` and ``report.html`` (tables and figures),
``report.json`` (every number) and ``figures/*.png``, each stamped with the date, the commit of
the code that made the report, and the device and versions the runs recorded.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl_fdg import compare, plots, stats
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.experiment.folder import RECORD, ExperimentFolder

CURVE_POINTS = 25
CURVE_RESAMPLES = 500
_TITLES = {"median": "Median", "iqm": "IQM", "mean": "Mean", "optimality_gap": "Optimality gap"}


def parse_normalize(pairs: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``ENV=RANDOM:REFERENCE`` pairs as a table."""
    table = {}
    for pair in pairs:
        env, sep, scores = pair.rpartition("=")
        if not sep or not env:
            raise ConfigError(f"--normalize takes ENV=RANDOM:REFERENCE, got {pair!r}")
        bounds = compare.parse_normalize(scores)
        assert bounds is not None
        table[env] = bounds
    return table


def report(
    paths: Sequence[str | Path],
    out: str | Path | None = None,
    *,
    metric: str | None = None,
    normalize: Mapping[str, tuple[float, float]] | None = None,
    resamples: int = stats.RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Write the report of ``paths`` (one experiment folder, or run folders and folders of
    them) into ``out`` (default: the experiment folder; required for run folders) and return
    its numbers (what ``report.json`` holds)."""
    paths = [Path(p) for p in paths]
    labels, table, title = _runs(paths)
    if out is None:
        if len(paths) != 1 or not (paths[0] / RECORD).is_file():
            raise ConfigError("--out is needed for run folders (an experiment's report goes in it)")
        out = paths[0]
    out = Path(out)
    table = {**table, **(normalize or {})}
    runs = [run for members in labels.values() for run in members]
    metric = _metric(runs, metric)
    scores = {
        label: _by_env(members, lambda r: compare.final_score(r, metric))
        for label, members in labels.items()
    }
    envs = sorted({env for by_env in scores.values() for env in by_env})
    missing = [env for env in envs if env not in table]
    normalized = not missing
    if missing and len(envs) > 1:
        warn(
            f"no normalisation for {', '.join(missing)}: scores are aggregated per environment "
            "only (give --normalize ENV=RANDOM:REFERENCE, or [normalize] in the experiment file)"
        )
    norm = {
        label: {env: _normalise(s, table.get(env)) for env, s in by_env.items()}
        for label, by_env in scores.items()
    }
    result: dict[str, Any] = {
        "title": title,
        "stamp": _stamp(runs),
        "metric": metric,
        "normalization": {env: list(table[env]) for env in envs if env in table},
        "normalization_sources": _sources(envs, table, normalize or {}),
        "confidence": stats.CONFIDENCE,
        "resamples": resamples,
        "per_env": {
            label: {
                env: {
                    "runs": len(s),
                    "scores": s.tolist(),
                    **_point_and_interval(s, resamples, seed),
                }
                for env, s in by_env.items()
            }
            for label, by_env in scores.items()
        },
    }
    if normalized or len(envs) == 1:
        strata = norm if normalized else scores
        names = stats.AGGREGATES if normalized else stats.AGGREGATES[:-1]
        result["aggregates"] = {
            label: {
                name: e._asdict()
                for name, e in stats.interval_estimates(
                    list(by_env.values()), names, resamples=resamples, seed=seed
                ).items()
            }
            for label, by_env in strata.items()
        }
        result["aggregate_scale"] = "normalised" if normalized else "raw"
        result["profiles"] = _profiles(strata, resamples, seed)
        result["improvement"] = _improvement(strata, resamples, seed)
        result["sample_efficiency"] = _sample_efficiency(
            labels, table if normalized else {}, _curve_metric(runs, metric), seed
        )
    figures = _draw(result, labels, out)
    result["figures"] = figures
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2, default=_plain) + "\n")
    (out / "report.md").write_text(markdown(result))
    (out / "report.html").write_text(to_html(result))
    return result


# -- gathering --------------------------------------------------------------------------------


def _runs(paths: list[Path]) -> tuple[dict[str, list[plots.Run]], dict, str]:
    """The runs by algorithm label, the normalisation table and the report's title."""
    from jaxrl_fdg.experiment import suites

    if len(paths) == 1 and (paths[0] / RECORD).is_file():
        folder = ExperimentFolder(paths[0])
        record = folder.read()
        table = _shipped_table()
        if record.get("suite") in suites.SUITES:
            table.update(suites.SUITES[record["suite"]].normalize)
        table.update({k: tuple(v) for k, v in record.get("file", {}).get("normalize", {}).items()})
        labels: dict[str, list[plots.Run]] = {}
        settings = {c["setting"] for c in record["cells"].values()}
        for name, cell in record["cells"].items():
            run_dir = folder.run_dir(name)
            if folder.state(name) != "done":
                warn(f"cell {name} is {folder.state(name)}: left out of the report")
                continue
            algo = cell.get("label", cell["algo"])
            label = algo if settings == {"default"} else f"{algo}-{cell['setting']}"
            labels.setdefault(label, []).extend(plots.find_runs([run_dir]))
        if not labels:
            raise ConfigError(
                f"{str(paths[0])!r}: no cell is done yet (jaxrl-fdg experiment status)"
            )
        return labels, table, f"Experiment {record['name']}"
    runs = plots.find_runs(paths)
    labels = {}
    for run in runs:
        labels.setdefault(str(run.config.get("algo")), []).append(run)
    return labels, _shipped_table(), "Report"


def _sources(envs, table, given) -> dict[str, list[str]]:
    """Where the normalisation rows come from: each source with its environments."""
    from jaxrl_fdg.experiment.suites import SUITES

    out: dict[str, list[str]] = {}
    for env in envs:
        suite = next((s for s in SUITES.values() if s.normalize.get(env) == table.get(env)), None)
        if env in given:
            source = "--normalize"
        elif suite is not None:
            source = (
                f"suite {suite.name} (random: the uniform random policy's mean return, "
                f"benchmarks/random_scores.py; reference: {suite.reference_source})"
            )
        elif env in table:
            source = "the experiment file's [normalize]"
        else:
            continue
        out.setdefault(source, []).append(env)
    return out


def _shipped_table() -> dict[str, tuple[float, float]]:
    """The suites' normalisation rows, for any environment one of them holds."""
    from jaxrl_fdg.experiment.suites import SUITES

    return {env: pair for suite in SUITES.values() for env, pair in suite.normalize.items()}


def _by_env(runs: Sequence[plots.Run], score) -> dict[str, np.ndarray]:
    by_env: dict[str, list[float]] = {}
    for run in runs:
        by_env.setdefault(str(run.config.get("env")), []).append(score(run))
    return {env: np.asarray(v, float) for env, v in sorted(by_env.items())}


def _metric(runs: Sequence[plots.Run], metric: str | None) -> str:
    if metric is not None:
        plots.check_column(runs, metric)
        return metric
    if all(any(compare.DEFAULT_METRIC in row for row in run.rows) for run in runs):
        return compare.DEFAULT_METRIC
    return compare.FALLBACK_METRIC


def _curve_metric(runs: Sequence[plots.Run], metric: str) -> str:
    """The metric of the curves: the scores' own where runs log it at several points, else
    the training return every run logs at each boundary."""
    points = min(sum(plots.is_number(r.get(metric)) for r in run.rows) for run in runs)
    return metric if points >= 3 else compare.FALLBACK_METRIC


def _normalise(scores: np.ndarray, bounds: tuple[float, float] | None) -> np.ndarray:
    if bounds is None:
        return scores
    low, high = bounds
    return (scores - low) / (high - low)


# -- statistics -------------------------------------------------------------------------------


def _point_and_interval(scores: np.ndarray, resamples: int, seed: int) -> dict[str, Any]:
    estimates = stats.interval_estimates([scores], ("mean", "iqm"), resamples=resamples, seed=seed)
    return {name: e._asdict() for name, e in estimates.items()}


def _profiles(strata: Mapping[str, Mapping[str, np.ndarray]], resamples: int, seed: int):
    pooled = np.concatenate([s for by_env in strata.values() for s in by_env.values()])
    top = max(1.0, float(np.max(pooled))) if pooled.size else 1.0
    low = min(0.0, float(np.min(pooled))) if pooled.size else 0.0
    thresholds = np.linspace(low, top, 41)
    out = {"thresholds": thresholds.tolist()}
    for label, by_env in strata.items():
        fraction, lo, hi = stats.performance_profile(
            list(by_env.values()), thresholds, resamples=min(resamples, 2000), seed=seed
        )
        out[label] = {"fraction": fraction.tolist(), "low": lo.tolist(), "high": hi.tolist()}
    return out


def _improvement(strata: Mapping[str, Mapping[str, np.ndarray]], resamples: int, seed: int):
    pairs = []
    labels = list(strata)
    for x in labels:
        for y in labels:
            if x == y:
                continue
            tasks = sorted(set(strata[x]) & set(strata[y]))
            if not tasks:
                continue
            e = stats.probability_of_improvement(
                [strata[x][t] for t in tasks],
                [strata[y][t] for t in tasks],
                resamples=resamples,
                seed=seed,
            )
            pairs.append({"x": x, "y": y, "tasks": len(tasks), **e._asdict()})
    return pairs


def _sample_efficiency(
    labels: Mapping[str, list[plots.Run]], table: Mapping, metric: str, seed: int
) -> dict[str, Any]:
    """Aggregate IQM (with its interval) of the normalised ``metric`` at ``CURVE_POINTS`` env
    steps, each run's value there the last it logged at or before that step."""
    runs = [run for members in labels.values() for run in members]
    top = max(max((r.get("step", 0) for r in run.rows), default=0) for run in runs)
    grid = np.linspace(0, top, CURVE_POINTS + 1)[1:]
    out: dict[str, Any] = {"metric": metric, "env_steps": grid.tolist()}
    for label, members in labels.items():
        values = {}
        for run in members:
            env = str(run.config.get("env"))
            curve = _step_values(run, metric, grid)
            values.setdefault(env, []).append(_normalise(curve, table.get(env)))
        iqm, low, high = [], [], []
        for i in range(len(grid)):
            strata = [np.array([v[i] for v in vs]) for vs in values.values()]
            strata = [s[~np.isnan(s)] for s in strata]
            strata = [s for s in strata if s.size]
            if not strata:
                iqm.append(math.nan), low.append(math.nan), high.append(math.nan)
                continue
            e = stats.interval_estimates(strata, ("iqm",), resamples=CURVE_RESAMPLES, seed=seed)
            iqm.append(e["iqm"].point), low.append(e["iqm"].low), high.append(e["iqm"].high)
        out[label] = {"iqm": iqm, "low": low, "high": high}
    return out


def _step_values(run: plots.Run, metric: str, grid: np.ndarray) -> np.ndarray:
    rows = [
        (r["step"], r[metric])
        for r in run.rows
        if plots.is_number(r.get(metric)) and math.isfinite(r[metric]) and "step" in r
    ]
    if not rows:
        return np.full(len(grid), np.nan)
    steps, values = np.array(rows, float).T
    index = np.searchsorted(steps, grid, side="right") - 1
    # Nothing before the first row, nor past the run's end (a shorter budget is not carried on).
    inside = (index >= 0) & (grid <= steps[-1] + (grid[1] - grid[0] if len(grid) > 1 else 0))
    return np.where(inside, values[np.maximum(index, 0)], np.nan)


# -- stamp ------------------------------------------------------------------------------------


def _stamp(runs: Sequence[plots.Run]) -> dict[str, Any]:
    from jaxrl_fdg.profiling.report import recorded
    from jaxrl_fdg.run import versions

    here = recorded(str(Path(__file__).resolve().parent))
    seen: dict[str, set[str]] = {}
    for run in runs:
        folder = run.path if (run.path / versions.FILE).is_file() else run.path.parent
        for entry in versions.read(folder):
            for key in ("device", "jax", "jaxlib", "python", "jaxrl-fdg"):
                if key in entry["versions"]:
                    seen.setdefault(key, set()).add(str(entry["versions"][key]))
    return {
        "date": here["date"],
        "commit": here["commit"],
        "dirty": here["dirty"],
        "runs": len(runs),
        **{key: ", ".join(sorted(values)) for key, values in sorted(seen.items())},
    }


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(type(value).__name__)


# -- figures ----------------------------------------------------------------------------------


def _draw(result: dict[str, Any], labels: Mapping[str, list[plots.Run]], out: Path) -> dict:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter

    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    colors = {label: f"C{i}" for i, label in enumerate(labels)}
    made = {}

    def save(fig, name):
        FigureCanvasAgg(fig)
        fig.savefig(figures_dir / name, dpi=90)
        made[name.removesuffix(".png")] = f"figures/{name}"

    if "aggregates" in result:
        aggregates = result["aggregates"]
        names = list(next(iter(aggregates.values())))
        fig = Figure(figsize=(2.6 * len(names), 1.2 + 0.4 * len(aggregates)), layout="constrained")
        axes = np.atleast_1d(fig.subplots(1, len(names)))
        for ax, name in zip(axes, names, strict=True):
            _intervals(ax, [(est[name], colors[label]) for label, est in aggregates.items()])
            ax.set_yticks(range(len(aggregates)), list(aggregates) if ax is axes[0] else [])
            ax.set_title(_TITLES[name])
            ax.grid(axis="x", alpha=0.3)
        save(fig, "aggregates.png")

        profiles = result["profiles"]
        fig = Figure(figsize=(5, 3.4), layout="constrained")
        ax = fig.subplots()
        tau = np.array(profiles["thresholds"])
        for label in aggregates:
            p = profiles[label]
            _line(ax, tau, p["fraction"], p["low"], p["high"], colors[label], label)
        ax.set_xlabel(f"{_scale(result)} score τ")
        ax.set_ylabel("fraction of runs with score > τ")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        save(fig, "profiles.png")

        if result["improvement"]:
            # One direction of each pair (P(Y > X) is 1 − P(X > Y)): X before Y in the order.
            order = list(aggregates)
            pairs = [p for p in result["improvement"] if order.index(p["x"]) < order.index(p["y"])]
            fig = Figure(figsize=(5, 0.8 + 0.35 * len(pairs)), layout="constrained")
            ax = fig.subplots()
            _intervals(ax, [(p, colors[p["x"]]) for p in pairs])
            ax.set_yticks(range(len(pairs)), [f"P({p['x']} > {p['y']})" for p in pairs])
            ax.axvline(0.5, color="gray", linestyle="--", linewidth=1)
            ax.set_xlim(0, 1)
            ax.set_xlabel("probability of improvement")
            save(fig, "improvement.png")

        eff = result["sample_efficiency"]
        fig = Figure(figsize=(5, 3.4), layout="constrained")
        ax = fig.subplots()
        x = np.array(eff["env_steps"])
        for label in aggregates:
            c = eff[label]
            _line(ax, x, c["iqm"], c["low"], c["high"], colors[label], label)
        ax.set_xlabel("env steps (per seed)")
        ax.xaxis.set_major_formatter(EngFormatter())
        ax.set_ylabel(f"IQM of {_scale(result)} {eff['metric']}")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        save(fig, "sample_efficiency.png")

    envs = sorted({str(r.config.get("env")) for runs in labels.values() for r in runs})
    columns = min(3, len(envs))
    rows = math.ceil(len(envs) / columns)
    fig = Figure(figsize=(4.2 * columns, 3.0 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, columns)).ravel()
    metric = result.get("sample_efficiency", {}).get("metric") or _curve_metric(
        [r for runs in labels.values() for r in runs], result["metric"]
    )
    for ax, env in zip(axes, envs, strict=False):
        for label, runs in labels.items():
            mine = [r for r in runs if str(r.config.get("env")) == env]
            if not mine:
                continue
            b = plots.band(mine, metric, "step", ci="iqm" if len(mine) > 1 else "std")
            _line(ax, b.x, b.center, b.low, b.high, colors[label], label)
        ax.set_title(env, fontsize=9)
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(EngFormatter())
        ax.grid(alpha=0.3)
    for ax in axes[len(envs) :]:
        ax.set_visible(False)
    axes[0].set_ylabel(metric)
    axes[0].legend(fontsize=8)
    save(fig, "curves.png")
    return made


def _intervals(ax, rows: list[tuple[Mapping[str, float], str]]) -> None:
    """One bar per row, top to bottom: its interval shaded, its point a black tick."""
    for i, (e, color) in enumerate(rows):
        ax.barh(i, e["high"] - e["low"], left=e["low"], height=0.6, color=color, alpha=0.6)
        ax.plot([e["point"]] * 2, [i - 0.3, i + 0.3], color="black", linewidth=1.5)
    ax.invert_yaxis()


def _line(ax, x, center, low, high, color: str, label: str) -> None:
    ax.plot(x, center, color=color, label=label)
    ax.fill_between(x, low, high, color=color, alpha=0.2)


def _scale(result: dict[str, Any]) -> str:
    return "normalised" if result.get("aggregate_scale") == "normalised" else "raw"


# -- text -------------------------------------------------------------------------------------


def _cell(e: Mapping[str, float], fmt: str = ".3f") -> str:
    return f"{e['point']:{fmt}} [{e['low']:{fmt}}, {e['high']:{fmt}}]"


def _improvement_matrix(pairs: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    labels = list(dict.fromkeys([p["x"] for p in pairs] + [p["y"] for p in pairs]))
    cells = {(p["x"], p["y"]): _cell(p, ".2f") for p in pairs}
    rows = [[x] + [cells.get((x, y), "—") for y in labels] for x in labels]
    return ["X \\ Y", *labels], rows


def tables(result: dict[str, Any]) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """The report's tables as (heading, note, header, rows), for Markdown and HTML alike."""
    out = []
    pct = f"{result['confidence']:.0%}"
    if "aggregates" in result:
        aggregates = result["aggregates"]
        names = list(next(iter(aggregates.values())))
        per_env = result["per_env"]
        runs = {label: sum(v["runs"] for v in per_env[label].values()) for label in aggregates}
        task_sets = {frozenset(per_env[label]) for label in aggregates}
        caution = (
            " The algorithms ran on different sets of environments (pairs that do not fit are "
            "left out): each aggregate is over its own; P(X > Y) below uses the environments "
            "both ran."
            if len(task_sets) > 1
            else ""
        )
        out.append(
            (
                "Aggregate scores",
                f"{_scale(result).capitalize()} final {result['metric']} over all runs and "
                f"environments; {pct} stratified bootstrap intervals ({result['resamples']} "
                f"resamples). Lower is better for the optimality gap.{caution}",
                ["algorithm", "envs", "runs", *[_TITLES[n] for n in names]],
                [
                    [label, str(len(per_env[label])), str(runs[label])]
                    + [_cell(est[n]) for n in names]
                    for label, est in aggregates.items()
                ],
            )
        )
        if result["improvement"]:
            out.append(
                (
                    "Probability of improvement",
                    "P(X > Y), X the row and Y the column: the chance that a run of X scores "
                    "above a run of Y on an environment drawn at random from those both ran "
                    f"(ties count half), with its {pct} interval; P(Y > X) = 1 − P(X > Y).",
                    *_improvement_matrix(result["improvement"]),
                )
            )
    envs = sorted({env for by_env in result["per_env"].values() for env in by_env})
    labels = list(result["per_env"])
    rows = []
    for env in envs:
        row = [env]
        for label in labels:
            e = result["per_env"][label].get(env)
            row.append("—" if e is None else f"{_cell(e['iqm'], '.4g')} (n={e['runs']})")
        bounds = result["normalization"].get(env)
        row.append("—" if bounds is None else f"{bounds[0]:g} / {bounds[1]:g}")
        rows.append(row)
    out.append(
        (
            "Per environment",
            f"Raw final {result['metric']}: IQM over seeds [{pct} interval]; the last column "
            "is the normalisation (random / reference), from "
            + "; ".join(
                f"{source} for {', '.join(envs)}"
                for source, envs in result.get("normalization_sources", {}).items()
            )
            + ".",
            ["environment", *labels, "random / reference"],
            rows,
        )
    )
    return out


FIGURE_TITLES = {
    "aggregates": "Aggregate scores",
    "profiles": "Performance profiles",
    "improvement": "Probability of improvement",
    "sample_efficiency": "Sample efficiency",
    "curves": "Learning curves by environment",
}


def _stamp_line(result: dict[str, Any]) -> str:
    s = result["stamp"]
    commit = (s.get("commit") or "unknown")[:10] + (
        " (uncommitted changes)" if s.get("dirty") else ""
    )
    parts = [f"made {s['date']}", f"code {commit}", f"{s['runs']} runs"]
    parts += [f"{k} {s[k]}" for k in ("device", "jax", "jaxlib", "python") if s.get(k)]
    return " · ".join(parts)


def markdown(result: dict[str, Any]) -> str:
    """The report as Markdown: stamp, tables, figures."""
    lines = [f"# {result['title']}", "", _stamp_line(result), ""]
    for heading, note, header, rows in tables(result):
        lines += [f"## {heading}", "", note, ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    for name, path in result["figures"].items():
        lines += [f"## {FIGURE_TITLES[name]}", "", f"![{FIGURE_TITLES[name]}]({path})", ""]
    return "\n".join(lines)


def to_html(result: dict[str, Any]) -> str:
    """The same report as one HTML page (the figures beside it, by relative path)."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(result['title'])}</title>",
        "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em}"
        "td{text-align:right}td:first-child{text-align:left}</style></head><body>",
        f"<h1>{e(result['title'])}</h1><p>{e(_stamp_line(result))}</p>",
    ]
    for heading, note, header, rows in tables(result):
        parts.append(f"<h2>{e(heading)}</h2><p>{e(note)}</p><table><tr>")
        parts += [f"<th>{e(h)}</th>" for h in header]
        parts.append("</tr>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
        parts.append("</table>")
    for name, path in result["figures"].items():
        parts.append(f"<h2>{e(FIGURE_TITLES[name])}</h2><img src='{e(path)}' alt='{e(name)}'>")
    parts.append("</body></html>\n")
    return "\n".join(parts)

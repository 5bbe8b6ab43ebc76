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

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl_fdg import compare, plots, stats
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.experiment import report_figures, report_text
from jaxrl_fdg.experiment.folder import RECORD, ExperimentFolder

CURVE_POINTS = 25
CURVE_RESAMPLES = 500


def parse_normalize(pairs: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``ENV=RANDOM:REFERENCE`` pairs as a table."""
    table = {}
    for pair in pairs:
        env, sep, scores = pair.rpartition("=")
        if not sep or not env:
            raise ConfigError(f"--normalize takes ENV=RANDOM:REFERENCE, got {pair!r}")
        table[env] = compare.parse_bounds(scores)
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
    out = _output(paths, out)
    table = {**table, **(normalize or {})}
    runs = [run for members in labels.values() for run in members]
    metric = compare.scored_metric(runs, metric, say=False)
    scores = {
        label: _by_env(members, lambda r: compare.final_score(r, metric))
        for label, members in labels.items()
    }
    envs = sorted({env for by_env in scores.values() for env in by_env})
    normalized = _normalisable(envs, table)
    norm = {
        label: {env: _normalise(s, table.get(env)) for env, s in by_env.items()}
        for label, by_env in scores.items()
    }
    result: dict[str, Any] = {
        "title": title,
        "stamp": _stamp(runs),
        "metric": metric,
        "curve_metric": _curve_metric(runs, metric),
        "normalization": {env: list(table[env]) for env in envs if env in table},
        "normalization_sources": _sources(envs, table, normalize or {}),
        "confidence": stats.CONFIDENCE,
        "resamples": resamples,
        "per_env": {
            label: {env: _per_env(s, resamples, seed) for env, s in by_env.items()}
            for label, by_env in scores.items()
        },
    }
    if normalized or len(envs) == 1:
        result.update(
            _aggregate(norm if normalized else scores, normalized, resamples, seed),
            sample_efficiency=_sample_efficiency(
                labels, table if normalized else {}, result["curve_metric"], seed
            ),
        )
    figures = report_figures.draw(result, labels, out)
    result["figures"] = figures
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(result, indent=2, default=_plain) + "\n")
    (out / "report.md").write_text(report_text.markdown(result))
    (out / "report.html").write_text(report_text.to_html(result))
    return result


def _output(paths: list[Path], out: str | Path | None) -> Path:
    if out is not None:
        return Path(out)
    if len(paths) != 1 or not (paths[0] / RECORD).is_file():
        raise ConfigError("--out is needed for run folders (an experiment's report goes in it)")
    return paths[0]


def _normalisable(envs: list[str], table: Mapping) -> bool:
    """Whether every environment has a normalisation row (else a warning when there are
    several: their raw scores cannot be pooled)."""
    missing = [env for env in envs if env not in table]
    if missing and len(envs) > 1:
        warn(
            f"no normalisation for {', '.join(missing)}: scores are aggregated per environment "
            "only (give --normalize ENV=RANDOM:REFERENCE, or [normalize] in the experiment file)"
        )
    return not missing


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
            state = folder.state(name)
            if state != "done":
                warn(f"cell {name} is {state}: left out of the report")
                continue
            algo = cell.get("label", cell["algo"])
            label = algo if settings == {"default"} else f"{algo}-{cell['setting']}"
            labels.setdefault(label, []).extend(plots.find_runs([folder.run_dir(name)]))
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


def _per_env(scores: np.ndarray, resamples: int, seed: int) -> dict[str, Any]:
    """One algorithm's raw scores on one environment, their mean and IQM with intervals."""
    estimates = stats.interval_estimates([scores], ("mean", "iqm"), resamples=resamples, seed=seed)
    return {
        "runs": len(scores),
        "scores": scores.tolist(),
        **{name: e._asdict() for name, e in estimates.items()},
    }


def _aggregate(strata, normalized: bool, resamples: int, seed: int) -> dict[str, Any]:
    """Each algorithm's aggregates over its environments (the optimality gap only on the
    normalised scale), the performance profiles and the probability of improvement."""
    names = stats.AGGREGATES if normalized else stats.AGGREGATES[:-1]
    estimates = {
        label: stats.interval_estimates(
            list(by_env.values()), names, resamples=resamples, seed=seed
        )
        for label, by_env in strata.items()
    }
    return {
        "aggregates": {
            label: {name: e._asdict() for name, e in est.items()}
            for label, est in estimates.items()
        },
        "aggregate_scale": "normalised" if normalized else "raw",
        "profiles": _profiles(strata, resamples, seed),
        "improvement": _improvement(strata, resamples, seed),
    }


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

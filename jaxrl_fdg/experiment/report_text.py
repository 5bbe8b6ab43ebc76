"""The report as text: its tables (the same for Markdown, HTML and the docs' pages), and the
Markdown and HTML pages themselves (:mod:`jaxrl_fdg.experiment.report` computes the numbers)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from jaxrl_fdg.compare import TITLES


def scale(result: dict[str, Any]) -> str:
    """``normalised`` or ``raw``: the scale of the report's aggregates."""
    return "normalised" if result.get("aggregate_scale") == "normalised" else "raw"


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
    if "aggregates" in result:
        out.append(_aggregates(result))
        if result["improvement"]:
            out.append(
                (
                    "Probability of improvement",
                    "P(X > Y), X the row and Y the column: the chance that a run of X scores "
                    "above a run of Y on an environment drawn at random from those both ran "
                    f"(ties count half), with its {_percent(result)} interval; "
                    "P(Y > X) = 1 − P(X > Y).",
                    *_improvement_matrix(result["improvement"]),
                )
            )
    out.append(_per_env(result))
    return out


def _percent(result: dict[str, Any]) -> str:
    return f"{result['confidence']:.0%}"


def _aggregates(result: dict[str, Any]) -> tuple[str, str, list[str], list[list[str]]]:
    aggregates, per_env = result["aggregates"], result["per_env"]
    names = list(next(iter(aggregates.values())))
    runs = {label: sum(v["runs"] for v in per_env[label].values()) for label in aggregates}
    caution = (
        " The algorithms ran on different sets of environments (pairs that do not fit are "
        "left out): each aggregate is over its own; P(X > Y) below uses the environments "
        "both ran."
        if len({frozenset(per_env[label]) for label in aggregates}) > 1
        else ""
    )
    return (
        "Aggregate scores",
        f"{scale(result).capitalize()} final {result['metric']} over all runs and "
        f"environments; {_percent(result)} stratified bootstrap intervals "
        f"({result['resamples']} resamples). Lower is better for the optimality gap.{caution}",
        ["algorithm", "envs", "runs", *[TITLES[n] for n in names]],
        [
            [label, str(len(per_env[label])), str(runs[label])] + [_cell(est[n]) for n in names]
            for label, est in aggregates.items()
        ],
    )


def _per_env(result: dict[str, Any]) -> tuple[str, str, list[str], list[list[str]]]:
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
    sources = "; ".join(
        f"{source} for {', '.join(names)}"
        for source, names in result.get("normalization_sources", {}).items()
    )
    return (
        "Per environment",
        f"Raw final {result['metric']}: IQM over seeds [{_percent(result)} interval]; the last "
        f"column is the normalisation (random / reference), from {sources or 'no table'}.",
        ["environment", *labels, "random / reference"],
        rows,
    )


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

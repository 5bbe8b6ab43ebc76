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
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import page_tables as tables  # noqa: E402

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
        stamp = report.get("stamp", {})
        if "device" in stamp:  # an experiment's report: what its runs recorded
            return (
                f"{stamp['device']}, JAX {stamp.get('jax', '?')}, Python {stamp.get('python', '?')}"
            )
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
    """``name`` · date · commit · device · load, each as the file recorded it (an experiment's
    ``report.json`` keeps them in its ``stamp``)."""
    recorded = report.get("recorded") or report.get("stamp", {})
    date = recorded.get("date") or report.get("date") or NOT_RECORDED
    commit = recorded.get("commit") or report.get("commit") or NOT_RECORDED
    if recorded.get("dirty"):
        commit += " (with uncommitted changes)"
    if recorded.get("source"):  # stamped afterwards from git, not when it was measured
        date += " (committed; measured before)"
        commit += " (the commit that wrote the file)"
    return (
        f"`benchmarks/results/{name}` · date: {date} · commit: {commit} · "
        f"device: {_device(report)} · load: {_load(report)}"
    )


# ---------------------------------------------------------------- pages


def _accelerator_files() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in RESULTS.glob("accelerator-*.json")))


def _brax_training_files() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in RESULTS.glob("brax_training-*.json")))


def _pbt_files() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in RESULTS.glob("pbt*.json")))


def _craftax_accelerator_files() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in RESULTS.glob("craftax_baseline-*.json")))


def _experiment_files() -> tuple[str, ...]:
    return tuple(
        str(p.relative_to(RESULTS)) for p in sorted(RESULTS.glob("experiments/*/report.json"))
    )


def _measured(section: Section) -> tuple[Section, ...]:
    """``section`` once its results files exist: a benchmark not yet measured has no section."""
    return (section,) if all((RESULTS / name).exists() for name in section.files) else ()


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
                    tables.defaults,
                    "python benchmarks/defaults.py",
                ),
                Section(
                    "Two installs' default runs in interleaved cold pairs",
                    ("cold_pairs.json",),
                    tables.cold_pairs,
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
                    tables.fusion_modes,
                    "python benchmarks/fusion_modes.py; python benchmarks/fusion_modes.py --cpus 1",
                ),
                Section(
                    "`--fusion scan` against hand-written programs, in pairs",
                    ("handwritten_pairs.json",),
                    tables.handwritten_pairs,
                    "python benchmarks/handwritten_pairs.py",
                ),
                Section(
                    "The same steady state under XLA:CPU's options",
                    ("run_options.json",),
                    tables.run_options,
                    "python benchmarks/run_options.py",
                ),
                Section(
                    "Every algorithm under every mode",
                    ("algorithms.json",),
                    tables.algorithms,
                    "python benchmarks/algorithms.py --algos all",
                ),
                Section(
                    "Modes compared in paired rounds",
                    ("mode_pairs.json",),
                    tables.mode_pairs,
                    "python benchmarks/mode_pairs.py",
                ),
                Section(
                    "Two installs' modes in interleaved pairs",
                    ("mode_pairs_baseline.json",),
                    tables.mode_pairs_baseline,
                    "python benchmarks/mode_pairs.py --baseline PYTHON --pairs 3",
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
                    tables.profile_overhead,
                    "python benchmarks/profile_overhead.py; python benchmarks/profile_overhead.py "
                    "--fusion step --total-steps 51200",
                ),
                Section(
                    "Where an iteration goes, against the roofline",
                    ("roofline.json",),
                    tables.roofline,
                    "python benchmarks/roofline.py --algos ppo,dqn,sac --fusion scan",
                ),
                Section(
                    "The `loop` share of a trace: ours, a hand-written scan, a reproducer",
                    ("loop_share.json",),
                    tables.loop_share,
                    "python benchmarks/loop_share.py",
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
                    tables.compile_time,
                    "python benchmarks/compile_time.py",
                ),
                Section(
                    "The persistent compilation cache",
                    ("compile_cache.json",),
                    tables.compile_cache,
                    "python benchmarks/compile_cache.py",
                ),
                Section(
                    "Warm start: launch to the first iteration",
                    ("warm_start.json",),
                    tables.warm_start,
                    "python benchmarks/warm_start.py",
                ),
                Section(
                    "Compiler options, paired",
                    ("compile_options.json",),
                    tables.compile_options,
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
                    tables.learning,
                    "python benchmarks/learning.py",
                ),
                Section(
                    "Brax and MinAtar curves",
                    ("simulator_curves.json",),
                    tables.simulator_curves,
                    "python benchmarks/simulator_curves.py",
                ),
                Section(
                    "PQN and PPO on MinAtar Breakout at their references' settings",
                    ("minatar_references.json",),
                    tables.minatar_references,
                    "python benchmarks/minatar_references.py",
                ),
                Section(
                    "Population-based training against the grid it starts from",
                    _pbt_files(),
                    tables.pbt,
                    "python benchmarks/pbt.py [--task brax]",
                ),
                Section(
                    "Atari: where a step's time goes, and short DQN and PQN runs",
                    ("atari_profile.json",),
                    tables.atari_profile,
                    "python benchmarks/atari_profile.py",
                ),
                *_measured(
                    Section(
                        "Time to a return, against Stable-Baselines3, sbx and hand-written "
                        "programs",
                        ("time_to_result.json",),
                        tables.time_to_result,
                        "python benchmarks/time_to_result.py",
                    )
                ),
                *_measured(
                    Section(
                        "PPO on Craftax-Classic beside Craftax_Baselines' ppo.py",
                        ("craftax_baseline.json", *_craftax_accelerator_files()),
                        tables.craftax_baseline,
                        "python benchmarks/craftax_baseline.py --baseline-dir PATH --size cpu "
                        "(here); --size full --out results/craftax_baseline-DEVICE.json (on an "
                        "accelerator)",
                    )
                ),
                *_measured(
                    Section(
                        "IPPO and VDN on MPE beside JaxMARL's own scripts",
                        ("jaxmarl_baselines.json",),
                        tables.jaxmarl_baselines,
                        "python benchmarks/jaxmarl_baselines.py --jaxmarl-dir PATH --size cpu "
                        "--pairs ippo_mpe,vdn_mpe",
                    )
                ),
                *_measured(
                    Section(
                        "Recurrent MAPPO on SMAX beside JaxMARL's own script",
                        ("jaxmarl_baselines_mappo_smax.json",),
                        tables.jaxmarl_baselines,
                        "python benchmarks/jaxmarl_baselines.py --jaxmarl-dir PATH --size cpu "
                        "--pairs mappo_smax",
                    )
                ),
                *_measured(
                    Section(
                        "QMIX on SMAX beside JaxMARL's own script",
                        ("jaxmarl_baselines_qmix_smax.json",),
                        tables.jaxmarl_baselines,
                        "python benchmarks/jaxmarl_baselines.py --jaxmarl-dir PATH --size cpu "
                        "--pairs qmix_smax",
                    )
                ),
                *_measured(
                    Section(
                        "PPO-RNN on Craftax-Classic beside Craftax_Baselines' ppo_rnn.py",
                        ("craftax_baseline_rnn.json",),
                        tables.craftax_baseline,
                        "python benchmarks/craftax_baseline.py --baseline-dir PATH --algo ppo-rnn "
                        "--size cpu",
                    )
                ),
                *_measured(
                    Section(
                        "PPO on one task of each JAX suite, several seeds",
                        ("suite_curves.json",),
                        tables.suite_curves,
                        "python benchmarks/suite_curves.py",
                    )
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
                    tables.envs,
                    "python benchmarks/envs.py",
                ),
                Section(
                    "EnvPool against gymnasium",
                    ("host_simulators.json",),
                    tables.host_simulators,
                    "python benchmarks/host_simulators.py",
                ),
                Section(
                    "Placement `host_env`",
                    ("host_env.json",),
                    tables.host_env,
                    "python benchmarks/host_env.py",
                ),
                *_measured(
                    Section(
                        "The JAX suites' adapters against each suite's own environment",
                        ("env_adapters.json",),
                        tables.env_adapters,
                        "python benchmarks/env_adapters.py",
                    )
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
                    tables.brax_training,
                    "python benchmarks/brax_training.py [--setup brax|sac] [--learning-rate 1e-9]",
                ),
                Section(
                    "The simulator step alone",
                    ("brax_env_step.json",),
                    tables.brax_env_step,
                    "python benchmarks/brax_env_step.py --rounds 5",
                ),
                Section(
                    "What a rollout costs before and after learning",
                    ("brax_rollout_cost.json",),
                    tables.brax_rollout_cost,
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
                    tables.scaling,
                    "python benchmarks/scaling.py",
                ),
                Section(
                    "Devices and seeds",
                    ("placement.json",),
                    tables.placement,
                    "python benchmarks/placement.py",
                ),
                Section(
                    "Lanes of one program: 1 to 1024",
                    ("lanes.json",),
                    tables.lanes,
                    "python benchmarks/lanes.py",
                ),
                Section(
                    "Actors and learner on two devices",
                    (
                        "actor_learner.json",
                        "actor_learner-impala.json",
                        "actor_learner-impala-rollout128.json",
                    ),
                    tables.actor_learner,
                    "python benchmarks/actor_learner.py [--algo impala [--rollout-len 128]]",
                ),
            ),
        ),
        Page(
            "replay",
            "Replay",
            "Uniform and prioritized replay (`jaxrl_fdg.fragments.replay`): sample and update "
            "times per jitted call, and the resident memory of DQN with an Atari replay stored "
            "frame by frame (see [Replay: each frame once]"
            "(../decisions.md#replay-each-frame-once)).",
            (
                Section(
                    "Sample and update",
                    ("replay.json",),
                    tables.replay,
                    "python benchmarks/replay.py",
                ),
                Section(
                    "Atari replay memory",
                    ("replay_memory.json",),
                    tables.replay_memory,
                    "python benchmarks/replay_memory.py",
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
                    tables.soak_faults,
                    "python benchmarks/soak_faults.py --minutes 10",
                ),
                Section(
                    "Runs that used to hang",
                    ("soak_hangs.json",),
                    tables.soak_hangs,
                    "python benchmarks/soak_hangs.py",
                ),
            ),
        ),
        Page(
            "experiments",
            "Experiments",
            "The shipped suites run as a user runs them (`jaxrl-fdg experiment SUITE`), and the "
            "report `jaxrl-fdg report` made of each: scores normalised per environment "
            "(0: the uniform random policy, 1: the suite's reference), aggregates with 95% "
            "stratified bootstrap intervals, probability of improvement, performance profiles "
            "and curves. The [tutorial](../tutorials/experiments.md) explains each statistic. "
            "The reports of 2026-11-28 come from the two suites run at the same time on the "
            "2-core machine, each with about half of it: their wall times are upper bounds.",
            (
                Section(
                    "The random column of the normalisation tables",
                    ("random_scores.json",),
                    tables.random_scores,
                    "python benchmarks/random_scores.py",
                ),
            )
            + tuple(
                Section(
                    f"Suite `{Path(name).parent.name}`",
                    (name,),
                    tables.experiment,
                    json.loads((RESULTS / name).read_text()).get(
                        "command", "python benchmarks/experiments.py"
                    ),
                )
                for name in _experiment_files()
            ),
        ),
        Page(
            "accelerator",
            "Accelerator suite",
            "`python benchmarks/accelerator.py` runs every benchmark that says something about a "
            "GPU or TPU and merges them into one report per device. At the `cpu` and `smoke` "
            "presets each algorithm runs only a few iterations per mode, so a `scan` / `step` "
            "column there says that both modes run, not which is faster: the "
            "[fusion benchmarks](fusion.md) compare the modes. The `lease` preset is sized for "
            "a GPU lent for a quarter of an hour: each section has a time limit, and a section "
            "stopped at its limit shows what it had printed. What the H100 figures say is in "
            "the [notes](../notes.md#a-first-gpu-nvidia-h100).",
            (
                Section(
                    "Reports",
                    _accelerator_files(),
                    tables.accelerator,
                    "python benchmarks/accelerator.py",
                ),
            ),
        ),
    )


def images() -> list[Path]:
    """The result images the pages show (under ``img/``, named by :func:`image_name`)."""
    return sorted(RESULTS.glob("*.png")) + sorted(RESULTS.glob("experiments/*/figures/*.png"))


def image_name(path: Path) -> str:
    """An image's name under ``img/``: its own, or ``experiments-SUITE-NAME.png`` for a
    report's figure."""
    parts = path.relative_to(RESULTS).parts
    return path.name if len(parts) == 1 else f"{parts[0]}-{parts[1]}-{path.name}"


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
        "before the benchmarks recorded a date and a commit carry the date and commit of the "
        'last commit that changed them, marked "committed", and say "not recorded" for the '
        "load. The command under each heading writes its file again.",
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

"""Every benchmark that says something about an accelerator, at one size preset, in one command.

    python benchmarks/accelerator.py                 # full on a GPU/TPU, cpu elsewhere
    python benchmarks/accelerator.py --size smoke --out /tmp/accelerator.json

Each section is a child process of an existing benchmark script, told where to write its JSON
(a temporary folder); this script merges them into ``benchmarks/results/accelerator-<device>.json``
with the machine, the size preset, each section's command line and wall seconds. The docs site's
benchmark pages draw its tables from every such report (``benchmarks/pages.py``).

Sections: ``fusion_modes`` (``fusion_modes.py``), ``algorithms`` (``algorithms.py``, every
registered algorithm), ``mode_pairs`` (``mode_pairs.py``: the fusion modes timed on the same
states in one process, as paired ratios), ``envs`` (``envs.py``, up to 65,536 envs at the full
size), ``seeds`` (``placement.py``'s seed sweep, 1 to 256 seeds), ``devices`` (``placement.py``'s
device sweep, ``data_parallel`` over every visible device; skipped, with the reason, on one
device), ``compile_time`` (``compile_time.py``) and ``precision`` (``precision.py``: the matmul
precision in force, and whether short PPO and SAC runs change at "highest").

Sizes (``--size``): ``smoke``, the smallest of everything (for CI, well under two minutes on two
cores: compiling is most of its time, so its per-algorithm table has PPO and DQN alone, and its
precision check PPO alone); ``cpu``, a few minutes on a 2-core CPU; ``lease``, the ``cpu`` budgets
with the accelerator sizes of the env and seed sweeps (65,536 envs, 256 seeds), each section held
to a time limit so that the whole suite ends within 8 minutes: the size for a GPU lent for a
quarter of an hour; ``full``, the accelerator sizes (65,536 envs, 256 seeds, every script's
default budgets). The default is ``full`` where JAX's default backend is a GPU or TPU, ``cpu``
otherwise.

A section that fails, or outlives its time limit (``--section-limit``, or the size's own; its
process group is then killed), is recorded with the tail of its output and the others still run;
the exit status is then 1. The report is rewritten after every section (marked ``"partial":
true`` until the last), so a suite stopped from outside keeps what had finished.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import accelerator_table  # noqa: E402
import cli_args  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SECTIONS = (
    "fusion_modes",
    "algorithms",
    "mode_pairs",
    "envs",
    "seeds",
    "devices",
    "compile_time",
    "precision",
    "roofline",
)
SCRIPTS = {
    "fusion_modes": "fusion_modes.py",
    "algorithms": "algorithms.py",
    "mode_pairs": "mode_pairs.py",
    "envs": "envs.py",
    "seeds": "placement.py",
    "devices": "placement.py",
    "compile_time": "compile_time.py",
    "precision": "precision.py",
    "roofline": "roofline.py",
}
SEEDS_FULL = "1,2,4,8,16,32,64,128,256"
# XLA flags added to the children's at a size: the smoke size checks that everything runs, not
# how fast, and compiling is most of its time; without XLA's backend optimisations its CPU time
# on two cores fell from about 117 s to 67 s (cold caches, a busy machine). Its figures are then
# no benchmark.
SIZE_XLA_FLAGS = {
    "smoke": "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
}

# Each section's arguments per size (``--out`` is added); ``devices`` gets ``--devices`` from
# the number of visible devices, ``envs`` its comparison flags from what is installed.
SIZES: dict[str, dict[str, list[str]]] = {
    "smoke": {
        "fusion_modes": ["--total-steps", "1024", "--repeats", "1", "--eager-iterations", "0",
                         "--modes", ""],
        "algorithms": ["--algos", "ppo,dqn", "--modes", "scan", "--iterations", "2",
                       "--rounds", "1", "--eager-iterations", "0"],
        "mode_pairs": ["--algos", "dqn", "--modes", "scan,step", "--iterations", "2",
                       "--rounds", "1"],
        "envs": ["--envs", "CartPole-v1", "--num-envs", "64", "--steps", "10",
                 "--python-steps", "4", "--repeats", "1", "--no-gymnax"],
        "seeds": ["--seeds", "2", "--algos", "ppo", "--rounds", "1", "--scale", "0.01"],
        "devices": ["--rounds", "1", "--scale", "0.01"],
        "compile_time": ["--algos", "ppo", "--fusion", "scan", "--total-steps", "1024"],
        "precision": ["--algos", "ppo", "--ppo-steps", "1024"],
        "roofline": ["--algos", "ppo", "--fusion", "scan", "--iterations", "2"],
    },
    "cpu": {
        # eager (a minute here for one iteration) is in the fusion-mode benchmark already; step
        # runs as many iterations as scan, enough for the off-policy learners to start updating.
        "fusion_modes": ["--total-steps", "102400", "--repeats", "1", "--eager-iterations", "0"],
        "algorithms": ["--algos", "all", "--modes", "scan,step", "--iterations", "20",
                       "--rounds", "1", "--eager-iterations", "0"],
        "mode_pairs": ["--algos", "ppo,dqn,sac", "--modes", "scan,iteration,step",
                       "--rounds", "3"],
        "envs": ["--envs", "CartPole-v1,Pendulum-v1", "--num-envs", "1,1024,16384",
                 "--steps", "100", "--python-steps", "20", "--python-max-envs", "1024"],
        "seeds": ["--seeds", "1,16,256", "--rounds", "2", "--scale", "0.25"],
        "devices": ["--rounds", "2", "--scale", "0.25"],
        "compile_time": ["--algos", "all", "--fusion", "scan"],
        "precision": ["--ppo-steps", "20480", "--sac-steps", "1000"],
        "roofline": ["--algos", "ppo,dqn", "--fusion", "scan,fragment", "--iterations", "10"],
    },
    "lease": {
        # Sized from the first run on an H100 (2026-11-27): compiling a program there takes 4 to
        # 12 s, so every section's time is mostly compiles, and eager (an op-by-op compile per
        # new op) is left out.
        "fusion_modes": ["--total-steps", "51200", "--repeats", "1", "--eager-iterations", "0"],
        "algorithms": ["--algos", "all", "--modes", "scan,step", "--iterations", "10",
                       "--rounds", "1", "--eager-iterations", "0"],
        "mode_pairs": ["--algos", "ppo,dqn,sac", "--modes", "scan,iteration,step",
                       "--rounds", "3"],
        "envs": ["--num-envs", "1,1024,65536", "--steps", "200", "--repeats", "2",
                 "--python-steps", "20", "--python-max-envs", "1024"],
        "seeds": ["--seeds", "1,16,256", "--rounds", "1", "--scale", "0.25"],
        "devices": ["--rounds", "1", "--scale", "0.25"],
        "compile_time": ["--algos", "ppo,dqn,sac,impala", "--fusion", "scan"],
        "precision": ["--ppo-steps", "20480", "--sac-steps", "1024"],
        # Each run is trained twice (sync, then trace for the operation counts): scan alone keeps
        # the section at the six trainings that took 24 s of its 30 on the first H100.
        "roofline": ["--algos", "ppo,dqn,sac", "--fusion", "scan", "--iterations", "10"],
    },
    "full": {
        "fusion_modes": [],
        "algorithms": ["--algos", "all"],
        "mode_pairs": ["--algos", "all"],
        "envs": ["--num-envs", "1,64,1024,4096,16384,65536", "--python-max-envs", "4096"],
        "seeds": ["--seeds", SEEDS_FULL],
        "devices": [],
        "compile_time": ["--algos", "all"],
        "precision": [],
        "roofline": ["--algos", "all", "--fusion", "scan,fragment,step"],
    },
}  # fmt: skip


# Seconds each section may run at a size before its process group is killed (``None``: no
# limit). The lease's add up to 480 s on one device (where ``devices`` is skipped): the suite holds
# a device for at most about 8 minutes, and a section that runs long costs only its own figures.
SECTION_LIMITS: dict[str, dict[str, float]] = {
    "lease": {
        "fusion_modes": 70, "algorithms": 110, "mode_pairs": 60, "envs": 55, "seeds": 60,
        "devices": 60, "compile_time": 50, "precision": 45, "roofline": 30,
    },
}  # fmt: skip


def probe() -> dict:
    """The default backend's platform, device kind and device count, asked of a child process
    (this one never starts a backend before the sections ran: on a GPU it would take memory)."""
    code = (
        "import jax, json; d = jax.devices(); "
        "print(json.dumps({'platform': d[0].platform, 'device_kind': d[0].device_kind, "
        "'device_count': len(d)}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def device_slug(device: dict) -> str:
    """``cpu``, ``nvidia-h100-80gb-hbm3``, ``tpu-v4``: the device kind in lower case, runs of
    anything else than letters and digits made one ``-`` (the platform if the kind is empty)."""
    slug = re.sub(r"[^a-z0-9]+", "-", device["device_kind"].lower()).strip("-")
    return slug or device["platform"]


def device_counts(visible: int, size: str) -> list[int]:
    """Device counts of the data-parallel sweep: powers of two below ``visible``, and
    ``visible`` (at the smoke and cpu sizes only 1 and ``visible``)."""
    if size != "full":
        return [1, visible]
    return sorted({*(2**k for k in range(visible.bit_length()) if 2**k < visible), visible})


def section_args(name: str, size: str, device: dict) -> tuple[list[str] | None, str | None]:
    """The child's arguments (without ``--out``), or ``None`` and why the section is skipped."""
    args = list(SIZES[size][name])
    if name == "seeds":
        args = ["--sweep", "seeds", "--backend-devices", *args]
    elif name == "devices":
        visible = device["device_count"]
        if visible < 2:
            return None, (
                f"one device visible ({accelerator_table.describe(device)}): "
                "data_parallel needs two or more"
            )
        counts = ",".join(map(str, device_counts(visible, size)))
        args = ["--sweep", "devices", "--backend-devices", "--devices", counts, *args]
    elif name == "envs":
        for module, flag in (("gymnax", "--no-gymnax"), ("gymnasium", "--no-gymnasium")):
            if importlib.util.find_spec(module) is None and flag not in args:
                args.append(flag)
    return args, None


def run_section(
    name: str, args: list[str], out: Path, xla_flags: str = "", limit_s: float | None = None
) -> dict:
    """Run one section's script; its report, command line, wall seconds, CPU seconds (user +
    system, its child processes included: less sensitive than wall time to a busy machine), and
    on failure the exit status and the last lines it printed. Past ``limit_s`` seconds the
    section's whole process group (its own children too) is killed and the entry says
    ``timed_out``."""
    script = BENCHMARKS / SCRIPTS[name]
    command = [sys.executable, str(script), *args, "--out", str(out)]
    shown = shlex.join(["python", str(script.relative_to(ROOT)), *args, "--out", out.name])
    print(f"== {name}: {shown}", flush=True)
    tail: deque[str] = deque(maxlen=40)
    env = dict(os.environ)
    if xla_flags:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {xla_flags}".strip()
    start, cpu_start = time.perf_counter(), _children_cpu_s()
    timed_out = threading.Event()
    with subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, so a kill reaches its children
    ) as child:

        def kill() -> None:
            timed_out.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)

        watchdog = threading.Timer(limit_s, kill) if limit_s else None
        if watchdog:
            watchdog.start()
        try:
            for line in child.stdout:
                tail.append(line.rstrip())
                print(f"   {line.rstrip()}", flush=True)
        finally:
            if watchdog:
                watchdog.cancel()
    wall_s, cpu_s = time.perf_counter() - start, _children_cpu_s() - cpu_start
    entry = {"command": shown, "wall_s": wall_s, "cpu_s": cpu_s, "limit_s": limit_s}
    if timed_out.is_set():
        print(f"== {name}: killed after its limit of {limit_s:.0f} s", flush=True)
        return {**entry, "ok": False, "timed_out": True, "returncode": None, "tail": list(tail)}
    if child.returncode != 0 or not out.exists():
        return {**entry, "ok": False, "returncode": child.returncode, "tail": list(tail)}
    report = json.loads(out.read_text())
    report.pop("machine", None)  # the suite's own machine record covers it
    return {**entry, "ok": True, "report": report}


def roofline_summary(entry: dict | None, device: dict) -> dict | None:
    """Per run of the ``roofline`` section: the seconds an iteration took here, the roofline here,
    and the model's predictions per iteration on this device and on an H100 (``None`` if the
    section did not run). On an H100, ``measured_iteration_s`` against
    ``predicted_h100_iteration_s`` is the check of the model's assumed GPU costs."""
    report = (entry or {}).get("report")
    if not report:
        return None
    keys = (
        "measured_iteration_s",
        "roofline_here_iteration_s",
        "predicted_here_iteration_s",
        "predicted_h100_iteration_s",
    )
    runs = {run: {k: r.get(k) for k in keys} for run, r in report["results"].items()}
    return {"device_kind": device["device_kind"], "runs": runs}


def write_partial(out: Path, config: dict, results: dict) -> None:
    """The report so far, ``"partial": true``, without the machine record (that would start a
    backend in this process, and take a GPU's memory from the sections still to run)."""
    from jaxrl_fdg.profiling.report import recorded

    report = {
        "benchmark": "accelerator",
        "partial": True,
        "config": config,
        "recorded": recorded(str(out.resolve().parent)),
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=tuple(SIZES), default=None, help="default: by backend")
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset")
    parser.add_argument(
        "--out", default=None, help="default: benchmarks/results/accelerator-<device>.json"
    )
    parser.add_argument(
        "--section-limit",
        type=float,
        default=None,
        help="seconds each section may run before it is killed (default: the size's own limits; "
        "the lease size has them, the others none)",
    )
    parser.add_argument(
        "--no-readme",
        action="store_true",
        help="accepted for old command lines; nothing writes README.md any more",
    )
    args = parser.parse_args()
    sections = cli_args.comma_list(parser, "--sections", args.sections, SECTIONS)
    if args.section_limit is not None and args.section_limit <= 0:
        parser.error(f"--section-limit: {args.section_limit:g} is not a positive number of seconds")

    device = probe()
    size = args.size or ("full" if device["platform"] in ("gpu", "tpu") else "cpu")
    out = Path(args.out or BENCHMARKS / "results" / f"accelerator-{device_slug(device)}.json")
    print(f"{device['device_count']} × {device['device_kind']} ({device['platform']}); size {size}")
    started, load_start = time.perf_counter(), os.getloadavg()
    config = {"size": size, "sections": sections, "device": device}
    if size in SIZE_XLA_FLAGS:
        config["added_xla_flags"] = SIZE_XLA_FLAGS[size]
    limits = SECTION_LIMITS.get(size, {})
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="accelerator-") as tmp:
        for name in sections:
            child_args, skipped = section_args(name, size, device)
            if child_args is None:
                print(f"== {name}: skipped: {skipped}", flush=True)
                results[name] = {"command": None, "wall_s": 0.0, "ok": True, "skipped": skipped}
                continue
            out_file = Path(tmp) / f"{name}.json"
            limit = args.section_limit or limits.get(name)
            flags = SIZE_XLA_FLAGS.get(size, "")
            results[name] = run_section(name, child_args, out_file, flags, limit)
            write_partial(out, config, results)
    wall_s = time.perf_counter() - started

    from jaxrl_fdg.profiling import write_report  # the backend starts here, after every child

    precision = (results.get("precision") or {}).get("report", {}).get("precision_in_force")
    roofline = roofline_summary(results.get("roofline"), device)
    loadavg = {"start": list(load_start), "end": list(os.getloadavg())}
    write_report(
        str(out),
        "accelerator",
        config,
        results,
        precision=precision,
        roofline=roofline,
        loadavg=loadavg,
        wall_s=wall_s,
    )
    print(accelerator_table.table({**json.loads(out.read_text()), "path": str(out)}))
    failed = [name for name, r in results.items() if not r["ok"]]
    print(f"total {wall_s:.0f} s" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()

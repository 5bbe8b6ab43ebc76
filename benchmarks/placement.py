"""Env-steps/s against device count (forced CPU devices) and against vmapped seeds, in one run.

Two sweeps on CartPole-v1, compile seconds apart from run seconds:

* **devices**: PPO with ``placement="data_parallel"`` on 1, 2, 4, 8 devices, ``shard_map``
  backend, in *strong* scaling (64 envs in all, split across the devices) and *weak* scaling
  (16 envs per device); the ``pmap`` backend in strong scaling for comparison; and
  ``placement="single"`` with the same 64 envs, the program a data-parallel run replaces.
* **seeds**: ``num_seeds`` = 1, 2, 4, ..., 64 independent runs vmapped into one program on one
  device, PPO (4 envs x 128 steps per seed) and DQN (4 envs x 4 steps per seed); env-steps/s
  summed over seeds, and per seed.

A device count is fixed when JAX starts (``XLA_FLAGS=--xla_force_host_platform_device_count=N``),
so each device count runs in a child process of its own, and the seeds in one more. Every child
stays alive for the whole benchmark and holds its configurations compiled: the parent has them
compile one child at a time, then asks for timed *rounds* child after child, so the figures of
all device counts (and seeds) are taken interleaved, minutes apart at most, on a machine whose
load changes. Each figure is the median over rounds; a ratio to the one-device (one-seed) figure
is the median of the ratios taken within each round.

What a round times, per configuration: the whole run of ``TrainConfig.num_iterations``
iterations from the initial state, as ``jaxrl_fdg.train`` runs it (the ``scan`` plan, the same
host boundaries, one chunk in flight while the previous one's metrics are read back) without
writing metrics, a run folder or progress. Compiling is done once per configuration, from
scratch (no persistent compilation cache): ``compile_s`` is the wall time of building the
initial state and compiling every program. Every configuration does about the same number of
env steps, a second or more of running on two CPU cores.

Forced host devices are not more hardware: all of them share the machine's cores (two here). Up
to one device per core they can run shards side by side (a one-device program of these small
networks keeps about one core busy); past that, the device curve shows what the placement costs
(sharding, the gradient all-reduce, per-device dispatch on oversubscribed cores), not what more
devices would give. On real accelerators strong scaling would divide the run time and weak
scaling multiply throughput.

    python benchmarks/placement.py           # writes benchmarks/results/placement.{json,png}
    python benchmarks/placement.py --quick   # a smoke run: fewer steps, sizes and rounds

On an accelerator, ``--backend-devices`` runs every child on the default backend's own devices
(no forced CPU devices; a device count above what it has fails), and ``--sweep`` runs one sweep
alone: ``--sweep seeds --seeds 1,2,4,...,256``, ``--sweep devices --devices 1,2,...``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
DEVICE_COUNTS = (1, 2, 4, 8)
SEED_COUNTS = (1, 2, 4, 8, 16, 32, 64)

# Device sweep: PPO with a short rollout, so that 64 envs split evenly into up to 8 shards.
STRONG_ENVS = 64  # envs in all, whatever the device count
WEAK_ENVS_PER_DEVICE = 16
DEVICE_ROLLOUT = 32
DEVICE_STEPS = 196_608  # env steps per configuration (all devices together)

# Seed sweep: each seed is a usual single run; ``total`` env steps are split over the seeds.
SEED_SETTINGS = {
    "ppo": dict(num_envs=4, rollout_len=128, total=196_608),
    "dqn": dict(num_envs=4, rollout_len=4, total=36_864),
}


# -- child: one process, its configurations compiled, timed round by round -------------------


class Measured:
    """One configuration, compiled once, timed as often as asked."""

    def __init__(self, kind: str, **settings):
        import jaxrl_fdg as rl

        hparams = {}
        if settings["algo"] == "dqn":  # learn from the first iteration on: every iteration updates
            hparams["learning_starts"] = settings["num_envs"] * settings["rollout_len"]
        self.kind = kind
        config = rl.TrainConfig(
            env="CartPole-v1", out=None, progress=False, compile_cache=False, hparams=hparams,
            **settings,
        )  # fmt: skip
        # Settings left unset (log_every) take the algorithm's defaults, as ``train`` takes them.
        self.config = config.with_defaults(rl.algorithm.get(config.algo).defaults)
        self.plan = self.initial = None

    def compile(self) -> dict:
        """Build the initial state and compile every program, as ``train`` does before running."""
        import jax

        from jaxrl_fdg.config import resolve
        from jaxrl_fdg.policies.fusion import make_plan
        from jaxrl_fdg.profiling import Timings
        from jaxrl_fdg.run.runner import build_loop, initial_key

        config = self.config
        start = time.perf_counter()
        loop = build_loop(resolve(config))
        self.plan = make_plan("scan", loop, Timings("host"), chunk=config.boundary_every)
        self.initial = self.plan.init(initial_key(config))
        self.plan.compile(self.initial)
        jax.block_until_ready(self.initial)
        compile_s = time.perf_counter() - start
        self._run(config.boundary_every)  # warm-up: first calls of every program
        return {**self.describe(), "compile_s": compile_s, "devices_seen": len(jax.devices())}

    def time_run(self) -> dict:
        """The whole run from the initial state; its wall time and the load before it."""
        load = os.getloadavg()[0]
        run_s = self._run(self.config.num_iterations)
        return {**self.describe(), "run_s": run_s, "loadavg_1min": load}

    def _run(self, iterations: int) -> float:
        """``iterations`` iterations in chunks of ``boundary_every``, one chunk in flight while
        the previous one's metrics come back (the runner's loop, minus logging)."""
        import jax

        plan, state = self.plan, self.initial
        start = time.perf_counter()
        in_flight: collections.deque = collections.deque()
        for done in range(0, iterations, self.config.boundary_every):
            state, pending = plan.advance(state, min(self.config.boundary_every, iterations - done))
            in_flight.append(pending)
            if len(in_flight) > 1:
                plan.collect(in_flight.popleft())
        while in_flight:
            plan.collect(in_flight.popleft())
        jax.block_until_ready(state)
        return time.perf_counter() - start

    def describe(self) -> dict:
        c = self.config
        return {
            "kind": self.kind,
            "algo": c.algo,
            "placement": c.placement,
            "backend": c.dp_backend if c.placement == "data_parallel" else None,
            "devices": c.devices,
            "num_seeds": c.num_seeds,
            "num_envs": c.num_envs,
            "rollout_len": c.rollout_len,
            "iterations": c.num_iterations,
            "env_steps": c.num_iterations * c.steps_per_iteration * c.num_seeds,
        }


def device_configs(devices: int, scale: float) -> list[Measured]:
    """The device-sweep configurations for ``devices`` devices (this process sees that many).
    The weak-scaling point whose envs equal the strong one's is the same program: it is not
    measured twice (the parent copies it)."""
    steps = int(DEVICE_STEPS * scale)
    common = dict(algo="ppo", rollout_len=DEVICE_ROLLOUT)
    configs = []
    if devices == 1:
        configs.append(
            Measured(
                "single", **common, num_envs=STRONG_ENVS, total_steps=_whole(steps, STRONG_ENVS)
            )
        )
    sizes = [("shard_map_strong", "shard_map", STRONG_ENVS)]
    if WEAK_ENVS_PER_DEVICE * devices != STRONG_ENVS:
        sizes.append(("shard_map_weak", "shard_map", WEAK_ENVS_PER_DEVICE * devices))
    sizes.append(("pmap_strong", "pmap", STRONG_ENVS))
    for kind, backend, envs in sizes:
        configs.append(
            Measured(
                kind, **common, placement="data_parallel", devices=devices, dp_backend=backend,
                num_envs=envs, total_steps=_whole(steps, envs),
            )
        )  # fmt: skip
    return configs


def seed_configs(algos: list[str], seed_counts: list[int], scale: float) -> list[Measured]:
    """The seed-sweep configurations: about the same env steps in all, split over the seeds."""
    configs = []
    for algo in algos:
        s = SEED_SETTINGS[algo]
        for seeds in seed_counts:
            per_seed = int(s["total"] * scale) // seeds
            configs.append(
                Measured(
                    f"seeds_{algo}", algo=algo, num_envs=s["num_envs"],
                    rollout_len=s["rollout_len"], num_seeds=seeds,
                    total_steps=max(1, per_seed // (s["num_envs"] * s["rollout_len"]))
                    * s["num_envs"] * s["rollout_len"],
                )
            )  # fmt: skip
    return configs


def _whole(steps: int, num_envs: int) -> int:
    """``steps`` rounded down to whole device-sweep iterations, at least one."""
    per_iteration = num_envs * DEVICE_ROLLOUT
    return max(1, steps // per_iteration) * per_iteration


def child(args: argparse.Namespace) -> None:
    """Serve the parent: ``compile``, then ``round <r>`` as often as asked, then ``quit``. On the
    original stdout (everything else printed goes to stderr): one JSON line per configuration
    done, then ``done``; the parent treats a long silence as a hang."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    if args.child == "devices":
        configs = device_configs(int(args.devices), args.scale)
    else:
        configs = seed_configs(args.algos.split(","), _ints(args.seeds), args.scale)
    for line in sys.stdin:
        command = line.split()
        if command[0] == "compile":
            steps = [m.compile for m in configs]
        elif command[0] == "round":
            r = int(command[1]) % len(configs)  # rotate: no configuration always goes first
            steps = [m.time_run for m in configs[r:] + configs[:r]]
        else:
            return
        for step in steps:
            answers.write(json.dumps(step()) + "\n")
            answers.flush()
        answers.write("done\n")
        answers.flush()


# -- parent: start the children, interleave their rounds, aggregate, report ------------------


class Hang(RuntimeError):
    """A child said nothing for longer than one configuration can take."""


class Child:
    """A child process serving one device count (or the seeds).

    A child that stays silent for ``silence_s`` (one configuration's compile or run never takes
    that long) is taken as hung: it is killed, a fresh one compiles again, and the request is
    repeated; each such restart is recorded in ``incidents``. (XLA:CPU hung once in a
    ``block_until_ready`` on a freshly built initial state, every thread idle; not reproducible
    on its own.)
    """

    def __init__(self, kind: str, devices: int, args: argparse.Namespace, silence_s: float):
        self.name = f"{kind} on {devices} device(s)"
        self.command = [sys.executable, __file__, "--child", kind, "--devices", str(devices)]
        self.command += ["--scale", str(args.scale), "--algos", args.algos, "--seeds", args.seeds]
        self.env, self.silence_s = _child_env(devices, args.backend_devices), silence_s
        self.incidents: list[dict] = []
        self._start()

    def _start(self) -> None:
        self.process = subprocess.Popen(
            self.command, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.compiled, self._pending = False, b""

    def ask(self, command: str, retries: int = 2) -> list[dict]:
        """Send ``command``; its answers. On a hang, restart (and compile again) and retry."""
        for attempt in range(retries + 1):
            try:
                if command != "compile" and not self.compiled:
                    self._request("compile")  # a restarted child: its compile figures are not kept
                    self.compiled = True
                answer = self._request(command)
                self.compiled = self.compiled or command == "compile"
                return answer
            except Hang as hang:
                self.incidents.append({"child": self.name, "request": command, "what": str(hang)})
                print(f"  {hang}; restarting it ({attempt + 1}/{retries})", flush=True)
                self.process.kill()
                self.process.wait()
                if attempt == retries:
                    raise
                self._start()
        raise AssertionError("unreachable")

    def _request(self, command: str) -> list[dict]:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answers = []
        while (line := self._readline(command, len(answers))) != "done":
            answers.append(json.loads(line))
        return answers

    def _readline(self, command: str, done: int) -> str:
        """The child's next line, waiting at most ``silence_s`` for each piece of it (reads the
        pipe unbuffered, so that a line already read is never left waiting behind ``select``)."""
        import select

        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            if not select.select([fd], [], [], self.silence_s)[0]:
                raise Hang(
                    f"child {self.name} silent for {self.silence_s:.0f} s during {command!r} "
                    f"after {done} configuration(s)"
                )
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"child {self.name} exited (code {self.process.wait()})")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode().strip()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        self.process.wait()


def _child_env(devices: int, backend_devices: bool = False) -> dict[str, str]:
    """The environment of a child that sees ``devices`` CPU devices; with ``backend_devices``,
    this process's own (the default backend's devices, as many as it has)."""
    env = dict(os.environ)
    if backend_devices:
        # The children live side by side on the same accelerators: none may take 75% of a
        # device's memory up front, as JAX does by default.
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        return env
    flags = [
        f
        for f in env.get("XLA_FLAGS", "").split()
        if not f.startswith("--xla_force_host_platform_device_count")
    ]
    env["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    return env


def _key(run: dict) -> tuple:
    return run["kind"], run["devices"], run["num_seeds"]


def aggregate(compiled: list[dict], rounds: list[list[dict]]) -> dict[tuple, dict]:
    """Per configuration: median run time over rounds, env-steps/s from it, the spread, and the
    ratio to its base size (one device, one seed), the median of the ratios within each round."""
    timed: dict[tuple, list[dict]] = collections.defaultdict(list)
    for runs in rounds:
        for run in runs:
            timed[_key(run)].append(run)
    table = {}
    for info in compiled:
        runs = timed[_key(info)]
        run_s = statistics.median(r["run_s"] for r in runs)
        per_round = [info["env_steps"] / r["run_s"] for r in runs]
        entry = {k: v for k, v in info.items() if k != "kind"}
        entry.update(
            envs_per_device=info["num_envs"] // info["devices"],
            run_s=run_s,
            run_s_all=[r["run_s"] for r in runs],
            steps_per_s=info["env_steps"] / run_s,
            steps_per_s_per_seed=info["env_steps"] / run_s / info["num_seeds"],
            steps_per_s_all=per_round,
            loadavg_1min=[r["loadavg_1min"] for r in runs],
        )
        table[_key(info)] = entry
    # The weak-scaling point with as many envs as the strong one is the same program.
    for (kind, devices, seeds), entry in list(table.items()):
        weak = ("shard_map_weak", devices, seeds)
        if kind == "shard_map_strong" and entry["envs_per_device"] == WEAK_ENVS_PER_DEVICE:
            table[weak] = {**entry, "same_as": "shard_map_strong"}
            timed[weak] = timed[(kind, devices, seeds)]
    for (kind, devices, seeds), entry in table.items():
        if kind == "single":
            base = ("shard_map_strong", 1, 1)  # the ratio is then data_parallel's 1-device cost
        else:
            base = (kind, 1, 1)
        if base in timed:
            pairs = zip(timed[(kind, devices, seeds)], timed[base], strict=True)
            ratios = [b["run_s"] / r["run_s"] * entry["env_steps"] / table[base]["env_steps"]
                      for r, b in pairs]  # fmt: skip
            entry["ratio_to_base"] = statistics.median(ratios)
    return table


def nest(table: dict[tuple, dict]) -> dict:
    """``{"devices": {kind: {N: entry}}, "seeds": {algo: {S: entry}}}`` for the JSON report."""
    nested: dict[str, dict] = {"devices": {}, "seeds": {}}
    for (kind, devices, seeds), entry in sorted(table.items()):
        if kind.startswith("seeds_"):
            nested["seeds"].setdefault(kind.removeprefix("seeds_"), {})[str(seeds)] = entry
        else:
            nested["devices"].setdefault(kind, {})[str(devices)] = entry
    return nested


def plot(results: dict, path: Path, cores: int, forced: bool = True) -> None:
    """Two panels: env-steps/s against devices (strong, weak, pmap) and against seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
    styles = {
        "shard_map_strong": (f"shard_map, strong ({STRONG_ENVS} envs in all)", "o-", "C0"),
        "shard_map_weak": (f"shard_map, weak ({WEAK_ENVS_PER_DEVICE} envs/device)", "s-", "C1"),
        "pmap_strong": (f"pmap, strong ({STRONG_ENVS} envs in all)", "^--", "C2"),
    }
    for kind, (label, style, color) in styles.items():
        series = results["devices"].get(kind)
        if series:
            xs = sorted(int(n) for n in series)
            _errorbar(left, xs, [series[str(n)] for n in xs], style, color, label)
    single = results["devices"].get("single", {}).get("1")
    if single:
        left.axhline(
            single["steps_per_s"], color="grey", ls=":", label=f"single, {STRONG_ENVS} envs"
        )
    left.set_xscale("log", base=2)
    device_counts = sorted({int(n) for s in results["devices"].values() for n in s})
    left.set_xticks(device_counts or DEVICE_COUNTS, map(str, device_counts or DEVICE_COUNTS))
    left.set_xlabel(
        f"forced CPU devices (all sharing the same {cores} cores)" if forced else "devices"
    )
    left.set_ylabel("env-steps/s (run time only)")
    left.set_ylim(bottom=0)
    left.yaxis.set_major_formatter(_thousands())
    left.set_title("PPO, CartPole-v1, data_parallel")
    if results["devices"]:  # a seeds-only run (--sweep seeds) leaves this panel empty
        left.legend(fontsize=8, loc="lower left")
    left.grid(alpha=0.3)

    for i, (algo, series) in enumerate(sorted(results["seeds"].items(), reverse=True)):
        xs = sorted(int(s) for s in series)
        entries = [series[str(s)] for s in xs]
        color = f"C{i + 3}"
        _errorbar(right, xs, entries, "o-", color, f"{algo.upper()}, all seeds")
        per_seed = [e["steps_per_s_per_seed"] for e in entries]
        right.plot(xs, per_seed, "x:", color=color, label=f"{algo.upper()}, per seed")
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.yaxis.set_major_formatter(_thousands())
    seed_counts = sorted({int(n) for s in results["seeds"].values() for n in s})
    right.set_xticks(seed_counts or SEED_COUNTS, map(str, seed_counts or SEED_COUNTS))
    right.set_xlabel("vmapped seeds (num_seeds, one device)")
    right.set_ylabel("env-steps/s (run time only)")
    right.set_title("CartPole-v1, seeds in one program")
    if results["seeds"]:
        right.legend(fontsize=8, loc="lower left")
    right.grid(alpha=0.3, which="both")
    fig.text(
        0.5, 0.01, "median over rounds; bars: slowest to fastest round", ha="center", fontsize=8
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def _thousands():
    """Axis labels like ``150k``."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value / 1e3:g}k")


def _errorbar(ax, xs: list[int], entries: list[dict], style: str, color: str, label: str) -> None:
    ys = [e["steps_per_s"] for e in entries]
    low = [e["steps_per_s"] - min(e["steps_per_s_all"]) for e in entries]
    high = [max(e["steps_per_s_all"]) - e["steps_per_s"] for e in entries]
    ax.errorbar(xs, ys, yerr=[low, high], fmt=style, color=color, label=label, capsize=3)


def print_table(results: dict) -> None:
    print(
        f"{'configuration':<20}{'N':>4}{'envs':>6}{'steps/s':>11}{'per seed':>11}{'ratio':>7}"
        f"{'run s':>7}{'compile s':>11}"
    )
    rows = [(k, n, e) for k, s in results["devices"].items() for n, e in s.items()]
    rows += [(f"seeds {a}", n, e) for a, s in results["seeds"].items() for n, e in s.items()]
    for name, n, e in rows:
        ratio = f"{e['ratio_to_base']:.2f}" if "ratio_to_base" in e else "—"
        print(
            f"{name:<20}{n:>4}{e['num_envs']:>6}{e['steps_per_s']:>11,.0f}"
            f"{e['steps_per_s_per_seed']:>11,.0f}{ratio:>7}{e['run_s']:>7.2f}{e['compile_s']:>11.2f}"
        )


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed runs of every configuration")
    parser.add_argument("--devices", default=",".join(map(str, DEVICE_COUNTS)))
    parser.add_argument("--seeds", default=",".join(map(str, SEED_COUNTS)))
    parser.add_argument("--algos", default="ppo,dqn", help="algorithms of the seed sweep")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every step budget")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 rounds, few sizes")
    parser.add_argument(
        "--sweep", choices=("both", "devices", "seeds"), default="both", help="which sweeps run"
    )
    parser.add_argument(
        "--backend-devices",
        action="store_true",
        help="run on the default backend's devices instead of forced CPU devices",
    )
    parser.add_argument("--out", default=str(RESULTS / "placement.json"))
    parser.add_argument("--plot", default=None, help="default: --out with .png")
    parser.add_argument(
        "--silence-s", type=float, default=180, help="a child silent this long is taken as hung"
    )
    parser.add_argument("--replot", action="store_true", help="redraw the plot from --out")
    parser.add_argument("--child", choices=("devices", "seeds"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.replot:
        report = json.loads(Path(args.out).read_text())
        cores = report["machine"]["cpus_used"]
        forced = "device_source" not in report["config"]
        plot(
            report["results"], Path(args.plot or Path(args.out).with_suffix(".png")), cores, forced
        )
        return
    if args.quick:
        args.rounds, args.scale, args.devices, args.seeds = 2, 0.25, "1,2", "1,4"

    started, load_start = time.perf_counter(), os.getloadavg()
    jobs = [("devices", n) for n in _ints(args.devices)] if args.sweep != "seeds" else []
    jobs += [("seeds", 1)] if args.sweep != "devices" else []
    children = [Child(kind, n, args, args.silence_s) for kind, n in jobs]
    compiled: list[dict] = []
    rounds: list[list[dict]] = []
    try:
        for c in children:  # one at a time: compile times are not inflated by each other
            print(f"compiling: {c.name}", flush=True)
            compiled += c.ask("compile")
        for r in range(args.rounds):
            runs = []
            order = children[r % len(children) :] + children[: r % len(children)]
            for c in order:
                print(f"round {r + 1}/{args.rounds}: {c.name}", flush=True)
                runs += c.ask(f"round {r}")
            rounds.append(runs)
    finally:
        for c in children:
            c.close()
    results = nest(aggregate(compiled, rounds))
    wall_s = time.perf_counter() - started

    from jaxrl_fdg.profiling import write_report

    cores = len(os.sched_getaffinity(0))
    config = {
        "env": "CartPole-v1",
        "fusion": "scan",
        "devices": {
            "algo": "ppo",
            "device_counts": _ints(args.devices),
            "strong_num_envs": STRONG_ENVS,
            "weak_envs_per_device": WEAK_ENVS_PER_DEVICE,
            "rollout_len": DEVICE_ROLLOUT,
            "env_steps": int(DEVICE_STEPS * args.scale),
        },
        "seeds": {
            "seed_counts": _ints(args.seeds),
            **{a: SEED_SETTINGS[a] for a in args.algos.split(",")},
        },
        "scale": args.scale,
        "rounds": args.rounds,
        "command": " ".join(["python", "benchmarks/placement.py", *sys.argv[1:]]),
    }
    if args.sweep != "both":
        config["sweep"] = args.sweep
    if args.backend_devices:
        config["device_source"] = "the default backend's devices"
    forced = (
        f"Forced CPU devices share the machine's {cores} cores: past one device per core the "
        "device curve measures the data-parallel placement's overhead, not a speed-up. "
    )
    note = (
        ("" if args.backend_devices else forced)
        + "steps_per_s: env steps (all devices and seeds together) over the median run_s of the "
        "rounds; ratio_to_base: the median over "
        "rounds of steps/s over the same round's 1-device (1-seed) figure (for 'single': over "
        "shard_map on 1 device); compile_s: from scratch, no persistent cache."
    )
    write_report(
        args.out,
        "placement",
        config,
        results,
        note=note,
        loadavg={"start": list(load_start), "end": list(os.getloadavg())},
        wall_s=wall_s,
        incidents=[i for c in children for i in c.incidents],
    )
    plot(
        results,
        Path(args.plot or Path(args.out).with_suffix(".png")),
        cores,
        forced=not args.backend_devices,
    )
    print_table(results)
    print(f"total {wall_s:.0f} s; load average (1, 5, 15 min) {os.getloadavg()}")


if __name__ == "__main__":
    main()

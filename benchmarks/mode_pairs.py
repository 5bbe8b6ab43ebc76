"""Fusion modes compared in one process, on the same states: pair ratios with little noise.

    python benchmarks/mode_pairs.py                      # writes results/mode_pairs.json
    python benchmarks/mode_pairs.py --algos sac,td3,ddpg --rounds 9

``benchmarks/algorithms.py`` times each mode in a run of its own; on this machine runs of the same
mode drift by ±15% between rounds, which is more than the modes differ by where an algorithm's
time is its arithmetic (SAC, TD3 and DDPG: 32 updates of 256 × (256, 256) networks per
iteration). Here each algorithm's loop is built once and every mode's plan is compiled for it in
one process. Every mode starts from the same state, taken after the first iterations so that the
off-policy learners already update, and advances the same number of iterations from it; a round
times every mode once, in an order that rotates from round to round. Every mode computes the
same iterations (the same-seed contract), so each round's ratio of two modes' times is a paired
measurement of how they run the same work, and the benchmark checks that their final states
agree bit for bit.

Reported per algorithm: each mode's median µs per iteration and env-steps/s, and for
scan / iteration, iteration / step and scan / step the per-round ratios of their rates (above 1:
the first is faster), their median and range. Compile seconds are not measured here (the
programs compile side by side in one process; ``benchmarks/compile_time.py`` measures them).

Two installs against each other (another version of the library, in its own environment):

    python benchmarks/mode_pairs.py --baseline /path/to/other/venv/bin/python --pairs 3

runs this measurement with the baseline's interpreter and with this one in turn, ``--pairs``
times, and reports each mode's µs per iteration on both sides and the ratio per pair (baseline
over current: above 1, the current install is faster), in ``results/mode_pairs_baseline.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import cli_args  # noqa: E402
from algorithms import ITERATIONS, MODES, SETTINGS, config_for, settings_for  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.config import resolve  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402

PAIRS = (("scan", "iteration"), ("iteration", "step"), ("scan", "step"))
# Iterations timed per mode and round (one round of the slowest mode stays within seconds).
TIMED = {"ppo": 40, "a2c": 400, "dqn": 200, **ITERATIONS}


def digest(tree) -> str:
    """A short hash of every leaf's bytes (keys by their key data)."""
    hasher = hashlib.sha256()
    for leaf in jax.tree.leaves(tree):
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        hasher.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return hasher.hexdigest()[:16]


def advance_timed(plan, state, n: int) -> tuple[float, object]:
    """Seconds for ``plan`` to run ``n`` iterations from ``state`` (metrics read back, the new
    state ready), and that state."""
    start = time.perf_counter()
    new_state, pending = plan.advance(state, n)
    plan.collect(pending)
    jax.block_until_ready(new_state)
    return time.perf_counter() - start, new_state


def measure(
    algo: str, modes: list[str], rounds: int, warm: int, seed: int, iterations: int | None
) -> dict:
    n = iterations or TIMED.get(algo, 100)
    config = config_for(algo, warm + n, modes[0], seed)
    loop = rl.build_loop(resolve(config))
    plans = {mode: rl.make_plan(mode, loop, chunk=max(n, warm)) for mode in modes}
    key = jax.random.key(seed)
    starts = {mode: plan.start(key) for mode, plan in plans.items()}
    if len({digest(s) for s in starts.values()}) != 1:
        raise AssertionError(f"{algo}: the modes' initial states differ")
    _, state = advance_timed(plans[modes[0]], starts[modes[0]], warm)
    for plan in plans.values():  # each mode's first call, outside the timed rounds
        plan.collect(plan.advance(state, 1)[1])

    seconds: dict[str, list[float]] = {mode: [] for mode in modes}
    finals: dict[str, str] = {}
    for round_ in range(rounds):
        order = modes[round_ % len(modes) :] + modes[: round_ % len(modes)]
        for mode in order:
            elapsed, final = advance_timed(plans[mode], state, n)
            seconds[mode].append(elapsed)
            finals.setdefault(mode, digest(final))
        print(
            f"{algo} round {round_ + 1}: "
            + ", ".join(f"{m} {seconds[m][-1] / n * 1e6:,.0f} µs/it" for m in modes),
            flush=True,
        )
    steps = config.steps_per_iteration
    result: dict = {
        "iterations_timed": n,
        "warm_iterations": warm,
        "same_bits": len(set(finals.values())) == 1,
        "modes": {
            mode: {
                "us_per_iteration": statistics.median(s) / n * 1e6,
                "steps_per_s": n * steps / statistics.median(s),
                "seconds_all": s,
            }
            for mode, s in seconds.items()
        },
    }
    for faster, slower in PAIRS:
        if faster in seconds and slower in seconds:
            ratios = [b / a for a, b in zip(seconds[faster], seconds[slower], strict=True)]
            result[f"{faster}/{slower}"] = {
                "median": statistics.median(ratios),
                "min": min(ratios),
                "max": max(ratios),
                "all": ratios,
            }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", default=",".join(SETTINGS), help="comma-separated")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated compiled modes")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--warm", type=int, default=2, help="iterations run before the timed ones (at least 2)"
    )
    parser.add_argument(
        "--iterations", type=int, default=None, help=f"timed per mode and round (default {TIMED})"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="the results file (default: results/...)")
    parser.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="an interpreter with another install of jaxrl-fdg: time both, in interleaved pairs",
    )
    parser.add_argument("--pairs", type=int, default=3, help="with --baseline: pairs of runs")
    args = parser.parse_args()
    name = "mode_pairs_baseline.json" if args.baseline else "mode_pairs.json"
    args.out = args.out or str(Path(__file__).parent / "results" / name)
    modes = cli_args.comma_list(parser, "--modes", args.modes, MODES)
    algos = cli_args.comma_list(parser, "--algos", args.algos, sorted(rl.algorithm.registered()))
    if args.rounds < 1 or args.warm < 2 or (args.iterations is not None and args.iterations < 1):
        parser.error(
            "--rounds and --iterations must be ≥ 1 and --warm ≥ 2, got "
            f"{args.rounds}, {args.iterations} and {args.warm}"
        )

    if args.baseline:
        return against_baseline(args, algos, modes)
    results = {
        algo: measure(algo, modes, args.rounds, args.warm, args.seed, args.iterations)
        for algo in algos
    }
    config = {
        "settings": {a: settings_for(a) for a in algos},
        "modes": modes,
        "rounds": args.rounds,
        "seed": args.seed,
    }
    write_report(args.out, "mode_pairs", config, results)
    for algo, r in results.items():
        rates = ", ".join(f"{m} {r['modes'][m]['steps_per_s']:,.0f}" for m in modes)
        ratios = ", ".join(
            f"{pair} {r[pair]['median']:.3f} [{r[pair]['min']:.2f}, {r[pair]['max']:.2f}]"
            for pair in (f"{a}/{b}" for a, b in PAIRS)
            if pair in r
        )
        print(f"{algo}: env-steps/s {rates}; rate ratios {ratios}; same bits {r['same_bits']}")


def against_baseline(args: argparse.Namespace, algos: list[str], modes: list[str]) -> None:
    """This measurement under ``args.baseline``'s install and this one, alternately."""
    flags = ["--algos", ",".join(algos), "--modes", ",".join(modes), "--rounds", str(args.rounds)]
    flags += ["--warm", str(args.warm), "--seed", str(args.seed)]
    if args.iterations:
        flags += ["--iterations", str(args.iterations)]
    sides: dict[str, list[dict]] = {"baseline": [], "current": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            for side, python in (("baseline", args.baseline), ("current", sys.executable)):
                out = Path(tmp) / f"{side}-{i}.json"
                command = [python, __file__, *flags, "--out", str(out)]
                print(f"pair {i + 1}: {side}", flush=True)
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                sides[side].append(json.loads(out.read_text())["results"])
    results: dict = {}
    for algo in algos:
        results[algo] = {}
        for mode in modes:
            before = [r[algo]["modes"][mode]["us_per_iteration"] for r in sides["baseline"]]
            after = [r[algo]["modes"][mode]["us_per_iteration"] for r in sides["current"]]
            ratios = [b / a for b, a in zip(before, after, strict=True)]
            results[algo][mode] = {
                "baseline_us": statistics.median(before),
                "current_us": statistics.median(after),
                "pair_ratios": ratios,
                "median_pair_ratio": statistics.median(ratios),
            }
            print(
                f"{algo} {mode}: {statistics.median(before):,.0f} -> "
                f"{statistics.median(after):,.0f} µs/it, baseline/current "
                f"{statistics.median(ratios):.3f} [{min(ratios):.2f}, {max(ratios):.2f}]"
            )
    config = {"baseline": args.baseline, "pairs": args.pairs, "rounds": args.rounds}
    config["settings"] = {a: settings_for(a) for a in algos}
    write_report(args.out, "mode_pairs_baseline", config, results)


if __name__ == "__main__":
    main()

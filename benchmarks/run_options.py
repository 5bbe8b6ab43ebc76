"""Steady-state µs per iteration of the ``scan`` program compiled with XLA:CPU options, against the
same program compiled without them, in alternating runs; and whether the options keep the bits.

    python benchmarks/run_options.py                     # PPO and DQN, every option set, 8 runs
    python benchmarks/run_options.py --families ppo --options vector_width_512 --runs 12

The families and their steady state are the hand-written pairs' (``handwritten_pairs.py``): PPO
on CartPole at its defaults, 100 iterations a chunk; DQN on CartPole with one update of batch 128
per iteration of 10 env steps, 8,000 iterations a chunk. Every plan is built in this one process,
warmed past the warm-up, then each option set's chunk runs ``--runs`` times against the plain
program's from the same state, the order alternating from run to run; reported are the median
and range of the ratios plain / optioned (above 1, the option is faster) and whether the state
after the chunk is bit for bit the plain program's. Options reach only the mode's programs;
``init`` keeps its run-once options, so every plan starts from the same state.

The question this answers is whether the compiler can be told to run these programs faster than
its defaults do, which would be a gain any program could take, the hand-written ones included.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import cli_args  # noqa: E402
import handwritten_pairs  # noqa: E402
import jax  # noqa: E402

from jaxrl_fdg import testing  # noqa: E402
from jaxrl_fdg.policies import compiling  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402

# XLA:CPU options that change how the kernels of a program run, not what it computes, except
# where a row says the bits moved. Values are strings as XLA parses them.
OPTIONS: dict[str, dict[str, Any]] = {
    "vector_width_512": {"xla_cpu_prefer_vector_width": 512},
    "custom_matmul_tiling": {"xla_cpu_enable_custom_matmul_tiling": True},
    "onednn": {"xla_cpu_use_onednn": True},
    "xnn_graph_greedy": {
        "xla_cpu_experimental_xnn_graph_fusion_mode": "XNN_GRAPH_FUSION_MODE_GREEDY"
    },
    "xnn_dot_fusion": {"xla_cpu_experimental_xnn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"},
    "ynn_off": {"xla_cpu_experimental_ynn_fusion_type": ""},
    "ynn_dot_eltwise": {
        "xla_cpu_experimental_ynn_fusion_type": (
            "LIBRARY_FUSION_TYPE_DOT,LIBRARY_FUSION_TYPE_ELTWISE"
        )
    },
    "large_small_loops": {"xla_cpu_small_while_loop_byte_threshold": 1_000_000},
    "multi_output_fusion": {"xla_cpu_use_multi_output_fusion": True},
    "concurrency_scheduler": {"xla_cpu_enable_concurrency_optimized_scheduler": True},
    "older_emitters": {"xla_cpu_use_fusion_emitters": False},
}
FAMILIES = ("ppo", "dqn")

_current: dict[str, Any] = {}


def _compile_with(lowered: Any, options: dict[str, Any]) -> Any:
    # ``init`` arrives with its run-once options and keeps them; the mode's programs arrive with
    # none and get the option set being measured.
    return _plain_compile_with(lowered, options or dict(_current))


_plain_compile_with = compiling.compile_with


def chunk_runner(family: str, options: dict[str, Any]):
    """``(run, state after one chunk)``: the family's steady-state chunk
    (``handwritten_pairs.steady_chunk``) compiled under ``options``."""
    _current.clear()
    _current.update(options)
    run = handwritten_pairs.steady_chunk(family, seed=0)
    return run, run()


def measure(family: str, names: list[str], runs: int) -> dict:
    n = handwritten_pairs.STEADY[family]["iterations"]
    plain, reference = chunk_runner(family, {})
    rows = {}
    for name in names:
        try:
            optioned, state = chunk_runner(family, OPTIONS[name])
        except jax.errors.JaxRuntimeError as error:  # an option this jaxlib refuses
            rows[name] = {"options": OPTIONS[name], "error": str(error).splitlines()[0]}
            print(f"| {family} | {name} | refused: {rows[name]['error'][:80]} |", flush=True)
            continue
        unknown = sorted(set(OPTIONS[name]) & compiling.unknown_options())
        if unknown:  # compile_with left them out: the program is the plain one
            rows[name] = {"options": OPTIONS[name], "error": f"unknown to this jaxlib: {unknown}"}
            print(f"| {family} | {name} | unknown to this jaxlib |", flush=True)
            continue
        seconds: dict[str, list[float]] = {"plain": [], "optioned": []}
        sides = {"plain": plain, "optioned": optioned}
        for i in range(runs):
            for side in list(sides) if i % 2 == 0 else list(sides)[::-1]:
                start = time.perf_counter()
                sides[side]()
                seconds[side].append(time.perf_counter() - start)
        ratios = [p / o for p, o in zip(seconds["plain"], seconds["optioned"], strict=True)]
        rows[name] = {
            "options": OPTIONS[name],
            "same_bits": not testing.differences(reference, state),
            "us_per_iteration": {
                side: 1e6 * statistics.median(t) / n for side, t in seconds.items()
            },
            "speedup": {
                "median": statistics.median(ratios),
                "min": min(ratios),
                "max": max(ratios),
                "all": ratios,
            },
        }
        r = rows[name]
        print(
            f"| {family} | {name} | {r['us_per_iteration']['plain']:.0f} "
            f"| {r['us_per_iteration']['optioned']:.0f} | {r['speedup']['median']:.3f} "
            f"({r['speedup']['min']:.2f}-{r['speedup']['max']:.2f}) "
            f"| {'same' if r['same_bits'] else 'other'} |",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated")
    parser.add_argument("--options", default=",".join(OPTIONS), help="comma-separated names")
    parser.add_argument("--runs", type=int, default=8, help="alternating runs per option set")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "run_options.json")
    )
    args = parser.parse_args()
    families = cli_args.comma_list(parser, "--families", args.families, FAMILIES)
    names = cli_args.comma_list(parser, "--options", args.options, OPTIONS)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    compiling.compile_with = _compile_with
    print("| family | options | plain µs/it | optioned µs/it | speedup (range) | bits |")
    print("|---|---|---|---|---|---|")
    results = {family: measure(family, names, args.runs) for family in families}
    write_report(
        args.out,
        "run_options",
        {
            "families": families,
            "runs": args.runs,
            "steady": {f: handwritten_pairs.STEADY[f] for f in families},
            "configs": {f: handwritten_pairs.FAMILIES[f]["config"] for f in families},
        },
        results,
        target="an option that makes the scan program >= 1.1x faster with the same bits",
    )


if __name__ == "__main__":
    main()

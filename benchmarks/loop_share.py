"""The `loop` share of a CPU trace: ours, a hand-written scan of the same loop, and a minimal
reproducer of what XLA:CPU runs under no scope.

``--profile trace`` splits a fused program's device time by the ``jax.named_scope`` each op was
traced under (``profiling/trace.py``); ops under no fragment's scope are ``loop``. This benchmark
traces, on the same states and windows:

* ``ours``: the default PPO run (CartPole-v1, 4 envs × 128 steps, 4 epochs of 4 minibatches) under
  ``--fusion scan``, scopes = its fragments (``actor``, ``env``, ``learner``, …);
* ``handwritten``: ``benchmarks/handwritten_ppo.py``, the same loop written by hand in one
  ``lax.scan``, whose actor, env step and update run under scopes of the same names;
* ``reproducer``: a ``lax.scan`` whose only work outside a scope is one ``jax.random.split`` per
  step, and whose scoped work is a 4-64-4 tanh MLP on 4 rows: what a key split alone puts under
  ``loop`` (its "iteration" is one step);
* each of the three again with JAX's unrolled Threefry lowering registered for CPU (the lowering
  JAX uses on GPUs without its kernel; the same bits), ``*-unrolled``.

Reported per case: the ``loop`` share of attributed device time, ops and copies per iteration
(and how many of them sit under ``loop``), the opcodes that make up ``loop``, and the untraced
µs per iteration (median of ``--rounds``), so the trace's shares can be read against run time.
The trace charges every op the profiler's own cost, so a share counts ops as much as time.

    python benchmarks/loop_share.py        # writes results/loop_share.json
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import handwritten_ppo  # noqa: E402

import jaxrl_fdg as rl  # noqa: E402
from jaxrl_fdg.config import resolve  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402
from profiling.trace import LOOP, attribute, capture, index_program  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "loop_share.json"
STEPS_PER_ITERATION = 512  # PPO's default: 4 envs × 128 steps
SCOPES = ("actor", "env", "learner")


@contextlib.contextmanager
def unrolled_threefry() -> Iterator[None]:
    """Lower ``threefry2x32`` on CPU as JAX does elsewhere (straight-line code, no ``fori_loop``)
    while the block compiles; JAX's own CPU lowering is restored after. Private JAX API: this is
    a measurement, not something the library does."""
    from jax._src.interpreters import mlir

    try:
        from jax._src.random import threefry2x32 as module
    except ImportError:  # JAX before the random package split
        from jax._src import prng as module
    rule = mlir._platform_specific_lowerings["cpu"]
    saved = rule[module.threefry2x32_p]
    mlir.register_lowering(module.threefry2x32_p, module._threefry2x32_lowering_rule, "cpu")
    try:
        yield
    finally:
        rule[module.threefry2x32_p] = saved


def ours(iterations: int) -> tuple[Callable[[], None], list[str], set[str]]:
    config = rl.TrainConfig(
        fusion="scan",
        total_steps=(iterations + 1) * STEPS_PER_ITERATION,
        seed=0,
        out=None,
        progress=False,
        compile_cache=False,
    )
    loop = rl.build_loop(resolve(config))
    plan = rl.make_plan("scan", loop, chunk=iterations)
    state = plan.start(jax.random.key(0))
    plan.collect(plan.advance(state, 1)[1])  # compiles

    def run() -> None:
        new, pending = plan.advance(state, iterations)
        plan.collect(pending)
        jax.block_until_ready(new)

    texts = [c.as_text() for c in plan.compiled.values()]
    return run, texts, {f.name for f in loop.graph.fragments}


def handwritten(iterations: int) -> tuple[Callable[[], None], list[str], set[str]]:
    train = handwritten_ppo.make_train(total_steps=iterations * STEPS_PER_ITERATION)
    key = jax.random.key(0)
    compiled = jax.jit(train).lower(key).compile()
    return (lambda: jax.block_until_ready(compiled(key))), [compiled.as_text()], set(SCOPES)


def reproducer(iterations: int) -> tuple[Callable[[], None], list[str], set[str]]:
    """``iterations`` × 128 steps; each step splits the key (no scope) and, under scope
    ``work``, runs a 4-64-4 tanh MLP on the carried ``[4, 4]`` input plus noise drawn from the
    split key (so neither half can be hoisted out of the loop)."""
    w1 = jax.random.normal(jax.random.key(1), (4, 64)) * 0.5
    w2 = jax.random.normal(jax.random.key(2), (64, 4)) * 0.1

    def step(carry, _):
        key, h = carry
        key, sub = jax.random.split(key)
        with jax.named_scope("work"):
            noise = jax.random.key_data(sub).astype(jnp.float32)[0] * 1e-12
            h = jnp.tanh(h @ w1) @ w2 + noise
        return (key, h), None

    def program(key):
        return jax.lax.scan(step, (key, jnp.ones((4, 4))), length=iterations * 128)[0][1]

    key = jax.random.key(0)
    compiled = jax.jit(program).lower(key).compile()
    return (lambda: jax.block_until_ready(compiled(key))), [compiled.as_text()], {"work"}


CASES = {"ours": ours, "handwritten": handwritten, "reproducer": reproducer}


def measure(
    build: Callable, iterations: int, timed: int, rounds: int, unrolled: bool, per_iteration: int
) -> dict:
    """Trace ``iterations`` iterations; time ``timed`` iterations untraced (a longer program, so
    host work per call weighs as little as in a real run), ``rounds`` times."""
    with unrolled_threefry() if unrolled else contextlib.nullcontext():
        run, texts, scopes = build(iterations)
        run_timed, _, _ = build(timed)
    run_timed()  # warm
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        run_timed()
        seconds.append(time.perf_counter() - start)
    run()
    with capture() as events:
        run()
    attribution, annotated = attribute(events, texts, scopes)
    index = {}
    for text in texts:
        module, instructions = index_program(text)
        index[module] = instructions
    ops: collections.Counter = collections.Counter()
    loop_ops: collections.Counter = collections.Counter()
    for event in annotated:
        args = event.get("args") or {}
        if "scope" not in args:
            continue
        opcode = index[args["hlo_module"]][args["hlo_op"]].opcode
        ops[opcode] += 1
        if args["scope"] == LOOP:
            loop_ops[opcode] += 1
    total = sum(attribution.exclusive.values())
    n = iterations * per_iteration
    return {
        "loop_share": attribution.exclusive.get(LOOP, 0.0) / total if total else None,
        "exclusive_s": dict(sorted(attribution.exclusive.items())),
        "ops_per_iteration": sum(ops.values()) / n,
        "copies_per_iteration": ops["copy"] / n,
        "loop_ops_per_iteration": sum(loop_ops.values()) / n,
        "loop_copies_per_iteration": loop_ops["copy"] / n,
        "loop_opcodes": dict(loop_ops.most_common(8)),
        "us_per_iteration": statistics.median(seconds) / (timed * per_iteration) * 1e6,
        "us_per_iteration_all": [s / (timed * per_iteration) * 1e6 for s in seconds],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2, help="iterations per trace window")
    parser.add_argument("--timed", type=int, default=20, help="iterations per untraced timing")
    parser.add_argument("--rounds", type=int, default=5, help="untraced timings (median)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if min(args.iterations, args.timed, args.rounds) < 1:
        parser.error(
            "--iterations, --timed and --rounds must be ≥ 1, got "
            f"{args.iterations}, {args.timed}, {args.rounds}"
        )
    load_before = os.getloadavg()
    results = {}
    for name, build in CASES.items():
        # µs and ops per PPO iteration; the reproducer's "iteration" is one step of its scan
        per_iteration = 128 if name == "reproducer" else 1
        for unrolled in (False, True):
            case = f"{name}-unrolled" if unrolled else name
            results[case] = measure(
                build, args.iterations, args.timed, args.rounds, unrolled, per_iteration
            )
            r = results[case]
            print(
                f"{case}: loop {r['loop_share']:.1%} of traced device time, "
                f"{r['ops_per_iteration']:,.0f} ops/it ({r['loop_ops_per_iteration']:,.0f} loop, "
                f"{r['loop_copies_per_iteration']:,.0f} loop copies), "
                f"{r['us_per_iteration']:,.1f} µs/it untraced",
                flush=True,
            )
    config = {
        "algo": "ppo",
        "env": "CartPole-v1",
        "steps_per_iteration": STEPS_PER_ITERATION,
        "iterations_per_window": args.iterations,
        "timed_iterations": args.timed,
        "rounds": args.rounds,
        "reproducer": "per step: a key split (no scope), a 4-64-4 tanh MLP on 4 rows (scope work)",
    }
    write_report(
        args.out,
        "loop_share",
        config,
        results,
        load_average={"before": list(load_before), "after": list(os.getloadavg())},
    )


if __name__ == "__main__":
    main()

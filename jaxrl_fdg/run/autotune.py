"""``--fusion auto``: measure each fusion mode on this run, then run the fastest.

Every fusion mode computes the same result for the same seed (``tests/policies/test_fusion.py``),
so the choice is a question of speed alone, and the answer depends on the algorithm, its sizes and
the machine: ``scan`` wins where dispatch dominates (small on-policy batches), a split mode can win
where one fused program pays for copies XLA inserts around large loop carries. The probe compiles
each candidate, then advances it from the run's initial state one boundary's worth of iterations at
a time, at least twice and until :data:`MIN_PROBE_S` seconds have passed, and ranks the candidates
by the env-steps/s of their fastest advance (the one least disturbed by whatever else the machine
does; the first call also pays one-time costs). The run then starts from that same initial state in
the winning mode: the probe's iterations are not kept, so what the run computes is exactly what the
winning mode chosen by hand computes. The probe's cost (its compiles and iterations) is reported
apart.

``eager`` is never a candidate: it compiles nothing and is slower by orders of magnitude.
"""

from __future__ import annotations

import sys
import time
from typing import Any, NamedTuple

import jax

from jaxrl_fdg.config import Resolved
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.policies import AUTO_FUSION
from jaxrl_fdg.profiling.timers import Timings
from jaxrl_fdg.run.build import build_loop

CANDIDATES = ("scan", "iteration", "fragment", "step")
MIN_PROBE_S = 0.3  # each candidate's timed advances take at least this long in all
MAX_ADVANCES = 20


class Probe(NamedTuple):
    """One candidate's measurement: ``compile_s`` (init and its programs), ``run_s`` (its
    fastest advance of ``iterations`` iterations, of ``advances``) and the env-steps/s that
    makes."""

    mode: str
    compile_s: float
    run_s: float
    iterations: int
    advances: int
    steps_per_s: float


def candidates(resolved: Resolved) -> tuple[str, ...]:
    """The fusion modes the run's placement can run, most fused first."""
    return tuple(m for m in CANDIDATES if m in resolved.placement.fusion_modes)


def probe(resolved: Resolved, mode: str, iterations: int) -> Probe:
    """Compile ``mode``'s programs for this run and time its advances of ``iterations``."""
    config = resolved.config.replace(fusion=mode)
    resolved = resolved._replace(config=config)
    loop = build_loop(resolved)
    plan = resolved.placement.plan(mode, loop, Timings("off"), iterations)
    start = time.perf_counter()
    state = plan.init(resolved.placement.initial_key(resolved))
    plan.compile(state)
    compile_s = time.perf_counter() - start
    times: list[float] = []
    try:
        while len(times) < 2 or (sum(times) < MIN_PROBE_S and len(times) < MAX_ADVANCES):
            start = time.perf_counter()
            state = _advance(plan, state, iterations)
            times.append(time.perf_counter() - start)
    finally:
        resolved.placement.release(loop, state)
    steps = iterations * config.steps_per_iteration
    return Probe(mode, compile_s, min(times), iterations, len(times), steps / min(times))


def _advance(plan: Any, state: LoopState, iterations: int) -> LoopState:
    state, pending = plan.advance(state, iterations)
    plan.collect(pending)
    return jax.block_until_ready(state)


def choose_fusion(resolved: Resolved, out=sys.stderr) -> tuple[Resolved, dict[str, Any]]:
    """``resolved`` with ``fusion = auto`` replaced by the fastest candidate, and a report of
    the probe (each candidate's figures, the winner, the probe's wall seconds), which is also
    printed to ``out`` as a table. A placement that runs one mode alone gets it unprobed."""
    iterations = min(resolved.config.boundary_every, resolved.config.num_iterations)
    modes = candidates(resolved)
    if len(modes) == 1:
        config = resolved.config.replace(fusion=modes[0])
        return resolved._replace(config=config), {"chosen": modes[0], "probe_s": 0.0}
    start = time.perf_counter()
    probes = [probe(resolved, mode, iterations) for mode in modes]
    probe_s = time.perf_counter() - start
    winner = max(probes, key=lambda p: p.steps_per_s)
    if out is not None:
        print(f"--fusion {AUTO_FUSION}: each mode for {iterations} iterations", file=out)
        print(f"  {'mode':<10} {'compile s':>10} {'env-steps/s':>14}", file=out)
        for p in probes:
            mark = "  <- runs" if p is winner else ""
            print(f"  {p.mode:<10} {p.compile_s:>10.2f} {p.steps_per_s:>14,.0f}{mark}", file=out)
        print(f"  probing took {probe_s:.1f} s", file=out, flush=True)
    report = {
        "chosen": winner.mode,
        "probe_s": probe_s,
        "iterations": iterations,
        "candidates": {p.mode: p._asdict() for p in probes},
    }
    return resolved._replace(config=resolved.config.replace(fusion=winner.mode)), report

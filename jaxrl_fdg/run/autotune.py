"""``--fusion auto`` and ``--placement auto``: measure each candidate on this run, then run the
fastest.

Every fusion mode computes the same result for the same seed (``tests/policies/test_fusion.py``),
so the choice of a mode is a question of speed alone, and the answer depends on the algorithm, its
sizes and the machine: ``scan`` wins where dispatch dominates (small on-policy batches), a split
mode can win where one fused program pays for copies XLA inserts around large loop carries. The
probe compiles each candidate, then advances it from the run's initial state one boundary's worth
of iterations at a time, at least twice and until :data:`MIN_PROBE_S` seconds have passed, and
ranks the candidates by the env-steps/s of their fastest advance (the one least disturbed by
whatever else the machine does; the first call also pays one-time costs). The run then starts from
that same initial state with the winner: the probe's iterations are not kept, so what the run
computes is exactly what the winner chosen by hand computes. The probe's cost (its compiles and
iterations) is reported apart.

``--placement auto`` adds the placements this machine allows to the candidates (resolved once,
by :func:`jaxrl_fdg.config.resolve.auto_placements`, into ``Resolved.candidates``): ``single``;
``host_env`` for a host simulator; ``data_parallel`` over every visible device and
``actor_learner`` where there are two or more. Placements are not all the same computation:
``actor_learner`` equals ``single``, but a ``data_parallel`` run splits its environments into
shards with key streams of their own and a ``host_env`` run seeds its two halves apart. The run
equals the winning placement chosen by hand, with the devices the table names, which
``config.toml`` records.

``eager`` is never a candidate: it compiles nothing and is slower by orders of magnitude.
"""

from __future__ import annotations

import sys
import time
from typing import Any, NamedTuple

import jax

from jaxrl_fdg.config import Resolved
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.policies import AUTO_FUSION, AUTO_PLACEMENT
from jaxrl_fdg.profiling.timers import Timings
from jaxrl_fdg.run.build import build_loop

CANDIDATES = ("scan", "iteration", "fragment", "step")
MIN_PROBE_S = 0.3  # each candidate's timed advances take at least this long in all
MAX_ADVANCES = 20


class Probe(NamedTuple):
    """One candidate's measurement: ``compile_s`` (init and its programs), ``run_s`` (its
    fastest advance of ``iterations`` iterations, of ``advances``) and the env-steps/s that
    makes, for fusion ``mode`` under ``placement`` on ``devices`` devices."""

    placement: str
    devices: int
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
    state = plan.init(resolved.placement.initial_key(resolved.request))
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
    fastest = min(times)
    return Probe(
        config.placement,
        config.devices,
        mode,
        compile_s,
        fastest,
        iterations,
        len(times),
        steps / fastest,
    )


def _advance(plan: Any, state: LoopState, iterations: int) -> LoopState:
    state, pending = plan.advance(state, iterations)
    plan.collect(pending)
    return jax.block_until_ready(state)


def choose(resolved: Resolved, out=sys.stderr) -> tuple[Resolved, dict[str, Any]]:
    """``resolved`` with ``fusion = auto`` and ``placement = auto`` replaced by the fastest
    candidate, and a report of the probe (each candidate's figures, the winner, the probe's wall
    seconds), which is also printed to ``out`` as a table. A single candidate runs unprobed."""
    config = resolved.config
    iterations = min(config.boundary_every, config.num_iterations)
    placements = resolved.candidates or {config.placement: resolved}  # several: placement auto
    pairs = [
        (placed, mode)
        for placed in placements.values()
        for mode in (candidates(placed) if config.fusion == AUTO_FUSION else (config.fusion,))
    ]
    report: dict[str, Any] = {"iterations": iterations, "probe_s": 0.0, "candidates": []}
    probes, winner = [], None
    if len(pairs) == 1:
        placed, mode = pairs[0]
    else:
        start = time.perf_counter()
        probes = [probe(placed, mode, iterations) for placed, mode in pairs]
        report["probe_s"] = time.perf_counter() - start
        report["candidates"] = [p._asdict() for p in probes]
        best = max(range(len(pairs)), key=lambda i: probes[i].steps_per_s)
        (placed, mode), winner = pairs[best], probes[best]
    chosen = placed._replace(config=placed.config.replace(fusion=mode))
    report.update(placement=chosen.config.placement, devices=chosen.config.devices, fusion=mode)
    if out is not None and winner is not None:
        _print(config, report, probes, winner, out)
    return chosen, report


def _print(config: Any, report: dict[str, Any], probes: list[Probe], winner: Probe, out) -> None:
    autos = [
        f"--{name} {auto}"
        for name, auto in (("placement", AUTO_PLACEMENT), ("fusion", AUTO_FUSION))
        if getattr(config, name) == auto
    ]
    print(f"{' '.join(autos)}: each candidate for {report['iterations']} iterations", file=out)
    print(
        f"  {'placement':<14} {'devices':>7}  {'fusion':<10} {'compile s':>10} {'env-steps/s':>14}",
        file=out,
    )
    for p in probes:
        mark = "  <- runs" if p is winner else ""
        print(
            f"  {p.placement:<14} {p.devices:>7}  {p.mode:<10} {p.compile_s:>10.2f} "
            f"{p.steps_per_s:>14,.0f}{mark}",
            file=out,
        )
    print(f"  probing took {report['probe_s']:.1f} s", file=out, flush=True)

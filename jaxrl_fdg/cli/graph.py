"""``jaxrl-fdg graph``: an algorithm's dataflow graph for one run's settings.

It prints the nodes, the edges, the schedule tree, how often each node of the tree runs over the
run (:func:`firings`) and what each fusion mode compiles together. It takes the flags of
``train`` (those of the run and the algorithm's hyperparameters, and ``--config FILE``), so a
training command line shows its own graph with ``graph`` in place of ``train``; it trains
nothing and writes nothing.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

from jaxrl_fdg import config as cfg
from jaxrl_fdg.cli import common
from jaxrl_fdg.core import algorithm as algorithms
from jaxrl_fdg.core.cadence import STEP, Cadence, Every, Rounds, Step, gate
from jaxrl_fdg.core.schedule import Schedule
from jaxrl_fdg.errors import ConfigError, warn
from jaxrl_fdg.policies import programs
from jaxrl_fdg.run import build_loop
from jaxrl_fdg.run.build import hazards

DESCRIPTION = (
    "Print an algorithm's dataflow graph for a run's settings: its nodes and edges, the "
    "schedule tree, how often each node of the tree runs over the run (per iteration, in all, "
    "and in env steps), and what each fusion mode compiles together. It takes the flags of "
    "train, the algorithm's hyperparameters among them; it trains nothing and writes nothing."
)


class Firing(NamedTuple):
    """How often one node of the schedule tree runs over a run.

    Attributes:
      label: the node: its calls, in order (the rollout's prefixed ``rollout:``).
      cadence: the node's cadence.
      per_iteration: its calls in an iteration it runs in: the rollout's length for the step
        body, ``k`` for ``rounds(k)``, else 1.
      period: iterations from one iteration it runs in to the next: ``n`` for ``every(n)``,
        else 1.
      calls: its calls over the run: ``per_iteration × (iterations // period)``; the most it
        can make where a condition gates it.
      env_steps: env steps from one of its calls to the next (the step body: ``num_envs``, one
        call steps every env), or from one iteration it runs in to the next.
      gate: the condition that gates it (``rounds(k, when)``, ``every(n, when)``), else None.
    """

    label: str
    cadence: Cadence
    per_iteration: int
    period: int
    calls: int
    env_steps: int
    gate: str | None = None


def firings(schedule: Schedule, num_envs: int, iterations: int) -> tuple[Firing, ...]:
    """How often each node of ``schedule`` runs over ``iterations`` iterations of ``num_envs``
    environments: the step body first, then the nodes after the rollout, in order.

    One iteration is ``schedule.rollout.length`` calls of the step body (each steps all
    ``num_envs`` environments), then each node after the rollout: every iteration, at the end of
    iterations ``n, 2n, ...`` (``every(n)``: ``iterations // n`` times), or ``k`` rounds
    (``rounds(k, when)``: in the iterations where ``when`` holds)."""
    length = schedule.rollout.length
    per_iteration = num_envs * length  # env steps
    step = ", ".join(c.label for c in schedule.rollout.calls)
    out = [Firing(f"rollout: {step}", STEP, length, 1, length * iterations, num_envs)]
    for node in schedule.after:
        label = ", ".join(c.label for c in node.calls)
        cadence, count, period = node.cadence, 1, 1
        when = gate(cadence)
        if isinstance(cadence, Every):
            period = cadence.n
        elif isinstance(cadence, Rounds):
            count = cadence.count
        gate_text = None if when is None else str(when)
        calls = count * (iterations // period)
        out.append(Firing(label, cadence, count, period, calls, period * per_iteration, gate_text))
    return tuple(out)


def describe(firing: Firing, iterations: int) -> str:
    """``firing`` in words, e.g. ``every 4 iterations: 244 times, every 2,048 env steps``."""
    f, over = firing, _count(iterations, "iteration")
    if isinstance(f.cadence, Step):
        return (
            f"every step: {f.per_iteration:,} per iteration, {_count(f.calls, 'call')} over "
            f"{over} (each steps {'all ' if f.env_steps > 1 else ''}{_count(f.env_steps, 'env')})"
        )
    if isinstance(f.cadence, Rounds):
        rounds = f"{_count(f.per_iteration, 'round')} per iteration"
        if f.gate is None:
            return f"{rounds}: {_count(f.calls, 'round')}, every {f.env_steps:,} env steps"
        return (
            f"{rounds} when its condition holds: at most {_count(f.calls, 'round')}, every "
            f"{f.env_steps:,} env steps; gated by: {f.gate}"
        )
    if f.calls == 0:
        return f"{f.cadence}: never, the run has {over}"
    if f.gate is not None:
        return (
            f"every {_count(f.period, 'iteration')} when its condition holds: at most "
            f"{_count(f.calls, 'time')}, every {f.env_steps:,} env steps; gated by: {f.gate}"
        )
    return f"{f.cadence}: {_count(f.calls, 'time')}, every {f.env_steps:,} env steps"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' if n != 1 else ''}"


def lines(counted: tuple[Firing, ...], config: cfg.TrainConfig, lanes: int = 1) -> list[str]:
    """The section of ``graph``'s output that says how often each node runs over ``config``'s
    run (a resolved config: its sizes set), ``counted`` its :func:`firings`."""
    iterations, per = config.num_iterations, config.steps_per_iteration
    width = max(len(f.label) for f in counted)
    each = f", in each of {lanes:,} lanes" if lanes > 1 else ""
    sizes = f"{_count(config.num_envs, 'env')} × {_count(config.rollout_len, 'step')}"
    out = [
        f"how often each node runs over the run: {_count(iterations, 'iteration')} × {per:,} "
        f"env steps ({sizes}) = {iterations * per:,} env steps{each}"
    ]
    out += [f"  {f.label:<{width}}  {describe(f, iterations)}" for f in counted]
    return out


def parser(algo: str) -> argparse.ArgumentParser:
    """The parser of ``graph`` with ``algo``'s hyperparameters."""
    spec = algorithms.get(algo)
    cfg.check_spec(spec)  # its hyperparameters' flags must not clash with the run's
    parser = argparse.ArgumentParser(
        prog="jaxrl-fdg graph", description=DESCRIPTION, allow_abbrev=False
    )
    parser.add_argument(
        "algo",
        nargs="?",
        metavar="ALGO",
        help="algorithm name, or package.module:SPEC or path/to/file.py:SPEC (default: the "
        f"config file's, else {cfg.TrainConfig.algo})",
    )
    common.add_config_flag(parser)
    common.add_run_flags(parser, spec, leave_out=("algo",))
    common.add_hparam_flags(parser, spec)
    return parser


# The flags that take no value; every other flag of graph takes one.
SWITCHES = ("-h", "--help", *common.SWITCHES)


def _algo(argv: list[str]) -> str | None:
    """ALGO, if given: the first argument that is neither a flag nor a flag's value. (The
    parser that would find it depends on it: the algorithm's hyperparameters are flags.)"""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[i + 1] if i + 1 < len(argv) else None
        if not word.startswith("-") or word == "-":
            return word
        i += 1 if "=" in word or word in SWITCHES else 2
    return None


def run(argv: list[str]) -> int:
    """``jaxrl-fdg graph ARGV``; returns the exit status."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config")
    path = pre.parse_known_args(argv)[0].config
    data, named = common.read_config(path) if path else ({}, cfg.TrainConfig.algo)
    algo = _algo(argv) or named
    args = parser(algo).parse_args(argv)
    if path and algo != named and data.get("hparams"):
        raise ConfigError(
            f"{path}: its hparams are {named}'s, and {algo} takes its own (leave out ALGO, or "
            "the file's hparams table)"
        )
    config = common.config_from(args, data, skip=("config",)).replace(out=None)
    resolved = cfg.resolve(config)
    loop = build_loop(resolved)
    schedule, config = loop.graph.schedule, resolved.config
    counted = firings(schedule, config.num_envs, config.num_iterations)
    for message in hazards(loop, config.num_iterations):
        warn(message)
    print(loop.graph.describe(programs(schedule)))
    print("\n".join(lines(counted, config, len(resolved.lanes))))
    return 0

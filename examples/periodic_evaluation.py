"""Evaluation inside the compiled program: an evaluator fragment that runs every N iterations.

PPO (``jaxrl_fdg.fragments.algorithms.ppo``, unchanged) gets one more fragment, added with
``Algorithm.with_fragments``: role ``evaluator``, cadence ``rl.every(N)``. It reads the
learner's published ``params`` and plays ``episodes`` episodes, one per environment of its own
(``ctx.env`` with ``ctx.env_params``, the run's environment), with the algorithm's
deterministic policy (the most probable action, or the Gaussian's mean), and reports

    eval_return = (1/E) Σ_e Σ_t r_t^e        over the E episodes, each to its end or max_steps

with its spread and the mean episode length, as its ``metrics``.

The run's own evaluation (``TrainConfig.eval_every``) is the runner's: it plays on the host's
schedule, between compiled calls, at a host boundary. This one is a node of the graph: a
``lax.cond`` on the iteration counter inside the training program, so the scan fusion mode
evaluates without leaving the device, and every fusion mode evaluates at the same iterations
(``N, 2N, ...``), after that iteration's update (it reads what the learner publishes, so it runs
after the learner), with the same keys. Its metrics are ``evaluator/eval_return`` and the
others, zero on the iterations it skips, and ``evaluator/runs``, 1 where it ran: metric rows
average over the iterations that ran.

A node of evaluators takes its key apart from the training nodes' (``fold_in`` of the learn
key), so PPO's updates draw the same keys as PPO alone: the learner ends with the same bits as a
run without the evaluator.

    python examples/periodic_evaluation.py --total-steps 100000
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg import testing, validate
from jaxrl_fdg.fragments.algorithms import ppo


@dataclasses.dataclass(frozen=True)
class Config(ppo.PPOConfig):
    """PPO's hyperparameters and the evaluator's. (Not ``eval_every`` and ``eval_episodes``:
    those name the run's own evaluation, a flag of ``jaxrl-fdg train`` already.)"""

    graph_eval_every: int = rl.hparam(10, "N: iterations between in-graph evaluations")
    graph_eval_episodes: int = rl.hparam(8, "episodes per in-graph evaluation, played in parallel")

    def __post_init__(self) -> None:
        super().__post_init__()
        validate.positive_int("graph_eval_every", self.graph_eval_every)
        validate.positive_int("graph_eval_episodes", self.graph_eval_episodes)


def build(ctx: rl.AlgorithmContext[Config]) -> rl.Algorithm:
    hp = ctx.hparams
    algorithm = ppo.SPEC.build(ctx)._replace(name="ppo-periodic-eval")
    # The library's evaluator, as a fragment of cadence every(N): it reads the learner's
    # published params and reports eval_return, eval_return_std and eval_length as metrics.
    evaluator = rl.in_graph_evaluator(
        ctx, algorithm, every=hp.graph_eval_every, episodes=hp.graph_eval_episodes
    )
    return algorithm.with_fragments(evaluator)


def check(ctx: rl.AlgorithmContext[Config]) -> None:
    ppo.check(ctx)
    if ctx.env is None or getattr(ctx.env, "on_host", False):
        # A host simulator steps outside the compiled program: nothing to play inside it.
        raise rl.ConfigError(
            "the in-graph evaluator plays a JAX environment inside the compiled program; this "
            "run's environment is a host simulator (use --eval-every for host evaluation)"
        )


SPEC = rl.AlgorithmSpec(
    "ppo-periodic-eval",
    Config,
    build,
    check,
    summary="PPO with an evaluator inside the graph, every N iterations",
    defaults=ppo.SPEC.defaults,
)


# -- running it -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument(
        "--graph-eval-every", type=int, default=20, help="N: iterations between evaluations"
    )
    parser.add_argument(
        "--fusion", default="step,fragment,iteration,scan", help="comma-separated fusion modes"
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.fusion.split(",") if m]
    config = rl.TrainConfig(
        algo=SPEC.name,
        total_steps=args.total_steps,
        out=None,
        progress=False,
        hparams={"graph_eval_every": args.graph_eval_every},
    )
    print(rl.build_loop(rl.resolve(config, SPEC)).graph.describe())
    # Trained under each fusion mode; assert_modes_agree raises, naming the leaves that differ,
    # unless every run ends on the same bits (final state and metrics) as the first.
    results = testing.assert_modes_agree(config, SPEC, modes)
    for mode, result in results.items():
        ran = result.metrics["evaluator/runs"] > 0
        returns = result.metrics["evaluator/eval_return"][ran]
        print(f"{mode:>9}: in-graph eval_return at iterations {np.flatnonzero(ran) + 1}:")
        print(f"{'':>11}{np.array2string(returns, precision=1)}")
    print("same state and metrics under every fusion mode")


if __name__ == "__main__":
    main()

"""jaxrl-fdg: reinforcement learning in JAX as a fragmented dataflow graph.

An algorithm is written once as pure fragments; a fusion flag decides how they are compiled and
a placement where they run::

    import jaxrl_fdg as rl

    result = rl.train(rl.TrainConfig(env="CartPole-v1", fusion="scan", total_steps=200_000))
    print(result.summary["final_return"])

Packages: ``core`` (fragment, graph, algorithm, loop), ``policies`` (fusion plans,
placements), ``run`` (runner, session, checkpoints, run folders), ``config``, plus ``envs``,
``fragments`` and ``profiling``.
"""

from jaxrl_fdg.config import TrainConfig, resolve
from jaxrl_fdg.core import (
    Algorithm,
    AlgorithmContext,
    AlgorithmSpec,
    Edge,
    EmptyState,
    Extended,
    Fragment,
    Graph,
    LaggedLoop,
    Loop,
    LoopState,
    Method,
    Role,
    Schedule,
    Site,
    Transition,
    condition,
    every,
    extend,
    fragment,
    hparam,
    in_graph_evaluator,
    lagged,
    make_loop,
    rounds,
)
from jaxrl_fdg.core import algorithm as algorithm
from jaxrl_fdg.core.cadence import ITERATION, STEP
from jaxrl_fdg.envs.check import check_env
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies import FUSION_MODES, Placement, make_plan
from jaxrl_fdg.run import RunResult, build_loop, evaluate, make_train, train

__version__ = "0.1.0"

__all__ = [
    "FUSION_MODES",
    "ITERATION",
    "STEP",
    "Algorithm",
    "AlgorithmContext",
    "AlgorithmSpec",
    "ConfigError",
    "Edge",
    "EmptyState",
    "Extended",
    "Fragment",
    "Graph",
    "LaggedLoop",
    "Loop",
    "LoopState",
    "Method",
    "Placement",
    "Role",
    "RunResult",
    "Schedule",
    "Site",
    "TrainConfig",
    "Transition",
    "algorithm",
    "build_loop",
    "check_env",
    "condition",
    "evaluate",
    "every",
    "extend",
    "fragment",
    "hparam",
    "in_graph_evaluator",
    "lagged",
    "make_loop",
    "make_plan",
    "make_train",
    "resolve",
    "rounds",
    "train",
]

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

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_fdg import lazy

if TYPE_CHECKING:
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

# Where each public name lives. They load on first use (PEP 562): ``import jaxrl_fdg`` alone
# imports no JAX, so the command can take over the stop signals before its heavy imports, and a
# tool that only reads the package's metadata stays fast.
_WHERE = {
    "jaxrl_fdg.config": ("TrainConfig", "resolve"),
    "jaxrl_fdg.core": (
        "Algorithm", "AlgorithmContext", "AlgorithmSpec", "Edge", "EmptyState", "Extended",
        "Fragment", "Graph", "LaggedLoop", "Loop", "LoopState", "Method", "Role", "Schedule",
        "Site", "Transition", "algorithm", "condition", "every", "extend", "fragment", "hparam",
        "in_graph_evaluator", "lagged", "make_loop", "rounds",
    ),
    "jaxrl_fdg.core.cadence": ("ITERATION", "STEP"),
    "jaxrl_fdg.envs.check": ("check_env",),
    "jaxrl_fdg.errors": ("ConfigError",),
    "jaxrl_fdg.policies": ("FUSION_MODES", "Placement", "make_plan"),
    "jaxrl_fdg.run": ("RunResult", "build_loop", "evaluate", "make_train", "train"),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

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

__getattr__, __dir__ = lazy.names(__name__, _MODULE_OF, globals())

"""jaxrl-fdg: reinforcement learning in JAX as a fragmented dataflow graph.

An algorithm is written once as pure fragments; a fusion flag decides how they are compiled::

    import jaxrl_fdg as rl

    result = rl.train(rl.TrainConfig(env="CartPole-v1", fusion="scan", total_steps=200_000))
    print(result.summary["final_return"])
"""

from jaxrl_fdg.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, OffPolicy, Replay
from jaxrl_fdg.config import TrainConfig, resolve
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragment import EmptyState, Fragment, Role, fragment
from jaxrl_fdg.fusion import FUSION_MODES, make_plan
from jaxrl_fdg.graph import Edge, Graph
from jaxrl_fdg.loop import Loop, LoopState, Transition
from jaxrl_fdg.runner import RunResult, build_loop, evaluate, make_train, train

__version__ = "0.1.0"

__all__ = [
    "FUSION_MODES",
    "Algorithm",
    "AlgorithmContext",
    "AlgorithmSpec",
    "ConfigError",
    "Edge",
    "EmptyState",
    "Fragment",
    "Graph",
    "Loop",
    "LoopState",
    "OffPolicy",
    "Replay",
    "Role",
    "RunResult",
    "TrainConfig",
    "Transition",
    "build_loop",
    "evaluate",
    "fragment",
    "make_plan",
    "make_train",
    "resolve",
    "train",
]

"""Running a configuration: the runner, sessions, checkpoints, run folders, evaluation,
metrics and progress. Heavy optional backends (orbax, rich, tensorboardX) load when used."""

from jaxrl_fdg.run.build import build_loop
from jaxrl_fdg.run.evaluation import evaluate
from jaxrl_fdg.run.runner import RunResult, initial_key, make_train, train

__all__ = ["RunResult", "build_loop", "evaluate", "initial_key", "make_train", "train"]

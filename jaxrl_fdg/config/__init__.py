"""Run configuration: the schema, file input and output, sweeps, and resolution.

``config`` validates and resolves; it asks the placement objects of ``jaxrl_fdg.policies`` to
check what is theirs and never imports their internals.
"""

from jaxrl_fdg.config.files import dump_toml, from_mapping, load, to_mapping
from jaxrl_fdg.config.resolve import (
    Resolved,
    check_environment,
    check_values,
    make_env,
    resolve,
)
from jaxrl_fdg.config.schema import (
    AUTO_BOUNDARIES,
    BOOKKEEPING,
    EXECUTION,
    EXPERIMENT,
    GROUPS,
    NOT_COMPUTED,
    RUN_DEFAULTS,
    TrainConfig,
    setting,
)
from jaxrl_fdg.config.sweeps import Lane, lanes, split_sweep
from jaxrl_fdg.config.values import check_spec, coerce, make_hparams, unoptional

__all__ = [
    "AUTO_BOUNDARIES",
    "BOOKKEEPING",
    "EXECUTION",
    "EXPERIMENT",
    "GROUPS",
    "NOT_COMPUTED",
    "RUN_DEFAULTS",
    "Lane",
    "Resolved",
    "TrainConfig",
    "check_environment",
    "check_spec",
    "check_values",
    "coerce",
    "dump_toml",
    "from_mapping",
    "lanes",
    "load",
    "make_env",
    "make_hparams",
    "setting",
    "resolve",
    "split_sweep",
    "to_mapping",
    "unoptional",
]

"""``jaxrl-fdg list``: the algorithms, environments, environment adapters, placements and fusion
modes there are. (The module is not named ``list``: the package would then hide the builtin.)"""

from __future__ import annotations

import textwrap

from jaxrl_fdg import config as cfg
from jaxrl_fdg import envs, plugins, policies
from jaxrl_fdg.core import algorithm as algorithms
from jaxrl_fdg.experiment.suites import SUITES
from jaxrl_fdg.policies import FUSION_MODES, PROGRAMS


def run() -> int:
    _algorithms()
    print(
        "environments; your own: --env MODULE:ID (MODULE registers ID), or an installed "
        f"package's entry point ({plugins.ENVIRONMENTS}):"
    )
    for name in envs.registered():
        print(f"  {name}")
    print("environment adapters (prefix/<id>; packages are imported only when used):")
    for row in envs.adapters():
        status = "installed" if row.installed else f"not installed: pip install {row.install}"
        print(f"  {row.syntax:<24} {row.description}")
        print(f"  {'':<24} e.g. {row.example} ({status})")
        if row.names:
            print(_names(row.names, indent=27))
    print("placements (--placement):")
    for name in policies.registered():
        print(f"  {name:<14} {policies.get(name).summary}")
    print(
        f"  {policies.AUTO_PLACEMENT:<14} measure the placements this machine allows; run the "
        "fastest"
    )
    print("fusion modes (most split to most fused; default scan):")
    for mode in FUSION_MODES:
        print(f"  {mode:<10} {PROGRAMS[mode]}")
    print("experiment suites (jaxrl-fdg experiment SUITE --out DIR, or suite = SUITE in a file):")
    for name, suite in SUITES.items():
        print(f"  {name:<10} {suite.description}")
        print(f"  {'':<10} {len(suite.envs)} envs × {', '.join(suite.algos)}; {suite.seeds} seeds")
    return 0


def _algorithms() -> None:
    print(
        "algorithms (default run: env, env steps, envs × rollout); your own: --algo "
        "package.module:SPEC or path/to/file.py:SPEC, or an installed package's entry point "
        f"({plugins.ALGORITHMS}):"
    )
    for name in algorithms.registered():
        spec = algorithms.get(name)
        config = cfg.TrainConfig(algo=name).with_defaults(spec.defaults)
        print(f"  {name:<12} {spec.summary}")
        print(
            f"  {'':<12} default run: {config.env}, {config.total_steps:,} steps, "
            f"{config.num_envs} × {config.rollout_len}"
        )


def _names(names: tuple[str, ...], indent: int) -> str:
    """``names: a, b, ...`` wrapped to 100 columns under the column at ``indent``."""
    return textwrap.fill(
        ", ".join(names),
        width=100,
        initial_indent=f"{'':<{indent}}names: ",
        subsequent_indent=f"{'':<{indent + 7}}",
        break_on_hyphens=False,
    )

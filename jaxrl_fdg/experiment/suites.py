"""The experiment suites that ship: named grids a user runs as they are
(``jaxrl-fdg experiment classic --out DIR``) or starts a file from (``suite = "minatar"``).

Each suite has its environments with a budget each, its algorithms (by default every built-in
one that can act in the environment: the grid leaves the other pairs out), per-algorithm
settings where the defaults do not suit its tasks, and a normalisation table: for each
environment the return of the uniform random policy and a reference return, so that
``(score − random) / (reference − random)`` puts every task on one scale (0: random,
1: reference).

The ``random`` column is measured: ``python benchmarks/random_scores.py`` (mean return of
1,000 episodes of uniform random actions, ``benchmarks/results/random_scores.json``). The
``reference`` column's source is given per suite below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

BUILT_IN_ALGOS = ("a2c", "c51", "ddpg", "dqn", "impala", "ppo", "pqn", "sac", "td3")


@dataclasses.dataclass(frozen=True)
class Suite:
    """A named grid: environments with their budgets (env steps per seed), algorithms,
    settings by algorithm, seeds, and the normalisation table ``{env: (random, reference)}``."""

    name: str
    description: str
    budgets: Mapping[str, int]
    algos: tuple[str, ...]
    seeds: int
    normalize: Mapping[str, tuple[float, float]]
    reference_source: str
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    eval_every: int = 0

    @property
    def envs(self) -> tuple[str, ...]:
        return tuple(self.budgets)

    def as_mapping(self) -> dict[str, Any]:
        """The suite as an experiment file's keys (a file with ``suite = NAME`` starts here)."""
        return {
            "name": self.name,
            "algos": list(self.algos),
            "envs": list(self.envs),
            "seeds": self.seeds,
            "total_steps": dict(self.budgets),
            "settings": {k: dict(v) for k, v in self.settings.items()},
            "normalize": {k: list(v) for k, v in self.normalize.items()},
            "eval_every": self.eval_every,
        }


# PureJaxRL's MinAtar PPO and purejaxql's PQN (config/alg/pqn_minatar.yaml, pqn_minatar.py), as
# benchmarks/minatar_references.py runs them.
_MINATAR_SETTINGS = {
    "ppo": {
        "num_envs": 64,
        "rollout_len": 128,
        "torso": "cnn",
        "activation": "relu",
        "lr": 5e-4,
        "num_minibatches": 8,
        "update_epochs": 4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_eps": 0.2,
        "ent_coef": 0.01,
    },
    "pqn": {
        "num_envs": 128,
        "rollout_len": 32,
        "torso": "minatar",
        "hidden_sizes": [128],
        "layer_norm": True,
        "activation": "relu",
        "lr": 5e-4,
        "anneal_lr": True,
        "max_grad_norm": 10.0,
        "update_epochs": 2,
        "num_minibatches": 32,
        "gamma": 0.99,
        "q_lambda": 0.65,
        "epsilon_start": 1.0,
        "epsilon_end": 0.05,
        "epsilon_fraction": 0.1,
        "reward_scale": 1.0,
    },
}

SUITES: dict[str, Suite] = {
    suite.name: suite
    for suite in (
        Suite(
            name="classic",
            description="the built-in classic-control tasks, every built-in algorithm that "
            "fits each (discrete or continuous actions), at budgets a laptop CPU runs",
            budgets={
                "CartPole-v1": 100_000,
                "Acrobot-v1": 100_000,
                "MountainCar-v0": 100_000,
                "Pendulum-v1": 20_000,
                "MountainCarContinuous-v0": 20_000,
            },
            algos=BUILT_IN_ALGOS,
            seeds=3,
            eval_every=10_000,
            normalize={
                "CartPole-v1": (20.2, 500.0),
                "Acrobot-v1": (-499.1, -100.0),
                "MountainCar-v0": (-200.0, -110.0),
                "Pendulum-v1": (-1228.0, -150.0),
                "MountainCarContinuous-v0": (-33.3, 90.0),
            },
            reference_source="CartPole-v1: the most an episode can score (500 steps); Acrobot-v1, "
            "MountainCar-v0 and MountainCarContinuous-v0: the reward threshold gymnasium "
            "registers for them (-100, -110, 90); Pendulum-v1, which registers none: -150, "
            "a little below what the default SAC, TD3 and DDPG runs end at (about -117, "
            "benchmarks/results/defaults.json)",
        ),
        Suite(
            name="minatar",
            description="MinAtar through gymnax (10×10 pixel games), PPO and PQN at their "
            "references' MinAtar settings",
            budgets=dict.fromkeys(
                (
                    "gymnax/Asterix-MinAtar",
                    "gymnax/Breakout-MinAtar",
                    "gymnax/Freeway-MinAtar",
                    "gymnax/SpaceInvaders-MinAtar",
                ),
                1_000_000,
            ),
            algos=("ppo", "pqn"),
            seeds=3,
            settings=_MINATAR_SETTINGS,
            normalize={
                "gymnax/Asterix-MinAtar": (0.39, 10.0),
                "gymnax/Breakout-MinAtar": (0.28, 20.0),
                "gymnax/Freeway-MinAtar": (0.39, 50.0),
                "gymnax/SpaceInvaders-MinAtar": (3.51, 100.0),
            },
            reference_source="provisional round numbers (10, 20, 50, 100), not published "
            "figures: a common scale across the games until a published table is adopted; give "
            "your own with [normalize] or --normalize",
        ),
        Suite(
            name="brax",
            description="a small set of Brax tasks on MJX, PPO and SAC; meant for an "
            "accelerator (on a CPU each cell takes tens of minutes)",
            budgets={
                "brax/inverted_pendulum": 1_000_000,
                "brax/inverted_double_pendulum": 1_000_000,
            },
            algos=("ppo", "sac"),
            seeds=3,
            normalize={
                "brax/inverted_pendulum": (5.3, 1000.0),
                "brax/inverted_double_pendulum": (155.2, 10000.0),
            },
            reference_source="the most an episode of 1,000 steps can score: its alive bonus "
            "(1 and 10 per step)",
        ),
    )
}

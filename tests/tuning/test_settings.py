"""A population's settings (``jaxrl_fdg.tuning.settings``): checked with the configuration, each
wrong one named, and the :class:`Population` or :class:`Halving` they describe. (Wrong settings
through ``resolve`` and the command line: tests/tuning/test_population.py.)"""

import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.tuning import Population
from jaxrl_fdg.tuning.population import Halving, Range
from jaxrl_fdg.tuning.search import Distribution
from jaxrl_fdg.tuning.settings import check, factors, from_config

# 8 iterations of 2 envs × 8 steps: 16 env steps per iteration.
CONFIG = testing.tiny("ppo", iterations=8, seed=3)
SWEEP = {"lr": (1e-3, 3e-4), "gamma": Distribution("uniform", 0.9, 0.99)}


def test_perturbation_factors_are_a_comma_list_of_positive_numbers():
    assert factors("0.8,1.25") == (0.8, 1.25) and factors(2) == (2.0,)
    for bad in ("0.8,x", "", "0,1", "-1", "inf"):
        with pytest.raises(ConfigError, match="a comma list of positive factors"):
            factors(bad)


def test_without_a_population_nothing_is_asked_and_nothing_made():
    check(CONFIG, {}, lanes=1)
    assert from_config(CONFIG, {}, lanes=1) is None


@pytest.mark.parametrize(
    ("changes", "sweep", "message"),
    [
        ({"pbt_every": -16}, SWEEP, "pbt_every must be a non-negative number of env steps"),
        ({"pbt_every": 8}, SWEEP, "pbt_every = 8 is less than one iteration (num_envs × rollo"),
        ({"pbt_every": 32, "halving_every": 32}, SWEEP, "choose one"),
        ({"pbt_every": 32}, {}, "pbt_every: a population explores swept hyperparameters"),
        ({"pbt_every": 32, "rank_metric": "-"}, SWEEP, "rank_metric = '-': name a metric"),
        ({"pbt_every": 32, "pbt_quantile": 0.1}, SWEEP, "pbt_quantile = 0.1 of 4 lanes is no lane"),
        ({"pbt_every": 32, "pbt_resample": -0.5}, SWEEP, "pbt_resample must be in [0, 1]"),
        ({"halving_every": 32, "halving_drop": 1.0}, SWEEP, "halving_drop must be in (0, 1)"),
        ({"halving_every": 32, "policy_lag": 1}, SWEEP, "use policy_lag = 0"),
    ],
)
def test_a_wrong_setting_is_named(changes, sweep, message):
    with pytest.raises(ConfigError) as refused:
        check(CONFIG.replace(**changes), sweep, lanes=4)
    assert message in str(refused.value)


def test_successive_halving_may_not_draw_seeds_past_int32():
    # 8 iterations / 2 per step = 4 steps, each restarting floor(4 × 0.5) = 2 lanes: seeds up to
    # seed + 4 + 4 × 2 = seed + 12.
    config = CONFIG.replace(halving_every=32, seed=2**31 - 13)
    check(config, SWEEP, lanes=4)
    with pytest.raises(ConfigError, match="take seeds up to 2,147,483,648, past 2"):
        check(config.replace(seed=2**31 - 12), SWEEP, lanes=4)


def test_the_settings_describe_the_population():
    population = from_config(CONFIG.replace(pbt_every=32, rank_metric="-loss"), SWEEP, lanes=4)
    assert isinstance(population, Population)
    assert (population.every, population.metric, population.minimize) == (2, "loss", True)
    assert population.ranges == {
        "lr": Range("choice", (1e-3, 3e-4)),
        "gamma": Range("uniform", (0.9, 0.99)),
    }
    assert (population.quantile, population.factors, population.resample) == (
        0.25,
        (0.8, 1.25),
        0.25,
    )
    assert population.seed == 3
    halving = from_config(CONFIG.replace(halving_every=48), SWEEP, lanes=4)
    assert isinstance(halving, Halving)
    assert (halving.every, halving.metric, halving.minimize) == (3, "episode_return", False)
    assert (halving.drop, halving.lanes, halving.until) == (0.5, 4, 8)

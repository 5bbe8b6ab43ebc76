"""A random search's points (``jaxrl_fdg.tuning.search``): a range's draws inside it (uniform,
or uniform in the logarithm), a list's uniformly from the list, float32 values, and the same
draws for the same seed whatever else the run does."""

import math

import numpy as np
import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.tuning.search import Distribution, draw_points, is_search

LR = Distribution("loguniform", 1e-4, 1e-2)


def test_draws_depend_on_the_seed_alone():
    sweep = {"lr": LR, "gamma": (0.9, 0.99)}
    assert draw_points(3, 5, sweep) == draw_points(3, 5, sweep)
    assert draw_points(3, 5, sweep) != draw_points(4, 5, sweep)
    assert draw_points(3, 5, sweep)[:2] == draw_points(3, 2, sweep)  # more lanes: more draws
    # Not the run's own stream: numpy's generator seeded with the seed alone draws otherwise.
    assert draw_points(3, 1, {"x": Distribution("uniform", 0.0, 1.0)})[0]["x"] != float(
        np.float32(np.random.default_rng(3).uniform(0.0, 1.0))
    )


def test_a_range_is_drawn_inside_it_and_a_list_from_its_values():
    points = draw_points(
        0, 200, {"lr": LR, "gamma": (0.9, 0.99), "c": Distribution("uniform", -1, 1)}
    )
    lrs = np.array([p["lr"] for p in points])
    assert lrs.min() >= 1e-4 and lrs.max() <= 1e-2
    # Uniform in the logarithm: about half the draws below the geometric middle, 1e-3.
    assert 0.35 < np.mean(lrs < 1e-3) < 0.65
    assert {p["gamma"] for p in points} == {0.9, 0.99}
    assert all(-1 <= p["c"] <= 1 for p in points)
    assert all(p["lr"] == float(np.float32(p["lr"])) for p in points)  # as the program holds it


def test_a_sweep_is_a_search_where_any_value_is_a_range():
    assert is_search({"lr": LR, "gamma": (0.9,)}) and not is_search({"gamma": (0.9, 0.99)})
    assert str(LR) == "loguniform:0.0001:0.01"
    assert math.isclose(Distribution("uniform", 2.0, 2.0).sample(np.random.default_rng(0)), 2.0)


def test_a_runs_lanes_are_its_searchs_points_each_with_a_seed_of_its_own():
    config = testing.tiny(
        "ppo", num_lanes=6, hparams={"lr": "loguniform:1e-4:1e-2", "gamma": [0.9, 0.99]}
    )
    lanes = resolve(config).lanes
    assert [lane.seed for lane in lanes] == list(range(6))
    assert [lane.point for lane in lanes] == draw_points(0, 6, {"lr": LR, "gamma": (0.9, 0.99)})
    assert lanes != resolve(config.replace(seed=1)).lanes


@pytest.mark.parametrize("kind", ["loguniform", "uniform"])
def test_each_distribution_samples_float32(kind):
    value = Distribution(kind, 0.5, 2.0).sample(np.random.default_rng(1))
    assert 0.5 <= value <= 2.0 and value == float(np.float32(value))

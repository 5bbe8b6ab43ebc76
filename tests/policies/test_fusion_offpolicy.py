"""Every fusion mode computes the same thing for the off-policy algorithms (DQN, C51, SAC, TD3,
DDPG), and nothing recompiles after the first iteration (the sweep: fusion_sweep.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for ``fusion_sweep``

from fusion_sweep import (  # noqa: E402  (the tests below run over this file's ALGOS)
    OFF_POLICY,
    algo_params,
    eager_of,
    eager_params,
    results_of,
    test_eager_compiles_only_optax_integer_powers,
    test_eager_same_state_and_metrics_as_scan,
    test_no_recompilation_after_first_iteration,
    test_same_env_state_and_keys,
    test_same_metrics_as_scan,
    test_same_parameters_as_scan,
    test_scan_chunk_shorter_than_program_reuses_it,
)

ALGOS = OFF_POLICY

__all__ = [
    "test_eager_compiles_only_optax_integer_powers",
    "test_eager_same_state_and_metrics_as_scan",
    "test_no_recompilation_after_first_iteration",
    "test_same_env_state_and_keys",
    "test_same_metrics_as_scan",
    "test_same_parameters_as_scan",
    "test_scan_chunk_shorter_than_program_reuses_it",
]


@pytest.fixture(scope="module", params=algo_params(ALGOS))
def algo(request):
    return request.param


@pytest.fixture(scope="module")
def results(algo):
    return results_of(algo)


@pytest.fixture(scope="module", params=eager_params(ALGOS))
def eager(request):
    return eager_of(request.param)

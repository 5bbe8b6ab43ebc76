"""Every fusion mode computes the same thing for the on-policy algorithms (PPO, recurrent PPO,
A2C, PQN), and nothing recompiles after the first iteration (the sweep: fusion_sweep.py; the
off-policy algorithms: test_fusion_offpolicy.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for ``fusion_sweep``

from fusion_sweep import (  # noqa: E402  (the tests below run over this file's ALGOS)
    OFF_POLICY,
    ON_POLICY,
    TINY,
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

import jaxrl_fdg as rl  # noqa: E402

ALGOS = ON_POLICY

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


def test_every_algorithm_is_swept():
    # Every registered algorithm is in TINY, and the two files together run every entry.
    assert set(rl.algorithm.registered()) == {c.get("algo", name) for name, c in TINY.items()}
    assert sorted((*ON_POLICY, *OFF_POLICY)) == sorted(TINY)

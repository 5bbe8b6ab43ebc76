"""examples/vtrace.py, a user algorithm the stock command runs by reference: the same bits under
every compiled fusion mode, each lane of two seeds that seed's run, and its V-trace targets by
hand. (Its run from the command line, resumed and evaluated in a fresh process:
tests/core/test_plugins.py.)"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import plugins, testing

VTRACE = Path(__file__).resolve().parents[2] / "examples" / "vtrace.py"
MODULE = plugins.import_module(str(VTRACE), "examples/vtrace.py")  # as --algo loads it
CONFIG = rl.TrainConfig(
    algo=f"{VTRACE}:SPEC",
    total_steps=2 * 8 * 4,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    profile="off",
    log_every=2,
    hparams={"hidden": 16},
)


@pytest.fixture(scope="module")
def runs():
    found = {}

    def get(mode: str) -> rl.RunResult:
        if mode not in found:
            config = CONFIG.replace(num_seeds=2) if mode == "seeds" else CONFIG.replace(fusion=mode)
            found[mode] = rl.train(config)
        return found[mode]

    return get


@pytest.mark.parametrize(
    "mode", ["step", "fragment", pytest.param("iteration", marks=pytest.mark.slow)]
)
def test_same_bits_as_scan(runs, mode):
    testing.assert_same_bits(runs(mode), runs("scan"), f"{mode} against scan")


def test_each_lane_of_two_seeds_is_that_seeds_run(runs):
    # Batched matrix products may round differently from unbatched ones: equal to rounding.
    lanes, alone = runs("seeds"), runs("scan")
    lane0 = jax.tree.map(lambda x: x[0], lanes.state.fragments["learner"])
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        lane0,
        alone.state.fragments["learner"],
    )


def test_vtrace_targets_by_hand():
    # T = 3, one env, no importance correction (ρ = c = 1), γ = 0.5; step 1 terminates.
    # v_2 = V(x'_2) bootstraps: r_2 + γ V(x'_2) = 1 + 0.5·4 = 3 → target 3.
    # Step 1 ends the episode: v_1 = r_1 = 2. Step 0: v_0 = r_0 + γ v_1 = 1 + 0.5·2 = 2.
    vtrace = MODULE.vtrace_targets
    col = lambda *x: jnp.asarray(x, jnp.float32)[:, None]  # noqa: E731
    targets, advantages = vtrace(
        values=col(0.0, 0.0, 0.0),
        next_values=col(0.0, 9.0, 4.0),
        reward=col(1.0, 2.0, 1.0),
        terminated=col(0.0, 1.0, 0.0),
        truncated=col(0.0, 0.0, 0.0),
        rho=col(1.0, 1.0, 1.0),
        c=col(1.0, 1.0, 1.0),
        gamma=0.5,
    )
    np.testing.assert_allclose(targets[:, 0], [2.0, 2.0, 3.0])
    np.testing.assert_allclose(advantages[:, 0], [2.0, 2.0, 3.0])
    # With ρ = 0.5 at step 0 its own correction halves: δ_0 = 0.5 (1 + 0.5·0 − 0) = 0.5, and
    # the trace from step 1 is cut by c_0 = 0.5: v_0 = 0.5 + 0.5·0.5·(2 − 0) = 1.
    targets, _ = vtrace(
        col(0.0, 0.0, 0.0),
        col(0.0, 9.0, 4.0),
        col(1.0, 2.0, 1.0),
        col(0.0, 1.0, 0.0),
        col(0.0, 0.0, 0.0),
        col(0.5, 1.0, 1.0),
        col(0.5, 1.0, 1.0),
        0.5,
    )
    np.testing.assert_allclose(targets[:, 0], [1.0, 2.0, 3.0])

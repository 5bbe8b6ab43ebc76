"""Every fusion mode computes the same thing for every registered algorithm (PPO, recurrent
PPO, A2C, IMPALA, PQN, DQN, C51, SAC, TD3, DDPG, and IPPO, MAPPO, VDN and QMIX, recurrent or
PQN-trained, on a multi-agent game), and nothing recompiles after the first iteration. The sweep's
configurations, runs and comparisons: tests/policies/conftest.py."""

import pytest

import jaxrl_fdg as rl

# conftest.py parametrizes the runs over these: every entry of its TINY.
SWEPT = (
    "ppo",
    "dqn",
    "a2c",
    "c51",
    "ddpg",
    "impala",
    "pqn",
    "ppo_gru",
    "sac",
    "td3",
    "ippo",
    "mappo",
    "vdn",
    "qmix",
    "pqn-vdn",
    "pqn-qmix",
)
# Eager mode (slow tier) runs an algorithm's fragments op by op, each new op compiled on first
# use: 7 to 45 s an algorithm. Of the multi-agent entries IPPO and QMIX (on MPE, conftest.py's
# EAGER_TINY) run eagerly; the others add no code of their own to an eager run: MAPPO is IPPO's
# program on a dict observation, VDN is QMIX's learner with a sum for a mixer, and the
# PQN-trained team values are PQN's learner (swept eagerly) around QMIX's mixer or VDN's sum.
# Their compiled modes are swept.
EAGER = tuple(a for a in SWEPT if a not in ("mappo", "vdn", "pqn-vdn", "pqn-qmix"))


def test_every_algorithm_is_swept(sweep):
    # Every registered algorithm is in TINY, and this file sweeps every entry, so none can skip
    # the equivalence tests.
    assert set(rl.algorithm.registered()) == {c.get("algo", n) for n, c in sweep.TINY.items()}
    assert sorted(SWEPT) == sorted(sweep.TINY)


COMPILED = [m for m in rl.FUSION_MODES if m not in ("scan", "eager")]


@pytest.mark.parametrize("mode", COMPILED)
def test_same_parameters_as_scan(sweep, algo, results, mode):
    # Every fragment's state: parameters, optimizer and target networks, replay, env, actor.
    # Compiled modes run the same ops on the same inputs: bit for bit where XLA fuses them alike
    # (BIT_EXACT).
    tol = None if algo in sweep.BIT_EXACT else dict(rtol=1e-5, atol=1e-6)
    sweep.same_state(results[mode][0], results["scan"][0], tol)


def test_eager_same_state_and_metrics_as_scan(sweep, eager):
    # Eager dispatches op by op without XLA's fusion, so float32 rounding may differ in the last
    # bits, from the first op on: compiled modes draw the initial parameters in an ``init``
    # program compiled without LLVM optimisation (policies.compiling.RUN_ONCE), eager op by op.
    # Three iterations of updates carry those differences on: DDPG's stored actions (tanh of
    # its actor's output) differ by up to 5e-5 relative.
    sweep.same_state(eager["eager"][0], eager["scan"][0], dict(rtol=1e-4, atol=1e-5))
    # The metrics to the state's tolerance: QMIX's loss, a square of team values summed over
    # agents, carries the updates' rounding to 3e-5 relative by the third iteration.
    sweep.same_metrics(eager["eager"][1], eager["scan"][1], rtol=1e-4)
    sweep.same_keys_and_observations(eager["eager"][0], eager["scan"][0])


@pytest.mark.parametrize("mode", COMPILED)
def test_same_metrics_as_scan(sweep, results, mode):
    sweep.same_metrics(results[mode][1], results["scan"][1])


@pytest.mark.parametrize("mode", COMPILED)
def test_same_env_state_and_keys(sweep, results, mode):
    sweep.same_keys_and_observations(results[mode][0], results["scan"][0])


@pytest.mark.parametrize("mode", ["step", "fragment", "iteration", "scan"])
def test_no_recompilation_after_first_iteration(results, mode):
    _, _, new_compiles, late = results[mode]
    assert new_compiles == 0, late


def test_eager_compiles_only_optax_integer_powers(eager):
    # In eager mode every op is compiled on first use and cached. The one exception is optax's
    # Adam bias correction `decay ** count`: with a concrete `count`, jnp.power specialises to
    # an integer_pow kernel per exponent, i.e. one per optimizer step. Everything else must come
    # from the cache.
    _, _, new_compiles, late = eager["eager"]
    assert all("integer_pow" in m for m in late), late
    assert new_compiles == len(late)


def test_scan_chunk_shorter_than_program_reuses_it(results):
    # The scan program was compiled for chunks of 2; advancing by 1 used the same executable.
    assert results["scan"][2] == 0

"""The fusion-mode sweep that test_fusion.py (on-policy algorithms) and test_fusion_offpolicy.py
(off-policy ones) run, each over its own algorithms so that the two files, and their compiles,
go to different test workers: every fusion mode computes the same thing for every registered
algorithm, and nothing recompiles after the first iteration."""

import logging

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve
from jaxrl_fdg.profiling import compile_count

SMALL = rl.TrainConfig(total_steps=2 * 8 * 3, num_envs=2, rollout_len=8, out=None, progress=False)
# One tiny configuration per registered algorithm, plus variants that run another program (their
# `algo` names the algorithm). Every registered algorithm must appear here
# (test_every_algorithm_is_swept), so none can skip the equivalence tests below. Off-policy ones
# warm up for the first iteration and update in the next two, so both branches of the loop run.
_OFF_POLICY = {"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125}
TINY = {
    "ppo": dict(hparams={"num_minibatches": 2, "update_epochs": 2}),
    # Recurrent PPO: the actor's memory in the rollout carry, minibatches of whole sequences.
    "ppo_gru": dict(
        algo="ppo",
        hparams={
            "num_minibatches": 2,
            "update_epochs": 2,
            "hidden_sizes": (16,),
            "memory": "gru",
            "memory_size": 8,
        },
    ),
    "a2c": dict(),
    "impala": dict(),
    "dqn": dict(hparams={**_OFF_POLICY, "hidden_sizes": (16,), "n_step": 3}),
    "c51": dict(
        hparams={**_OFF_POLICY, "hidden_sizes": (16,), "num_atoms": 11, "replay": "prioritized"}
    ),
    "pqn": dict(hparams={"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,)}),
    "sac": dict(env="Pendulum-v1", hparams=_OFF_POLICY),
    "td3": dict(env="Pendulum-v1", hparams={**_OFF_POLICY, "replay": "prioritized"}),
    "ddpg": dict(env="Pendulum-v1", hparams=_OFF_POLICY),
}


# Which test file runs each entry of TINY.
ON_POLICY = ("a2c", "impala", "ppo", "ppo_gru", "pqn")  # test_fusion.py
OFF_POLICY = ("c51", "ddpg", "dqn", "sac", "td3")  # test_fusion_offpolicy.py


class _Messages(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _run(algo, mode):
    """Init, compile, one iteration, then two more; return state, metrics and what compiled late."""
    loop = rl.build_loop(resolve(SMALL.replace(**{"algo": algo, "fusion": mode, **TINY[algo]})))
    plan = rl.make_plan(mode, loop, chunk=2)
    state = plan.init(jax.random.key(7))
    plan.compile(state)
    state, pending = plan.advance(state, 1)
    first = plan.collect(pending)
    before = compile_count()
    handler, root = _Messages(), logging.getLogger()
    root.addHandler(handler)
    try:
        with jax.log_compiles(True):
            state, pending = plan.advance(state, 2)  # scan: a 2-iteration chunk, same program
            rest = plan.collect(pending)
            jax.block_until_ready(state)
    finally:
        root.removeHandler(handler)
    late = [m for m in handler.messages if m.startswith("Compiling")]
    metrics = {k: np.concatenate([first[k], rest[k]]) for k in first}
    return state, metrics, compile_count() - before, late


# Algorithms whose compiled modes agree bit for bit on CPU. In the others XLA rounds some float32
# arithmetic differently depending on what else is in a program: inside a fused rollout,
# Pendulum's observation θ̇ can differ by one ulp from the same step's state θ̇ (computed twice),
# which SAC's programs expose in step mode. Results then agree to rounding, not exactly.
BIT_EXACT = {"ppo", "ppo_gru", "a2c", "dqn", "c51", "pqn"}


COMPILED = [m for m in rl.FUSION_MODES if m not in ("scan", "eager")]
# Eager mode compiles every op on first use (537 programs for PPO): 40 to 55 s per algorithm on a
# cold cache. PPO runs it in the default tier, the others in the slow tier; eager mode's own code
# (the step plan's loop with jit disabled) is the same for every algorithm.
EAGER_DEFAULT = ("ppo",)


# The compiled-mode sweep of A2C, C51, TD3 and DDPG is in the slow tier: each shares its module's
# code (actor_critic, the Q-learning machinery of dqn, continuous) with PPO, DQN and SAC, which the
# default tier sweeps, and CI runs both tiers. So is recurrent PPO's (50 s cold): the default tier
# checks its learner against its actor bit for bit and its resume (test_recurrent, test_checkpoint).
COMPILED_SLOW = ("a2c", "c51", "ddpg", "td3", "ppo_gru")


def algo_params(algos):
    """``algo``'s parameters: each of ``algos``, in the slow tier if in COMPILED_SLOW."""
    return [pytest.param(a, marks=pytest.mark.slow if a in COMPILED_SLOW else ()) for a in algos]


def eager_params(algos):
    """``eager``'s parameters: each of ``algos``, in the slow tier unless in EAGER_DEFAULT."""
    return [pytest.param(a, marks=() if a in EAGER_DEFAULT else pytest.mark.slow) for a in algos]


def results_of(algo):
    """One run per compiled mode of ``algo`` (the ``results`` fixture of the test files)."""
    return {mode: _run(algo, mode) for mode in rl.FUSION_MODES if mode != "eager"}


def eager_of(algo):
    """The scan run and the eager run of ``algo`` (the ``eager`` fixture)."""
    return {mode: _run(algo, mode) for mode in ("scan", "eager")}


@pytest.mark.parametrize("mode", COMPILED)
def test_same_parameters_as_scan(algo, results, mode):
    # Every fragment's state: parameters, optimizer and target networks, replay, env, actor.
    # Compiled modes run the same ops on the same inputs: bit for bit where XLA fuses them alike
    # (BIT_EXACT).
    exact = algo in BIT_EXACT
    tol = dict(rtol=0, atol=0) if exact else dict(rtol=1e-5, atol=1e-6)
    _same_state(results[mode][0], results["scan"][0], tol)


def test_eager_same_state_and_metrics_as_scan(eager):
    # Eager dispatches op by op without XLA's fusion, so float32 rounding may differ in the last
    # bits, from the first op on: compiled modes draw the initial parameters in an ``init``
    # program compiled without LLVM optimisation (policies.compiling.RUN_ONCE), eager op by op.
    # Three iterations of updates carry those differences on: DDPG's stored actions (tanh of
    # its actor's output) differ by up to 5e-5 relative.
    _same_state(eager["eager"][0], eager["scan"][0], dict(rtol=1e-4, atol=1e-5))
    _same_metrics(eager["eager"][1], eager["scan"][1])
    _same_keys_and_observations(eager["eager"][0], eager["scan"][0])


def _same_state(state, reference, tol):
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, **tol), state.fragments, reference.fragments
    )
    assert int(state.iteration) == 3


@pytest.mark.parametrize("mode", COMPILED)
def test_same_metrics_as_scan(results, mode):
    _same_metrics(results[mode][1], results["scan"][1])


def _same_metrics(metrics, reference):
    assert sorted(metrics) == sorted(reference)
    for key in reference:
        assert metrics[key].shape == (3,)
        np.testing.assert_allclose(metrics[key], reference[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_same_env_state_and_keys(results):
    for mode in COMPILED:
        _same_keys_and_observations(results[mode][0], results["scan"][0])


def _same_keys_and_observations(state, ref):
    np.testing.assert_array_equal(jax.random.key_data(state.key), jax.random.key_data(ref.key))
    np.testing.assert_allclose(
        state.fragments["env"].observation, ref.fragments["env"].observation, rtol=1e-5, atol=1e-6
    )


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

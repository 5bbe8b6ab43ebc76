"""The fusion-mode sweep that test_fusion.py runs: every fusion mode computes the same thing for
every registered algorithm, and nothing recompiles after the first iteration. Here: the tiny
configuration of each, the runs (fixtures ``results`` and ``eager``, parametrized over the test
module's ``SWEPT``) and the comparisons (fixture ``sweep``)."""

import logging
from importlib.util import find_spec
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.profiling import compile_count

SMALL = rl.TrainConfig(total_steps=2 * 8 * 3, num_envs=2, rollout_len=8, out=None, progress=False)
# One tiny configuration per registered algorithm, plus variants that run another program (their
# `algo` names the algorithm). Every registered algorithm must appear here
# (test_every_algorithm_is_swept), so none can skip the equivalence tests. Off-policy ones
# warm up for the first iteration and update in the next two, so both branches of the loop run.
_OFF_POLICY = {"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125}
_RECURRENT_TEAM = {
    "learning_starts": 16,
    "batch_size": 2,
    "buffer_size": 8,
    "num_updates": 2,
    "hidden_sizes": (16,),
    "memory_size": 8,
}
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
    # Multi-agent: three agents of each MPE game folded into the batch (2 games: 6 rows).
    "ippo": dict(
        env="jaxmarl/MPE_simple_spread_v3",
        hparams={"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,)},
    ),
    "mappo": dict(
        env="jaxmarl/MPE_simple_spread_v3",
        env_options={"world_state": True},
        hparams={"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,)},
    ),
    # Value decomposition trained as PQN trains: a game's agents unfolded in the learner, QMIX's
    # mixer on the world state its defaults ask for.
    "pqn-vdn": dict(
        env="jaxmarl/MPE_simple_spread_v3",
        hparams={"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,)},
    ),
    "pqn-qmix": dict(
        env="jaxmarl/MPE_simple_spread_v3",
        hparams={"num_minibatches": 2, "update_epochs": 2, "hidden_sizes": (16,)},
    ),
    # QMIX and VDN with recurrent agents and sequence replay: every iteration learns from the
    # sequences in the buffer, its own rollout's among them (a warm-up of whole iterations would
    # leave eager mode's update ops to compile in the second). QMIX on SMAX's 3m (masks, the
    # world state), VDN on MPE.
    "qmix": dict(
        env="jaxmarl/HeuristicEnemySMAX",
        env_options={"map": "3m", "world_state": True},
        hparams=_RECURRENT_TEAM,
    ),
    "vdn": dict(env="jaxmarl/MPE_simple_spread_v3", hparams=_RECURRENT_TEAM),
}
# Eager mode runs SMAX's step op by op too: QMIX on 3m took two minutes of the slow tier, against
# 45 s for IPPO on MPE. Its eager run plays MPE, as VDN's compiled sweep does. Action masks are
# arrays stored with the sequences and applied to Q-values by the same ops in every mode (eager
# mode adds nothing around them), and QMIX on SMAX, masks and all, is swept under step and scan
# in the default tier and under every compiled mode in the full tier (MIDDLE_MODES_IN_FULL).
EAGER_TINY = {**TINY, "qmix": TINY["vdn"]}


class _Messages(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


# Scan runs by algorithm and configuration: the eager fixture compares with the run the
# compiled sweep of the same file made in this worker, where it made one.
_SCAN_RUNS = {}


def _run(algo, mode, tiny=TINY):
    """Init, compile, one iteration, then two more; return state, metrics and what compiled late."""
    if tiny[algo].get("env", "").startswith("jaxmarl/") and not find_spec("jaxmarl"):
        # The quick subset on other Pythons (.ci/quick_subset.sh) installs no environment suite.
        pytest.skip("the multi-agent entries need jaxmarl (the test extra)")
    if mode == "scan":
        key = (algo, repr(tiny[algo]))
        if key not in _SCAN_RUNS:
            _SCAN_RUNS[key] = _run_uncached(algo, mode, tiny[algo])
        return _SCAN_RUNS[key]
    return _run_uncached(algo, mode, tiny[algo])


def _run_uncached(algo, mode, tiny):
    loop = rl.build_loop(resolve(SMALL.replace(**{"algo": algo, "fusion": mode, **tiny})))
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


# Eager mode compiles every op on first use (537 programs for PPO): 20 to 75 s per algorithm on a
# cold cache, the most any fixture of the default tier paid. Every algorithm runs it in the slow
# tier (eager_params), which CI runs after the default one; eager mode's own code (the step plan's
# loop with jit disabled) is the same for every algorithm.


# The compiled-mode sweep of A2C, C51 and the continuous-action family (SAC, TD3, DDPG) is in the
# slow tier, and CI runs both tiers. A2C and C51 share their module's code (actor_critic, the
# Q-learning machinery of dqn) with PPO and DQN, which the default tier sweeps; SAC's sweep was the
# default tier's dearest (50 s cold), and the default tier still runs SAC under step and scan to
# the same bits (test_offpolicy_normalization), on sharded devices (test_gradient_path), and
# checks its updates (test_continuous_control). So is recurrent PPO's (50 s cold): the default
# tier checks its learner against its actor bit for bit and its resume (test_recurrent,
# test_checkpoint).
# MAPPO is IPPO's program with a dict observation and the critic on its world state, VDN is QMIX's
# with a sum for a mixer, and PQN-trained QMIX is PQN's learner around QMIX's mixer: IPPO's and
# QMIX's sweeps are the default tier's (QMIX's in step and scan: MIDDLE_MODES_IN_FULL).
COMPILED_SLOW = (
    "a2c",
    "c51",
    "ddpg",
    "td3",
    "ppo_gru",
    "sac",
    "mappo",
    "vdn",
    "pqn-vdn",
    "pqn-qmix",
)


def algo_params(algos):
    """``algo``'s parameters: each of ``algos``, in the slow tier if in COMPILED_SLOW."""
    return [pytest.param(a, marks=pytest.mark.slow if a in COMPILED_SLOW else ()) for a in algos]


def eager_params(algos):
    """``eager``'s parameters: each of ``algos``, in the slow tier."""
    return [pytest.param(a, marks=pytest.mark.slow) for a in algos]


def pytest_generate_tests(metafunc):
    """In a module that names the algorithms it sweeps (``SWEPT``), ``algo`` runs over them
    and ``eager_algo`` over those it names ``EAGER`` (all of them if none: each in the slow
    tier or not, as above)."""
    swept = getattr(metafunc.module, "SWEPT", None)
    if swept is None:
        return
    if "algo" in metafunc.fixturenames:
        metafunc.parametrize("algo", algo_params(swept), scope="module")
    if "eager_algo" in metafunc.fixturenames:
        eager = getattr(metafunc.module, "EAGER", swept)
        metafunc.parametrize("eager_algo", eager_params(eager), scope="module")


class _ModeRuns(dict):
    """``algo``'s run in each compiled mode, made when a test first asks for that mode."""

    def __init__(self, algo):
        super().__init__()
        self.algo = algo

    def __missing__(self, mode):
        self[mode] = _run(self.algo, mode)
        return self[mode]


@pytest.fixture(scope="module")
def results(algo):
    """One run per compiled mode of ``algo``, each made on first use: ``{mode: (state, metrics,
    late compiles, their messages)}``."""
    return _ModeRuns(algo)


# Every compiled mode compiles QMIX's SMAX step anew (8-12 s a mode alone, its whole sweep about
# a minute of the loaded default tier, the tier's dearest). The default tier compares its step
# mode with scan, the two ends of the range; its fragment and iteration modes, which split the
# same programs between those two, are compared in the full tier.
MIDDLE_MODES_IN_FULL = frozenset({"qmix"})
HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.parent != HERE:  # the hook sees the whole session's tests
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("algo") in MIDDLE_MODES_IN_FULL and params.get("mode") in (
            "fragment",
            "iteration",
        ):
            item.add_marker(pytest.mark.full)


@pytest.fixture(scope="module")
def eager(eager_algo):
    """The scan run and the eager run of ``eager_algo``, as ``results``."""
    return {mode: _run(eager_algo, mode, EAGER_TINY) for mode in ("scan", "eager")}


def same_state(state, reference, tol: dict | None = None) -> None:
    """Every fragment's state the same bits (``tol`` ``None``), or the same within ``tol``
    (``np.testing.assert_allclose``'s ``rtol`` and ``atol``); 3 iterations done."""
    if tol is None:
        testing.assert_same_bits(state.fragments, reference.fragments)
    else:
        jax.tree.map(
            lambda a, b: np.testing.assert_allclose(a, b, **tol),
            state.fragments,
            reference.fragments,
        )
    assert int(state.iteration) == 3


def same_metrics(metrics, reference, rtol: float = 1e-5) -> None:
    """The same metrics, each of the 3 iterations, to float32 rounding (``rtol``)."""
    assert sorted(metrics) == sorted(reference)
    for key in reference:
        assert metrics[key].shape == (3,)
        np.testing.assert_allclose(metrics[key], reference[key], rtol=rtol, atol=1e-6, err_msg=key)


def same_keys_and_observations(state, reference) -> None:
    """The same key stream, bit for bit, and the same observations to float32 rounding."""
    testing.assert_same_bits(state.key, reference.key)
    jax.tree.map(  # a dict observation (MAPPO's) leaf by leaf
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
        state.fragments["env"].observation,
        reference.fragments["env"].observation,
    )


@pytest.fixture(scope="session")
def sweep():
    """The sweep's tables and comparisons, for the test files that run it."""
    return SimpleNamespace(
        TINY=TINY,
        BIT_EXACT=BIT_EXACT,
        same_state=same_state,
        same_metrics=same_metrics,
        same_keys_and_observations=same_keys_and_observations,
    )

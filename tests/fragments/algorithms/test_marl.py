"""IPPO and MAPPO without parameter sharing (``share_parameters = false``): a copy of the network
per agent (``networks.PerAgent``), each initialised apart and applied to its own agent's rows
only, minibatches of whole games, the recurrent learner re-running the actor per agent, training
runs of both, the same bits in the compiled fusion modes, and the settings refused."""

import functools
from importlib.util import find_spec

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.core.algorithm import AlgorithmContext
from jaxrl_fdg.envs.spaces import Box, Dict, Discrete
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragments.algorithms import marl
from jaxrl_fdg.fragments.minibatch import minibatch_epochs, sequence_minibatch_epochs
from jaxrl_fdg.fragments.networks import PerAgent

N = 3  # agents of a game; 2 games: 6 rows, game-major
TINY_HP = {"num_minibatches": 2, "update_epochs": 1, "hidden_sizes": (16,)}
# tests/envs/test_jaxmarl.py's tiny MPE run: 3 iterations of 2 games × 8 steps.
SPREAD = "jaxmarl/MPE_simple_spread_v3"
TINY = dict(
    env=SPREAD,
    total_steps=3 * 2 * 8,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    profile="off",
    log_every=1,
)
needs_jaxmarl = pytest.mark.skipif(not find_spec("jaxmarl"), reason="needs jaxmarl")


def _context(algo="ippo", observation=None, action=None, num_agents=N, **hparams):
    spec = rl.algorithm.get(algo)
    ctx = AlgorithmContext(
        observation_space=observation or Box(-1.0, 1.0, (5,)),
        action_space=action or Discrete(4),
        num_envs=2 * num_agents,
        rollout_len=8,
        num_iterations=2,
        hparams=spec.hparams(**{**TINY_HP, "share_parameters": False, **hparams}),
        num_agents=num_agents,
    )
    return ctx, spec


# The networks of a game's agents, as PPO builds them: discrete and continuous actions, IPPO's
# one observation and MAPPO's dict of two (actor and critic on one key each).
_WORLD = Dict({"observation": Box(-1.0, 1.0, (5,)), "world_state": Box(-1.0, 1.0, (7,))})
NETWORKS = {
    "discrete": dict(algo="ippo"),
    "continuous": dict(algo="ippo", action=Box(-1.0, 1.0, (2,))),
    "mappo": dict(algo="mappo", observation=_WORLD),
}


def _policy(case, **hparams):
    ctx, _ = _context(**NETWORKS[case], **hparams)
    return marl.per_agent_policy(ctx)


def _observations(policy, lead, seed=1):
    """Random observations with leading axes ``lead`` (the rows last)."""
    example = policy.obs_example
    keys = jax.random.split(jax.random.key(seed), len(jax.tree.leaves(example)))
    leaves, tree = jax.tree.flatten(example)
    return jax.tree.unflatten(
        tree,
        [jax.random.normal(k, (*lead, *np.shape(x))) for k, x in zip(keys, leaves, strict=True)],
    )


def _copy(params, i):
    """Agent ``i``'s copy of the per-agent parameters, as the inner network's own."""
    return {"params": jax.tree.map(lambda x: x[i], params["params"]["network"])}


@pytest.mark.parametrize("case", sorted(NETWORKS))
def test_every_parameter_has_an_agents_axis_and_the_copies_differ_at_init(case):
    policy = _policy(case)
    assert isinstance(policy.net, PerAgent) and policy.game_size == N
    params = policy.init(jax.random.key(0))
    leaves = jax.tree_util.tree_leaves_with_path(params)
    assert leaves and all(x.shape[0] == N for _, x in leaves)
    # Each copy drawn from its own key: every weight matrix differs between agents (biases start
    # at zero and the log-std at its constant, alike in every copy by design).
    kernels = [x for path, x in leaves if "kernel" in jax.tree_util.keystr(path)]
    assert kernels
    for x in kernels:
        for i in range(N):
            for j in range(i):
                assert not np.allclose(x[i], x[j]), "two agents start with the same weights"


@pytest.mark.parametrize("case", sorted(NETWORKS))
@pytest.mark.parametrize("lead", [(6,), (4, 6)], ids=["rows", "time-rows"])
def test_each_agents_rows_meet_its_own_copy_only(case, lead):
    # Rows as the actor and a minibatch give them ([rows]) and as a recurrent learner's
    # time-major sequences do ([T, rows]): rows i, i + N, ... (agent i of each game) are the
    # inner network's outputs under copy i.
    policy = _policy(case)
    params = policy.init(jax.random.key(0))
    obs = _observations(policy, lead)
    inner = policy.net.network
    for method in ("__call__", "value"):
        out = policy.net.apply(params, obs, method=method)
        for i in range(N):
            rows = _agent_rows(obs, i, len(lead))
            own = inner.apply(_copy(params, i), rows, method=method)
            jax.tree.map(
                functools.partial(np.testing.assert_allclose, rtol=1e-6, atol=1e-6),
                _agent_rows(out, i, len(lead)),
                own,
            )
    # Shifting agent 1's copy changes agent 1's outputs, and no other agent's.
    shifted = jax.tree.map(lambda x: x.at[1].add(1.0), params)
    before, after = (policy.net.apply(p, obs) for p in (params, shifted))
    agent = np.arange(lead[-1]) % N
    for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
        changed = np.any(np.asarray(a != b).reshape(*lead, -1), axis=-1)
        assert changed[..., agent == 1].all() and not changed[..., agent != 1].any()


def _agent_rows(tree, i, lead):
    """Agent ``i``'s rows of every leaf of ``tree``, whose rows are axis ``lead - 1``."""
    return jax.tree.map(lambda x: x[(slice(None),) * (lead - 1) + (slice(i, None, N),)], tree)


def test_an_input_without_rows_goes_to_every_copy():
    policy = _policy("discrete")
    params = policy.init(jax.random.key(0))
    logits, value = policy.net.apply(params, policy.obs_example)
    assert logits.shape == (N, 4) and value.shape == (N,)
    with pytest.raises(ValueError, match="not whole games of 3 agents"):
        policy.net.apply(params, _observations(policy, (4,)))


@pytest.mark.parametrize("memory", ["gru", "lstm"])
def test_the_recurrent_learner_reruns_the_actor_agent_by_agent(memory):
    # The actor steps each row's memory [rows, W]; the learner re-runs whole sequences with the
    # encoder and heads on every step at once and only the cells scanned (Policy.unroll), each
    # agent's copy on its rows in both. Episodes start mid-sequence, the memory reset there.
    policy = _policy("discrete", memory=memory, memory_size=8)
    assert policy.recurrent and policy._split
    params = policy.init(jax.random.key(0))
    steps, rows = 5, 6
    obs = _observations(policy, (steps, rows))
    start = jnp.zeros((steps, rows), bool).at[0].set(True).at[3, :N].set(True)
    memory0 = policy.initial_memory(rows)
    m, outs = memory0, []
    for t in range(steps):
        m, out = policy.act_recurrent(params, m, obs[t], start[t], jax.random.key(t))
        outs.append(out)
    actions = jnp.stack([o["action"] for o in outs])
    log_prob, _, value = policy._evaluate(
        policy.unroll(params, memory0, jnp.swapaxes(obs, 0, 1), start.T), actions.T
    )
    np.testing.assert_allclose(
        log_prob.T, jnp.stack([o["log_prob"] for o in outs]), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(value.T, jnp.stack([o["value"] for o in outs]), rtol=1e-5, atol=1e-6)
    # Cores, cells and heads: every parameter has the agents axis.
    assert all(x.shape[0] == N for x in jax.tree.leaves(params))


@pytest.mark.parametrize("sequences", [False, True], ids=["flat", "sequences"])
def test_minibatches_hold_whole_games_in_order(sequences):
    rows = 4 * 2 * N  # 4 steps of 2 games' agents, or 8 games' sequences: 24 rows

    def update(counts, minibatch):
        # Whole games, each in its agents' order: row g·N + i at slot k·N + i.
        games = minibatch.reshape(-1, N)
        in_order = (games % N == jnp.arange(N)).all() & (jnp.diff(games, axis=1) == 1).all()
        return counts.at[minibatch].add(1), {"in_order": in_order.astype(jnp.float32)}

    epochs = sequence_minibatch_epochs if sequences else minibatch_epochs
    counts, metrics = epochs(
        jnp.zeros(rows, jnp.int32),
        jnp.arange(rows),
        jax.random.key(3),
        epochs=3,
        num_minibatches=2,
        update=update,
        group=N,
    )
    assert float(metrics["in_order"]) == 1.0
    assert (np.asarray(counts) == 3).all()  # every row once an epoch
    with pytest.raises(ValueError, match=f"whole groups of {N}"):
        epochs(
            counts,
            jnp.arange(rows),
            jax.random.key(3),
            epochs=1,
            num_minibatches=3,
            update=update,
            group=N,
        )


def test_settings_that_cannot_run_without_sharing_are_refused():
    # A single-agent environment has no agents to give networks of their own.
    with pytest.raises(ConfigError, match="share_parameters = false .* one agent"):
        rl.resolve(
            rl.TrainConfig(algo="ippo", env="CartPole-v1", hparams={"share_parameters": False})
        )
    # Minibatches must be whole games: 2 games × 8 steps do not split in 3 (6 rows × 8 would),
    # nor, for a recurrent network, 2 games' sequences (6 rows' would).
    for hparams, says in [({}, "games × steps"), ({"memory": "gru"}, "num_envs \\(games")]:
        ctx, spec = _context(num_minibatches=3, **hparams)
        with pytest.raises(ConfigError, match=says):
            spec.check(ctx)
        # Sharing, the default, takes them as before.
        ctx, spec = _context(num_minibatches=3, share_parameters=True, **hparams)
        spec.check(ctx)


@needs_jaxmarl
@pytest.mark.parametrize("algo", ["ippo", "mappo"])
def test_ippo_and_mappo_train_a_network_per_agent(algo):
    config = rl.TrainConfig(algo=algo, **TINY, hparams={**TINY_HP, "share_parameters": False})
    resolved = rl.resolve(config)
    start = testing.initial_state(rl.build_loop(resolved), jax.random.key(config.seed))
    result = rl.train(config)
    assert all(np.isfinite(np.asarray(result.metrics[k])).all() for k in ("loss", "entropy"))
    before = start.fragments["learner"].params
    after = result.state.fragments["learner"].params
    assert jax.tree.map(jnp.shape, after) == jax.tree.map(jnp.shape, before)
    assert all(x.shape[0] == N for x in jax.tree.leaves(after))
    # Every agent's copy learned from its own rows: each moved, and each its own way.
    for old, new in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
        step = np.asarray(new - old).reshape(N, -1)
        assert (np.abs(step).max(axis=1) > 0).all()
        assert not np.allclose(step[0], step[1]) and not np.allclose(step[1], step[2])


@needs_jaxmarl
def test_ippo_without_sharing_is_the_same_in_compiled_fusion_modes():
    config = rl.TrainConfig(algo="ippo", **TINY, hparams={**TINY_HP, "share_parameters": False})
    testing.assert_modes_agree(config, modes=("step", "scan"))


@needs_jaxmarl
@pytest.mark.slow
def test_without_sharing_every_compiled_fusion_mode_is_the_same():
    # IPPO feed-forward, and MAPPO recurrent (minibatches of whole games' sequences), in step,
    # fragment, iteration and scan modes: about 40 s on 2 cores.
    hp = {**TINY_HP, "share_parameters": False, "update_epochs": 2}
    testing.assert_modes_agree(rl.TrainConfig(algo="ippo", **TINY, hparams=hp))
    gru = {**hp, "memory": "gru", "memory_size": 8}
    testing.assert_modes_agree(rl.TrainConfig(algo="mappo", **TINY, hparams=gru))

"""QMIX and VDN with recurrent agents, sequence replay and a target network
(fragments.algorithms.qmix): the learner re-runs what the actor computed, targets that cannot be
sound are left out, the replay waits for its warm-up, the target network follows, and QMIX wins
SMAX's 3m from its stock command."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.fragments.algorithms.recurrent_team import RecurrentTeamQ, sound_targets

pytest.importorskip("jaxmarl")

SMAX = dict(env="jaxmarl/HeuristicEnemySMAX", env_options={"map": "3m", "world_state": True})
HPARAMS = {
    "learning_starts": 17,  # 2 games x 8 steps a rollout: the second one starts the updates
    "batch_size": 2,
    "buffer_size": 3,
    "num_updates": 2,
    "hidden_sizes": (16,),
    "memory_size": 8,
}
TINY = dict(
    total_steps=4 * 2 * 8,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    profile="off",
    log_every=1,
    hparams=HPARAMS,
    **SMAX,
)


def test_defaults_play_smax_3m_and_qmix_asks_for_the_world_state():
    qmix = rl.resolve(rl.TrainConfig(algo="qmix")).config
    assert qmix.env == "jaxmarl/HeuristicEnemySMAX"
    assert qmix.env_options == {"map": "3m", "world_state": True}
    assert rl.resolve(rl.TrainConfig(algo="vdn")).config.env_options == {"map": "3m"}
    with pytest.raises(rl.ConfigError, match="world_state"):
        rl.resolve(rl.TrainConfig(algo="qmix", env_options={"world_state": False}))


@pytest.mark.parametrize(
    "hparams, match",
    [
        ({"memory": "rnn"}, "memory"),
        ({"batch_size": 64, "buffer_size": 32}, "buffer_size = 32"),
        ({"q_lambda": 1.5}, "q_lambda"),
    ],
)
def test_bad_settings_are_refused_before_compiling(hparams, match):
    with pytest.raises(rl.ConfigError, match=match):
        rl.resolve(rl.TrainConfig(algo="qmix", hparams=hparams))


@pytest.fixture(scope="module")
def team():
    context = rl.resolve(rl.TrainConfig(algo="qmix", **TINY)).context
    team = RecurrentTeamQ(context)
    return team, team.init(jax.random.key(0))


def test_the_learner_unrolls_the_memory_the_actor_stepped(team):
    team, variables = team
    steps, rows = 6, 6
    obs = jax.random.normal(jax.random.key(1), (steps, rows, 75))
    start = jax.random.bernoulli(jax.random.key(2), 0.3, (steps, rows))
    memory = jax.random.normal(jax.random.key(3), (rows, team.memory_width))
    unrolled = team.unroll(variables, memory, obs, start)
    m, stepped = memory, []
    for t in range(steps):  # the actor: reset where an episode starts, then one step
        m = jnp.where(start[t][:, None], 0.0, m)
        m, q = team.step(variables, m, {"observation": obs[t], "world_state": obs[t]})
        stepped.append(q)
    np.testing.assert_allclose(unrolled, jnp.stack(stepped), rtol=1e-5, atol=1e-6)


def test_targets_past_a_truncation_inside_a_sequence_are_left_out():
    # One game, 5 steps: truncated at step 1 (the next observation is the next episode's first),
    # terminated at step 3, truncated at the last step (its own next observation is stored).
    truncated = jnp.array([[0], [1], [0], [0], [1]], bool)
    terminated = jnp.array([[0], [0], [0], [1], [0]], bool)
    next_start = jnp.array([[0], [1], [0], [1], [0]], bool)
    one_step = sound_targets(truncated, terminated, next_start, 0.0)
    assert one_step[:, 0].tolist() == [1, 0, 1, 1, 1]
    # With λ > 0 step 0's return leans on step 1's target: both out; the next episode is sound.
    lam = sound_targets(truncated, terminated, next_start, 0.5)
    assert lam[:, 0].tolist() == [0, 0, 1, 1, 1]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("qmix")
    config = rl.TrainConfig(algo="qmix", eval_every=32, eval_episodes=2, **TINY)
    result = rl.train(config.replace(out=str(out), run_name="run"))
    rows = [json.loads(line) for line in (out / "run" / "metrics.jsonl").open()]
    return result, rows


def test_the_replay_waits_for_its_warm_up_then_updates(tiny_run):
    result, rows = tiny_run
    # 16 game steps a rollout: no update after the first, 2 gradient steps after each other.
    assert [r["updates"] for r in rows] == [0, 2, 4, 6]
    assert rows[0]["loss"] == 0.0 and all(
        np.isfinite(r["loss"]) and r["loss"] > 0 for r in rows[1:]
    )
    learner = result.state.fragments["learner"]
    # 2 sequences a rollout in a buffer of 3: full, the ring wrapped.
    assert int(learner.replay.size) == 3 and int(learner.game_steps) == 64
    stored = learner.replay.storage
    assert stored.observation.shape == (3, 9, 3, 75)  # 8 steps and the observation after them
    assert stored.state.shape == (3, 9, 75) and stored.action_mask.shape == (3, 9, 3, 8)
    assert not np.any(np.asarray(stored.start)[:, -1])  # the stored last observation continues
    # The greedy policy played the team with its memory, every 32 steps.
    assert sum(r.get("eval_return") is not None for r in rows) == 2


@pytest.mark.full  # three programs on SMAX; the default tier keeps the warm-up and the sweep
def test_the_target_network_follows_every_period():
    copies = rl.train(
        rl.TrainConfig(algo="qmix", **{**TINY, "hparams": {**HPARAMS, "target_update_period": 1}})
    )
    learner = copies.state.fragments["learner"]  # copied after every update
    testing.assert_same_bits(learner.target_params, learner.params)

    def run(**hparams):
        return rl.train(rl.TrainConfig(algo="qmix", **{**TINY, "hparams": {**HPARAMS, **hparams}}))

    held = run(target_update_period=7).state.fragments["learner"]  # 6 updates: not yet
    never = run(learning_starts=10**6).state.fragments["learner"]  # no update: the initial net
    assert int(held.updates) == 6 and int(never.updates) == 0
    testing.assert_same_bits(held.target_params, never.params)
    assert not np.array_equal(
        np.asarray(jax.tree.leaves(held.params)[0]),
        np.asarray(jax.tree.leaves(held.target_params)[0]),
    )


@pytest.mark.full
def test_a_qmix_run_resumes_bit_for_bit(tmp_path):
    config = rl.TrainConfig(algo="qmix", **{**TINY, "out": str(tmp_path)}).replace(
        total_steps=6 * 16, checkpoint_every=32
    )
    testing.assert_resumes_bit_for_bit(config, tmp_path, resume_after=2)


@pytest.mark.slow
def test_qmix_wins_smax_3m_from_its_stock_command():
    # From no wins at the start, the stock settings win about half of their training games by
    # 262,144 game steps (about 70 s here).
    result = rl.train(rl.TrainConfig(algo="qmix", total_steps=262_144, progress=False, out=None))
    # The fraction of each iteration's games won (rows divide the sum by the episodes).
    episodes = np.maximum(np.asarray(result.metrics["episodes"]), 1)
    won = np.asarray(result.metrics["info_sum/won"]) / episodes
    assert won[:5].mean() < 0.1 and won[-10:].mean() > 0.3, won

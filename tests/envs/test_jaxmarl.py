"""JaxMARL's games behind the agents axis (envs.jaxmarl_adapter, envs.multi_agent), and the
multi-agent runs built on them: the agents folded into the batch, env steps counted per game,
the team played by evaluation, IPPO and MAPPO from the stock configuration."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.core.env_fragment import env_fragment
from jaxrl_fdg.envs.errors import UnknownEnvironmentError
from jaxrl_fdg.envs.multi_agent import fold, unfold
from jaxrl_fdg.errors import ConfigError

pytest.importorskip("jaxmarl")

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
    hparams={"num_minibatches": 2, "update_epochs": 1, "hidden_sizes": (16,)},
)


def test_a_game_carries_the_agents_axis_and_ends_for_the_team():
    env, params = envs.make(SPREAD)
    assert env.num_agents == 3 and env.agents == ("agent_0", "agent_1", "agent_2")
    assert env.observation_space(params).shape == (18,)  # one agent's
    assert env.action_space(params).n == 5
    state, ts = env.reset(jax.random.key(0), params)
    assert ts.observation.shape == (3, 18) and ts.reward.shape == (3,)
    step = jax.jit(lambda k, s: env.step(k, s, jnp.zeros(3, jnp.int32), params))
    ends = []
    for t in range(60):
        state, ts = step(jax.random.key(t), state)
        assert ts.reward.shape == (3,) and ts.terminated.shape == ()
        ends.append(bool(ts.terminated))
        assert not bool(ts.truncated)  # JaxMARL's own limit ends MPE's games
    # MPE ends a game after its 26th step (JaxMARL counts from 0 and ends at step >= 25).
    assert [t + 1 for t, e in enumerate(ends) if e] == [26, 52]
    assert ts.info["agent_done"].shape == (3,)


def test_the_env_fragment_folds_agents_game_major():
    env, params = envs.make(SPREAD)
    frag = env_fragment(env, params, 4 * 3)
    assert frag.agents == 3
    state = frag.init(jax.random.key(1))
    _, games = env.reset_batch(jax.random.key(1), 4, params)
    # Row g * N + i is agent i of game g.
    np.testing.assert_array_equal(state.observation, fold(games.observation, 3))
    np.testing.assert_array_equal(state.observation[5], games.observation[1, 2])
    np.testing.assert_array_equal(unfold(state.observation, 3), games.observation)
    action = jnp.arange(12, dtype=jnp.int32) % 5
    _, out = frag.apply(state, {"action": action}, jax.random.key(2))
    assert out["reward"].shape == (12,) and out["terminated"].shape == (12,)
    with pytest.raises(ConfigError, match="multiple of 3"):
        env_fragment(env, params, 10)


def test_heterogeneous_agents_are_padded_and_their_missing_actions_masked():
    env, params = envs.make("jaxmarl/MPE_simple_speaker_listener_v4")
    assert env.agents == ("speaker_0", "listener_0")
    assert env.observation_space(params).shape == (11,)  # the listener's; the speaker's 3 padded
    assert env.action_space(params).n == 5  # the listener's 5; the speaker has 3
    _, ts = env.reset(jax.random.key(0), params)
    assert ts.observation.shape == (2, 11)
    assert not np.asarray(ts.observation[0, 3:]).any()
    np.testing.assert_array_equal(
        ts.info["action_mask"], [[True, True, True, False, False], [True] * 5]
    )
    with pytest.raises(ConfigError, match="pad=True"):
        rl.resolve(
            rl.TrainConfig(
                algo="ippo",
                env=env.name.replace("jaxmarl-", "jaxmarl/"),
                env_options={"pad": False},
            )
        )


def test_smax_publishes_masks_world_state_and_wins():
    env, params = envs.make("jaxmarl/HeuristicEnemySMAX", map="3m", world_state=True)
    assert env.num_agents == 3
    space = env.observation_space(params)
    _, ts = env.reset(jax.random.key(0), params)
    assert ts.observation["observation"].shape == (3, *space.spaces["observation"].shape)
    world = ts.observation["world_state"]
    assert world.shape == (3, *space.spaces["world_state"].shape)
    # The same global state for every agent, then its one-hot id.
    np.testing.assert_array_equal(world[0, :-3], world[2, :-3])
    np.testing.assert_array_equal(world[:, -3:], np.eye(3))
    assert ts.info["action_mask"].shape == (3, 8) and ts.info["action_mask"].dtype == bool
    assert set(ts.info) >= {"agent_done", "won"}


def test_agent_ids_widen_each_observation():
    env, params = envs.make(SPREAD, agent_ids=True)
    assert env.observation_space(params).shape == (21,)
    _, ts = env.reset(jax.random.key(0), params)
    np.testing.assert_array_equal(ts.observation[:, -3:], np.eye(3))


@pytest.mark.full  # with the other check-env tests (tests/envs/test_check.py)
def test_check_env_checks_a_game_through_its_joint_spaces():
    from jaxrl_fdg.envs import check

    report = check.check_env(SPREAD, steps=60, num_envs=2)
    assert report.ok, str(report)
    assert "spaces" in report.passed and "auto_reset" in report.passed


def test_bad_names_are_refused_with_the_choices():
    with pytest.raises(UnknownEnvironmentError, match="MPE_simple_spread_v3"):
        envs.make("jaxmarl/MPE_simple_sprad_v3")
    with pytest.raises(UnknownEnvironmentError, match="3m"):
        envs.make("jaxmarl/SMAX", map="3q")


def test_mappo_needs_a_world_state_and_asks_for_one_by_default():
    with pytest.raises(ConfigError, match="world_state"):
        rl.resolve(rl.TrainConfig(algo="mappo", env=SPREAD, env_options={"world_state": False}))
    resolved = rl.resolve(rl.TrainConfig(algo="mappo"))
    assert resolved.config.env_options == {"world_state": True}
    assert resolved.context.num_envs == 16 * 3 and resolved.context.num_agents == 3


@pytest.fixture(scope="module")
def ippo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ippo")
    config = rl.TrainConfig(algo="ippo", eval_every=16, eval_episodes=4, **TINY)
    result = rl.train(config.replace(out=str(out), run_name="run"))
    rows = [json.loads(line) for line in (out / "run" / "metrics.jsonl").open()]
    return result, rows


def test_env_steps_count_games_and_evaluation_plays_the_team(ippo_run):
    result, rows = ippo_run
    # 2 games x 8 steps per iteration: 16 env steps, 48 agent steps.
    assert [r["step"] for r in rows] == [16, 32, 48]
    assert result.summary["env_steps"] == 48 and result.summary["agent_steps"] == 144
    # Four games played to their end (26 steps) by the deterministic policy, every 16 steps.
    evals = [r for r in rows if r.get("eval_length") is not None]
    assert len(evals) == 3 and all(r["eval_length"] == 26 for r in evals)
    assert all(np.isfinite(r["eval_return"]) for r in evals)
    # Each agent's return beside the team's mean, which is their mean.
    for r in rows:
        if r["episode_return"] is None:
            continue
        each = [r[f"episode_return_agent_{i}"] for i in range(3)]
        assert np.mean(each) == pytest.approx(r["episode_return"], rel=1e-5)


def test_a_seed_lane_of_ippo_is_its_run_alone():
    # IPPO's fusion modes are swept with every algorithm's (tests/policies/test_fusion.py).
    config = rl.TrainConfig(algo="ippo", **TINY)
    lanes = rl.train(config.replace(num_seeds=2))
    alone = rl.train(config.replace(seed=1))
    # A lane of a vmapped program rounds its last bits as it may (tests/policies/test_replication).
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
        jax.tree.map(lambda x: x[1], lanes.state.fragments),
        alone.state.fragments,
    )


@pytest.mark.full
def test_a_multi_agent_run_resumes_bit_for_bit(tmp_path):
    config = rl.TrainConfig(algo="mappo", **{**TINY, "out": str(tmp_path)}).replace(
        total_steps=6 * 16, checkpoint_every=32
    )
    testing.assert_resumes_bit_for_bit(config, tmp_path, resume_after=2)
    rows = [json.loads(line) for line in (tmp_path / "part" / "metrics.jsonl").open()]
    assert [r["step"] for r in rows] == [16 * i for i in range(1, 7)]

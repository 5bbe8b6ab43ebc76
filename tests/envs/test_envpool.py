"""EnvPool tasks (``envpool/<task-id>``) as host simulators: EnvPool's batched stepping under the
env fragment's same-step reset, every fusion mode and placement ``host_env``, Atari frames to the
``nature`` torso."""

import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.envs import host

envpool = pytest.importorskip("envpool")

TINY = rl.TrainConfig(
    env="envpool/CartPole-v1",
    total_steps=4 * 8 * 3,
    num_envs=4,
    rollout_len=8,
    out=None,
    progress=False,
    log_every=3,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)


def test_episodes_reset_in_the_step_they_end():
    # EnvPool resets an ended environment on its next step. Reference: one single-env pool per
    # environment (EnvPool seeds environment i of a pool with seed + i), stepped with the same
    # actions, whose extra reset step must give the observation the adapter hands on at once.
    num_envs, seed, max_steps = 4, 11, 25
    simulator, _ = envs.make("envpool/CartPole-v1", max_steps=max_steps)
    batch = simulator.make_batch(num_envs, seed)
    references = [
        envpool.make_gymnasium("CartPole-v1", num_envs=1, seed=seed + i, max_episode_steps=25)
        for i in range(num_envs)
    ]
    obs = batch.reset()
    np.testing.assert_array_equal(obs, np.concatenate([r.reset()[0] for r in references]))
    rng = np.random.default_rng(0)
    ends = {"terminated": 0, "truncated": 0}
    for _ in range(120):
        actions = rng.integers(0, 2, num_envs).astype(np.int32)
        batch.send(actions)
        obs, reward, terminated, truncated, final = batch.recv()
        for i, reference in enumerate(references):
            ref_obs, ref_reward, ref_term, ref_trunc, _ = reference.step(actions[i : i + 1])
            np.testing.assert_array_equal(final[i], ref_obs[0])
            assert (reward[i], terminated[i], truncated[i]) == (
                ref_reward[0],
                ref_term[0],
                ref_trunc[0],
            )
            if ref_term[0] or ref_trunc[0]:
                ends["terminated" if ref_term[0] else "truncated"] += 1
                first, first_reward, *_ = reference.step(np.zeros(1, np.int32))  # its reset step
                assert first_reward[0] == 0
                np.testing.assert_array_equal(obs[i], first[0])
            else:
                np.testing.assert_array_equal(obs[i], ref_obs[0])
    assert min(ends.values()) >= 2, ends  # both kinds of ending were exercised
    batch.close()


@pytest.fixture(scope="module")
def runs():
    cases = [("single", "step"), ("single", "scan"), ("host_env", "step"), ("host_env", "scan")]
    return {case: rl.train(TINY.replace(placement=case[0], fusion=case[1])) for case in cases}


@pytest.mark.parametrize("placement", ["single", "host_env"])
def test_fusion_modes_give_the_same_run(runs, placement):
    # step mode sends and receives in Python between compiled policy calls (host_env: one half
    # while the device acts for the other); scan calls back into EnvPool from inside the program.
    step, scan = runs[placement, "step"], runs[placement, "scan"]
    params = step.state.fragments["learner"].params
    testing.assert_same_bits(params, scan.state.fragments["learner"].params, placement)
    testing.assert_same_bits(step.metrics["loss"], scan.metrics["loss"], placement)
    assert scan.metrics["episodes"].sum() >= 1


def test_pools_are_closed_after_a_run(runs):
    handle = int(runs["single", "scan"].state.fragments["env"].env)
    assert handle not in host._SIMULATORS


def test_atari_frames_reach_the_nature_torso_channels_last():
    simulator, params = envs.make("envpool/Pong-v5", episodic_life=True, reward_clip=True)
    assert params is None and simulator.observation_space.shape == (84, 84, 4)
    assert simulator.action_space == envs.Discrete(6)
    batch = simulator.make_batch(2, 3)
    reference = envpool.make_gymnasium("Pong-v5", num_envs=2, seed=3)
    np.testing.assert_array_equal(batch.reset(), np.moveaxis(reference.reset()[0], 1, -1))
    batch.close()
    out = rl.train(
        TINY.replace(
            env="envpool/Pong-v5",
            num_envs=2,
            rollout_len=4,
            total_steps=2 * 4 * 2,
            log_every=2,
            hparams={"torso": "nature", "hidden_sizes": (32,), "num_minibatches": 1},
        )
    )
    assert np.isfinite(out.metrics["loss"]).all()
    kernel = out.state.fragments["learner"].params["params"]["policy"]["layers_0"]["Conv_0"]
    assert kernel["kernel"].shape == (8, 8, 4, 32)


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({}, envs.UnknownEnvironmentError, "did you mean 'Pong-v5'"),
        ({"episodic_lives": True}, ValueError, r"no option\(s\) \['episodic_lives'\]; valid: "),
    ],
)
def test_bad_tasks_and_options_are_named(options, error, message):
    name = "envpool/Pongg-v5" if not options else "envpool/Pong-v5"
    with pytest.raises(error, match=message) as raised:
        envs.make(name, **options)
    assert "\n" not in str(raised.value)


def test_atari_frames_are_uint8_from_the_simulator_to_the_replay():
    # 8-bit pixels stay 8-bit: the space says so, the env state holds them, and DQN's replay
    # stores them at one byte each, each frame of the 4-frame stacks once (its network divides
    # by 255 inside).
    simulator, _ = envs.make("envpool/Pong-v5")
    assert simulator.observation_space.dtype == np.uint8
    off_policy = {"learning_starts": 8, "batch_size": 4, "buffer_size": 32, "utd_ratio": 0.25}
    out = rl.train(
        TINY.replace(
            algo="dqn",
            env="envpool/Pong-v5",
            num_envs=2,
            rollout_len=4,
            total_steps=2 * 4 * 2,
            log_every=2,
            hparams={"torso": "nature", "hidden_sizes": (16,), **off_policy},
        )
    )
    assert out.state.fragments["env"].observation.dtype == np.uint8
    replay = out.state.fragments["replay"]
    assert replay.frames.dtype == replay.finals.dtype == np.uint8
    assert replay.frames.shape == (32 // 2 + 4, 2, 84, 84)  # rows of single frames, not stacks
    assert int(replay.frames.max()) > 1  # pixels 0-255, not rescaled
    assert np.isfinite(out.metrics["loss"]).all() and out.metrics["updates"][-1] > 0

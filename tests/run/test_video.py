"""Videos of the policy's episodes: drawn by each environment's renderer inside one compiled
program, written as GIF (or MP4 with the video extra) by ``evaluate --video`` and, with
``eval_video``, at each evaluation of a training run."""

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.cli import main
from jaxrl_fdg.run.evaluation import Video

RENDERED = (
    "CartPole-v1",
    "StatelessCartPole-v1",
    "Acrobot-v1",
    "Pendulum-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Catch-bsuite",
    "Minefield-v0",
)


@pytest.mark.parametrize("name", RENDERED)
def test_a_renderer_draws_each_state_of_a_batch(name):
    env, params = envs.make(name)
    assert env.can_render
    state, _ = env.reset_batch(jax.random.key(0), 3, params)
    frames = jax.jit(jax.vmap(env.render, in_axes=(0, None)))(state.env, params)
    assert frames.dtype == jnp.uint8 and frames.ndim == 4 and frames.shape[-1] == 3
    # Different states, different pictures (each reset draws its own start).
    first = np.asarray(frames[0])
    assert any(not np.array_equal(first, np.asarray(f)) for f in frames[1:])
    assert first.min() < first.max()


def test_wrappers_render_the_wrapped_state():
    env, params = envs.make("CartPole-v1")
    wrapped = envs.EpisodeStatistics(env)
    state, _ = wrapped.reset(jax.random.key(1), wrapped.default_params)
    inner, _ = env.reset(jax.random.key(1), params)
    np.testing.assert_array_equal(
        wrapped.render(state.env, wrapped.default_params), env.render(inner.env, params)
    )


def _trained(tmp_path, name="run", env="Minefield-v0", **changes):
    config = testing.tiny("ppo", env=env, out=str(tmp_path), run_name=name, **changes)
    rl.train(config)
    return tmp_path / name


def test_evaluate_writes_a_gif_of_whole_episodes(tmp_path):
    run = _trained(tmp_path)
    result = rl.evaluate(run, episodes=4, video=Video(episodes=2))
    gif = Image.open(result["video"])
    assert result["video"].endswith("videos/eval-3.gif")
    # Minefield's episodes end within its 50-step limit: two of them, end to end.
    assert 2 <= gif.n_frames <= 100 and gif.size == (150, 150)
    assert main(["evaluate", str(run), "--video", "--out", str(tmp_path / "v.gif")]) == 0
    assert Image.open(tmp_path / "v.gif").n_frames >= 1


@pytest.mark.skipif(
    importlib.util.find_spec("imageio_ffmpeg") is None, reason="the video extra is not installed"
)
def test_evaluate_writes_an_mp4(tmp_path):
    run = _trained(tmp_path, env="CartPole-v1")
    result = rl.evaluate(run, video=Video(format="mp4"))
    with open(result["video"], "rb") as f:
        assert b"ftyp" in f.read(64)  # an MP4 container


def test_a_training_run_films_each_evaluation(tmp_path):
    run = _trained(tmp_path, eval_every=2 * 8, eval_video=True, total_steps=2 * 2 * 8, log_every=1)
    assert sorted(p.name for p in (run / "videos").iterdir()) == [
        "iteration-1.gif",
        "iteration-2.gif",
    ]


class _Unseen(envs.CartPole):
    render = envs.Environment.render


def test_what_cannot_be_filmed_is_refused_in_one_line(tmp_path, capsys):
    if "Unseen-v0" not in envs.registered():
        envs.register("Unseen-v0", _Unseen)
    with pytest.raises(rl.ConfigError, match="Unseen-v0 does not render"):
        rl.train(testing.tiny("ppo", env="Unseen-v0", eval_every=16, eval_video=True))
    with pytest.raises(rl.ConfigError, match="set eval_every too"):
        rl.train(testing.tiny("ppo", eval_video=True))
    run = _trained(tmp_path)
    with pytest.raises(rl.ConfigError, match="unknown video format 'avi'"):
        rl.evaluate(run, video=Video(format="avi"))
    with pytest.raises(rl.ConfigError, match="video episodes"):
        rl.evaluate(run, video=Video(episodes=0))


class _HostDrawn(envs.Minefield):
    """Minefield drawn with numpy on the host, as a suite's own renderer that does not trace."""

    render_on_host = True

    def render(self, state, params):
        assert isinstance(state.mines, np.ndarray)  # one environment's state, on the host
        image = np.zeros((params.size, params.size, 3), np.uint8)
        image[state.mines] = 255
        image[state.position[0], state.position[1]] = (0, 0, 255)
        return image


def test_a_host_renderer_draws_the_played_states_one_by_one(tmp_path):
    if "HostDrawn-v0" not in envs.registered():
        envs.register("HostDrawn-v0", _HostDrawn)
    run = _trained(tmp_path, env="HostDrawn-v0")
    result = rl.evaluate(run, video=Video(episodes=2))
    gif = Image.open(result["video"])
    assert gif.size == (5, 5) and 2 <= gif.n_frames <= 100

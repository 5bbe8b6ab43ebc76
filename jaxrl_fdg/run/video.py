"""Videos of what the agent does: the deterministic policy's episodes, drawn by the
environment's own renderer (:meth:`~jaxrl_fdg.envs.Environment.render`) and written as a GIF
(Pillow, which matplotlib brings) or an MP4 (imageio with its ffmpeg, the ``video`` extra).

The episodes are played as evaluation plays them (:func:`~jaxrl_fdg.core.evaluation.
episode_states`: the same keys for the same seed and iteration, masks and memory respected) in
one compiled program that also renders every step's state, so a video costs one compile and
no Python per frame. Each environment's first episode is kept, to its end or to ``max_frames``.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl_fdg.config import Resolved
from jaxrl_fdg.core.evaluation import episode_states, evaluation_key
from jaxrl_fdg.core.fragment import published
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.errors import ConfigError

FORMATS = ("gif", "mp4")
FOLDER = "videos"
MAX_FRAMES = 1000  # per episode: the longest a video shows of one


def check_video(resolved: Resolved, video_format: str) -> None:
    """Refuse, before anything compiles, what cannot make a video: an environment without a
    renderer, a host simulator, an unknown format, an MP4 without imageio's ffmpeg."""
    if video_format not in FORMATS:
        raise ConfigError(f"unknown video format {video_format!r}; choose one of gif, mp4")
    env = resolved.env
    if env.on_host or not env.can_render:
        raise ConfigError(
            f"{resolved.config.env} does not render: a video needs an environment that "
            "overrides Environment.render (the built-in ones, Craftax, XLand-MiniGrid, Navix, "
            "gymnax's image games: MinAtar, Pong-misc; not Brax, Playground, Jumanji, gym or "
            "EnvPool)"
        )
    if video_format == "mp4" and not all(
        importlib.util.find_spec(m) for m in ("imageio", "imageio_ffmpeg")
    ):
        raise ConfigError('an MP4 needs imageio and its ffmpeg: pip install "jaxrl-fdg[video]"')


class Recorder:
    """Videos of the learner's policy in a run's states: :meth:`__call__` writes one; the
    program that plays and draws the episodes compiles at the first call and serves the
    others (a training run's videos at each evaluation)."""

    def __init__(self, resolved: Resolved, loop: Loop, episodes: int = 1, fmt: str = "gif"):
        check_video(resolved, fmt)
        self.resolved, self.episodes, self.format = resolved, episodes, fmt
        env, params = resolved.env, resolved.env_params
        steps = min(int(params.max_steps), MAX_FRAMES)
        play = episode_states(
            env, params, loop.info.policy, episodes, steps, loop.info.policy_memory
        )
        self.env, self.params = env, params
        on_device = not env.render_on_host
        draw = jax.vmap(jax.vmap(env.render, in_axes=(0, None)), in_axes=(0, None))

        def run(states: dict, key: jax.Array):
            learner = loop.info.learner
            policy_params = published(learner, states[learner.name])["params"]
            visited, ended = play(policy_params, key)
            return (draw(visited, params) if on_device else visited), ended

        self.program = jax.jit(resolved.placement.evaluation(run))
        self.seeds = np.asarray([lane.seed for lane in resolved.lanes])

    def __call__(self, state: LoopState, iteration: int, path: Path, fps: int = 30) -> dict:
        """Write the video of ``state``'s policy at ``iteration`` (its evaluation's keys) to
        ``path``, the episodes one after another (the first run's, in a run of several seeds).
        Returns ``{"path", "frames", "episodes", "lengths"}``."""
        if len(self.seeds) == 1:
            keys = evaluation_key(self.resolved.config.seed, iteration)
        else:
            keys = jax.vmap(lambda seed: evaluation_key(seed, iteration))(self.seeds)
        frames, ended = jax.device_get(self.program(state.fragments, keys))
        if len(self.seeds) > 1:  # the runs of a replicated state: the first one's
            frames, ended = jax.tree.map(lambda x: x[0], (frames, ended))
        clips, lengths = [], []
        for e in range(self.episodes):
            ends = np.flatnonzero(ended[:, e])
            length = int(ends[0]) + 1 if ends.size else ended.shape[0]
            clips.append(self._clip(frames, e, length))
            lengths.append(length)
        video = np.concatenate(clips)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, video, self.format, fps)
        return {
            "path": str(path),
            "frames": len(video),
            "episodes": self.episodes,
            "lengths": lengths,
        }

    def _clip(self, frames: Any, episode: int, length: int) -> np.ndarray:
        """The first ``length`` frames of ``episode``: drawn already, or (a host renderer)
        drawn now from the states, one by one."""
        if not self.env.render_on_host:
            return frames[:length, episode]
        states = jax.tree.map(lambda x: x[:length, episode], frames)
        drawn = [
            self.env.render(jax.tree.map(lambda x, t=t: x[t], states), self.params)
            for t in range(length)
        ]
        return np.stack([np.asarray(frame, np.uint8) for frame in drawn])


def record(
    resolved: Resolved,
    loop: Loop,
    state: LoopState,
    iteration: int,
    path: Path,
    episodes: int = 1,
    video_format: str = "gif",
) -> dict[str, Any]:
    """One video of ``episodes`` episodes of the learner's policy in ``state`` at ``path``
    (:class:`Recorder`)."""
    return Recorder(resolved, loop, episodes, video_format)(state, iteration, path)


def _write(path: Path, frames: np.ndarray, video_format: str, fps: int) -> None:
    if video_format == "mp4":
        import imageio.v3 as iio

        # Sides a multiple of 16, the encoder's macroblock, which imageio would otherwise
        # reach by rescaling every frame: padded with the edge's pixels instead.
        pad = [(0, 0), (0, -frames.shape[1] % 16), (0, -frames.shape[2] % 16), (0, 0)]
        with warnings.catch_warnings():
            # ffmpeg runs as a child process, started by fork and exec at once: nothing of
            # JAX's threads runs in it, which is what Python's warning about fork fears.
            warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
            iio.imwrite(path, np.pad(frames, pad, mode="edge"), fps=fps, codec="libx264")
        return
    from PIL import Image

    images = [Image.fromarray(frame) for frame in frames]
    duration = max(1, round(1000 / fps))
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration, loop=0)

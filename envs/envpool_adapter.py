"""EnvPool tasks as host simulators: ``envpool/<task-id>`` (Atari, MuJoCo, classic control, ...).

EnvPool steps a whole batch of environments in C++ worker threads: :meth:`EnvPoolBatch.send`
hands it the actions and returns at once, :meth:`EnvPoolBatch.recv` waits for the batch. The
host env fragment (:mod:`jaxrl_fdg.envs.host`) drives it like any host simulator, so every fusion
mode works and placement ``host_env`` overlaps one half's stepping with the device computing the
other half's actions.

EnvPool resets an ended environment on the *next* step (that step ignores its action and returns
the first observation, with reward 0). The env fragment's contract is a reset in the *same* step,
with the ended episode's last observation kept apart (``next_observation``), as for every other
environment here. :meth:`EnvPoolBatch.recv` therefore sends the ended environments alone (EnvPool
accepts a subset of env ids) for that reset step at once and returns its observations; the reward
and flags it reports are those of the real step.

Options are EnvPool's own (its ``make`` keywords: ``episodic_life``, ``reward_clip``,
``noop_max``, ``max_episode_steps``, ...); ``max_steps`` is ``max_episode_steps``, as for the
other prefixes. Atari's stacked grey frames come ``[4, 84, 84]``, channels
first; they are handed on channels last (``[84, 84, 4]``, what the ``cnn`` and ``nature`` torsos
read), as 8-bit pixels (uint8): a replay stores them at one byte each, and the torsos divide by
255 inside the network.

EnvPool is imported only when a task is built (``envpool`` extra).
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from jaxrl_fdg.envs.errors import UnknownEnvironmentError
from jaxrl_fdg.envs.host import HostSimulator, StepArrays, gymnasium_space, observation_dtype
from jaxrl_fdg.envs.spaces import Box, Discrete, Space

PREFIX = "envpool/"


def envpool_simulator(task_id: str, **options: Any) -> HostSimulator:
    """EnvPool's ``task_id`` as a host simulator; ``options`` go to ``envpool.make_gymnasium``.

    Raises:
      UnknownEnvironmentError: EnvPool has no task ``task_id`` (the message names close ones).
      ValueError: an option EnvPool's task does not take (the message lists them).
    """
    import envpool

    tasks = envpool.list_all_envs()
    if task_id not in tasks:
        close = difflib.get_close_matches(task_id, tasks, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise UnknownEnvironmentError(
            f"unknown EnvPool task {task_id!r}{hint} (envpool.list_all_envs() lists its "
            f"{len(tasks)} tasks, e.g. CartPole-v1, Pong-v5, HalfCheetah-v5)"
        )
    if "max_steps" in options:
        options["max_episode_steps"] = options.pop("max_steps")
    spec = envpool.make_spec(task_id)
    valid = sorted(set(spec.config._fields) - _MANAGED)
    bad = sorted(set(options) - set(valid))
    if bad:
        raise ValueError(
            f"EnvPool task {task_id!r} takes no option(s) {bad}; valid: {', '.join(valid)}"
        )
    spec = envpool.make_spec(task_id, **options)
    channels_last = _is_atari(task_id)
    obs_space = _space(spec.observation_space, channels_last)
    action_space = _space(spec.action_space, False)

    def make_batch(num_envs: int, seed: int) -> EnvPoolBatch:
        pool = envpool.make_gymnasium(
            task_id, num_envs=num_envs, batch_size=num_envs, seed=seed, **options
        )
        return EnvPoolBatch(pool, num_envs, channels_last, isinstance(action_space, Discrete))

    stack = int(getattr(spec.config, "stack_num", 1)) if channels_last else 1
    return HostSimulator(PREFIX + task_id, make_batch, obs_space, action_space, stack)


# Options the adapter sets itself: the batch and its seed.
_MANAGED = {
    "num_envs",
    "batch_size",
    "seed",
    "env_seed",
    "max_num_players",
    "base_path",
    "task",
    "gym_reset_return_info",
}


class EnvPoolBatch:
    """One EnvPool of ``num_envs`` environments, stepped synchronously as a whole batch."""

    def __init__(self, pool: Any, num_envs: int, channels_last: bool, discrete: bool):
        self.pool, self.num_envs = pool, num_envs
        self.channels_last, self.discrete = channels_last, discrete
        self.ids = np.arange(num_envs, dtype=np.int32)
        self.resting: np.ndarray | None = None  # an action for reset steps (EnvPool ignores it)

    def reset(self) -> np.ndarray:
        obs, info = self.pool.reset()
        return self._observation(obs, info)

    def send(self, actions: np.ndarray) -> None:
        actions = np.asarray(actions)
        if self.discrete:
            actions = actions.astype(np.int32)
        if self.resting is None:
            self.resting = np.zeros_like(actions)
        self.pool.send(actions, self.ids)

    def recv(self) -> StepArrays:
        obs, reward, terminated, truncated, info = self.pool.recv()
        order = np.argsort(info["env_id"])
        final = self._observation(obs, info)
        reward = np.asarray(reward, np.float32)[order]
        terminated = np.asarray(terminated, np.bool_)[order]
        truncated = np.asarray(truncated, np.bool_)[order]
        ended = np.flatnonzero(terminated | truncated).astype(np.int32)
        observation = final
        if ended.size:  # EnvPool's reset step for the ended envs alone, now
            self.pool.send(self.resting[ended], ended)
            first, _, _, _, reset_info = self.pool.recv()
            observation = final.copy()
            observation[np.asarray(reset_info["env_id"])] = self._convert(first)
        return observation, reward, terminated, truncated, final

    def close(self) -> None:
        self.pool.close()

    def _observation(self, obs: np.ndarray, info: dict) -> np.ndarray:
        first = self._convert(obs[:1])
        out = np.empty((self.num_envs, *first.shape[1:]), first.dtype)
        out[np.asarray(info["env_id"])] = self._convert(obs)
        return out

    def _convert(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, observation_dtype(obs.dtype))
        return np.moveaxis(obs, 1, -1) if self.channels_last else obs


def _is_atari(task_id: str) -> bool:
    from envpool.registration import registry

    return registry.specs[task_id][0] == "envpool.atari"


def _space(space: Any, channels_last: bool) -> Space:
    """EnvPool's gymnasium space as ours; a ``Box`` of images moved to channels last."""
    ours = gymnasium_space(space)
    if not channels_last or not isinstance(ours, Box):
        return ours
    low, high = (np.moveaxis(np.asarray(b), 0, -1) for b in (ours.low, ours.high))
    return Box(low, high, low.shape, ours.dtype)

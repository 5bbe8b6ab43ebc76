"""Host simulators: any gymnasium-API environment (numpy, C++, anything), stepped on the host.

The simulators live on the host as a :class:`HostBatch`: one Python object per environment for
gymnasium (:class:`GymnasiumBatch`), or one EnvPool stepping every environment in its own C++
threads (:mod:`jaxrl_fdg.envs.envpool_adapter`). The env fragment around them
(:func:`jaxrl_fdg.core.env_fragment.host_env_fragment`) holds only a handle to the batch plus
the observation and episode statistics. How they are stepped follows the
fusion mode, with no change to the algorithm:

* split modes (``eager``, ``step``): the env step is not compiled; it runs in Python between the
  compiled policy calls, as most frameworks do;
* fused modes (``fragment``, ``iteration``, ``scan``): the compiled program calls back to the host
  through an ordered ``jax.experimental.io_callback``, once per step for the whole batch.

What that costs: every step is a host round trip. The actions are copied device→host, the host steps
the environments (in a Python loop for gymnasium), and the results are copied back; in a fused
program the device waits for the callback to return. A host simulator therefore caps throughput at
the simulator's own speed plus ~tens of µs of callback overhead per step, and a fused program gains
little over ``step`` mode. Use it for simulators that only exist on the host; write JAX environments
for speed.

Episodes end as the environment says (``terminated`` / ``truncated``, gymnasium's ``TimeLimit``
included); the adapter resets that environment in the same step and keeps the final observation,
the same contract as :class:`jaxrl_fdg.envs.Environment`. Seeds: environment ``i`` of a run is
first reset with ``seed = base + i``, ``base`` drawn from the fragment's init key, so a run is
reproducible from its seed.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np

from jaxrl_fdg.envs.errors import UnknownEnvironmentError
from jaxrl_fdg.envs.spaces import Box, Discrete, Space

PREFIX = "gym/"

_SIMULATORS: dict[int, HostBatch] = {}  # handle -> the run's batch of environments
_HANDLES = itertools.count(1)
_LOCK = threading.Lock()


class HostBatch(Protocol):
    """A batch of host environments, stepped together; one per run (one per half of a
    ``host_env`` run). Made by :attr:`HostSimulator.make_batch`; the env fragment resets it once,
    then steps it.

    ``send`` starts a step and ``recv`` finishes it: a simulator that steps in threads of its own
    (EnvPool) works between the two while the caller does something else; one stepped in Python
    does all its work in ``recv``.
    """

    def reset(self) -> np.ndarray:
        """The first observations ``[B, *obs]``, in the observation space's dtype (float32, or
        the integers of 8-bit pixels)."""

    def send(self, actions: np.ndarray) -> None:
        """Start a step of every environment with ``actions`` ``[B, ...]``."""

    def recv(self) -> StepArrays:
        """Finish the step: ``(observation, reward, terminated, truncated, final observation)``
        in numpy, ``[B, ...]``; an environment whose episode ended has been reset in the same
        step (``observation`` is the new episode's first, ``final observation`` the ended
        one's last)."""

    def close(self) -> None:
        """Release the environments."""


StepArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class HostSimulator(NamedTuple):
    """A factory of batches of host environments and the spaces of one of them.

    ``make_batch(num_envs, seed)`` makes ``num_envs`` environments whose first reset seeds
    environment ``i`` with ``seed + i``. ``frame_stack`` is the number of frames stacked on the
    observation's last axis (EnvPool's Atari: 4), which a replay with frame storage keeps once.
    """

    name: str
    make_batch: Callable[[int, int], HostBatch]
    observation_space: Space
    action_space: Space
    frame_stack: int = 1

    @property
    def on_host(self) -> bool:
        """True: stepped on the host (``Environment.on_host`` is False)."""
        return True


def gymnasium_simulator(env_id: str, **kwargs: Any) -> HostSimulator:
    """``gymnasium.make(env_id, **kwargs)`` as a host simulator (gymnasium imported here only).

    Raises:
      UnknownEnvironmentError: gymnasium has no environment ``env_id`` (its message suggests
        close names).
      ValueError: gymnasium cannot make it for another reason.
    """
    import gymnasium

    unregistered = (gymnasium.error.UnregisteredEnv, gymnasium.error.DeprecatedEnv)
    try:
        probe = gymnasium.make(env_id, **kwargs)
    except gymnasium.error.Error as e:
        # UnknownEnvironmentError is a ValueError, as every other failure here.
        error = UnknownEnvironmentError if isinstance(e, unregistered) else ValueError
        raise error(f"gymnasium cannot make {env_id!r}: {' '.join(str(e).split())}") from None
    spaces = gymnasium_space(probe.observation_space), gymnasium_space(probe.action_space)
    probe.close()

    def make_batch(num_envs: int, seed: int) -> GymnasiumBatch:
        envs = [gymnasium.make(env_id, **kwargs) for _ in range(num_envs)]
        return GymnasiumBatch(envs, seed, *spaces)

    return HostSimulator(PREFIX + env_id, make_batch, *spaces)


def observation_dtype(dtype: Any) -> np.dtype:
    """The dtype observations of ``dtype`` keep here: integers (8-bit pixels) as they are, any
    float as float32 (JAX computes in float32)."""
    dtype = np.dtype(dtype)
    return dtype if np.issubdtype(dtype, np.integer) else np.dtype(np.float32)


def gymnasium_space(space: Any) -> Space:
    """A gymnasium ``Discrete`` or ``Box`` as ours: a ``Box`` of integers (8-bit pixels) keeps
    its dtype, a ``Box`` of floats becomes float32."""
    import gymnasium

    if isinstance(space, gymnasium.spaces.Discrete):
        return Discrete(int(space.n))
    if isinstance(space, gymnasium.spaces.Box):
        dtype = observation_dtype(space.dtype)
        bounds = np.asarray(space.low, dtype), np.asarray(space.high, dtype)
        return Box(*bounds, space.shape, dtype)
    raise ValueError(f"unsupported gymnasium space {space!r} (supported: Discrete, Box)")


class GymnasiumBatch:
    """gymnasium environments stepped one by one in Python, in ``recv``."""

    def __init__(self, envs: list[Any], seed: int, observation_space: Space, action_space: Space):
        self.envs, self.seed = envs, seed
        self.obs_shape = (len(envs), *observation_space.shape)
        self.obs_dtype = np.dtype(observation_space.dtype)
        self.discrete = isinstance(action_space, Discrete)
        self.actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        obs = [env.reset(seed=self.seed + i)[0] for i, env in enumerate(self.envs)]
        return np.asarray(obs, self.obs_dtype).reshape(self.obs_shape)

    def send(self, actions: np.ndarray) -> None:
        actions = np.asarray(actions)
        self.actions = actions.astype(np.int64) if self.discrete else actions

    def recv(self) -> StepArrays:
        actions, self.actions = self.actions, None
        batch = (len(self.envs),)
        out_obs, final = (np.empty(self.obs_shape, self.obs_dtype) for _ in range(2))
        rewards = np.empty(batch, np.float32)
        terminated, truncated = np.empty(batch, np.bool_), np.empty(batch, np.bool_)
        for i, env in enumerate(self.envs):
            obs, rewards[i], terminated[i], truncated[i], _ = env.step(actions[i])
            final[i] = obs
            out_obs[i] = env.reset()[0] if terminated[i] or truncated[i] else obs
        return out_obs, rewards, terminated, truncated, final

    def close(self) -> None:
        for env in self.envs:
            env.close()


def open_simulators(simulator: HostSimulator, num_envs: int, seed: int) -> tuple[int, np.ndarray]:
    """Make and reset ``num_envs`` environments of ``simulator`` (environment ``i`` seeded with
    ``seed + i``); returns the handle of the batch and its first observations."""
    simulators = simulator.make_batch(num_envs, int(seed))
    observation = np.asarray(simulators.reset(), np.dtype(simulator.observation_space.dtype))
    with _LOCK:
        handle = next(_HANDLES)
        _SIMULATORS[handle] = simulators
    return handle, observation


def step_simulators(handle: Any, actions: Any) -> StepArrays:
    """One step of the environments behind ``handle`` on the host: :meth:`HostBatch.send`, then
    :meth:`HostBatch.recv`.

    The env fragment calls this through an ``io_callback`` inside a compiled program, and
    directly where a plan steps host fragments between programs, so both compute the same step.
    """
    simulators = _SIMULATORS[int(handle)]
    simulators.send(np.asarray(actions))
    return simulators.recv()


def close(handle: int) -> None:
    """Close and forget the environments behind ``handle`` (a run's simulators)."""
    with _LOCK:
        simulators = _SIMULATORS.pop(int(handle), None)
    if simulators is not None:
        simulators.close()

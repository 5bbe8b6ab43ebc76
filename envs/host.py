"""Host simulators: any gymnasium-API environment (numpy, C++, anything) as the env fragment.

The simulators live on the host, one Python object per parallel environment; the fragment's state
on the device is only a handle to them plus the observation and episode statistics. How they
are stepped follows the fusion mode, with no change to the algorithm:

* split modes (``eager``, ``step``): the env step is not compiled; it runs in Python between the
  compiled policy calls, as most frameworks do;
* fused modes (``fragment``, ``iteration``, ``scan``): the compiled program calls back to the host
  through an ordered ``jax.experimental.io_callback``, once per step for the whole batch.

What that costs: every step is a host round trip. The actions are copied device→host, the host
loops over the environments in Python, and the results are copied back; in a fused program the
device waits for the callback to return. A host simulator therefore caps throughput at the
simulator's own speed plus ~tens of µs of callback overhead per step, and a fused program gains
little over ``step`` mode. Use it for simulators that only exist on the host; write JAX
environments for speed.

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
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from jaxrl_fdg.core.env_fragment import batched_env_fragment
from jaxrl_fdg.core.fragment import Fragment
from jaxrl_fdg.envs.base import TimeStep
from jaxrl_fdg.envs.errors import UnknownEnvironmentError
from jaxrl_fdg.envs.spaces import Box, Discrete, Space

PREFIX = "gym/"

_SIMULATORS: dict[int, list[Any]] = {}  # handle -> the run's environments
_HANDLES = itertools.count(1)
_LOCK = threading.Lock()


class HostSimulator(NamedTuple):
    """A factory of host environments and the spaces of one of them."""

    name: str
    make: Callable[[], Any]
    observation_space: Space
    action_space: Space

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
    spaces = _space(probe.observation_space), _space(probe.action_space)
    probe.close()
    return HostSimulator(PREFIX + env_id, lambda: gymnasium.make(env_id, **kwargs), *spaces)


def _space(space: Any) -> Space:
    import gymnasium

    if isinstance(space, gymnasium.spaces.Discrete):
        return Discrete(int(space.n))
    if isinstance(space, gymnasium.spaces.Box):
        return Box(
            np.asarray(space.low, np.float32), np.asarray(space.high, np.float32), space.shape
        )
    raise ValueError(f"unsupported gymnasium space {space!r} (supported: Discrete, Box)")


def host_env_fragment(simulator: HostSimulator, num_envs: int, name: str = "env") -> Fragment:
    """``num_envs`` host environments as an env fragment (same edges as the JAX env fragment;
    the state's ``env`` field holds the handle of this run's simulators)."""
    obs_space = simulator.observation_space
    obs_shape = (num_envs, *obs_space.shape)
    obs_struct = jax.ShapeDtypeStruct(obs_shape, jnp.float32)
    batch = (num_envs,)

    def host_reset(seed):
        envs = [simulator.make() for _ in range(num_envs)]
        with _LOCK:
            handle = next(_HANDLES)
            _SIMULATORS[handle] = envs
        obs = [env.reset(seed=int(seed) + i)[0] for i, env in enumerate(envs)]
        return np.int32(handle), np.asarray(obs, np.float32).reshape(obs_shape)

    def host_step(handle, actions):
        return step_simulators(simulator, handle, actions)

    def init(key):
        seed = jax.random.randint(key, (), 0, 2**30)
        return io_callback(
            host_reset, (jax.ShapeDtypeStruct((), jnp.int32), obs_struct), seed, ordered=True
        )

    def step(handle, action, key):
        del key  # the simulators keep their own random streams, seeded at init
        results = (
            obs_struct,
            jax.ShapeDtypeStruct(batch, jnp.float32),
            jax.ShapeDtypeStruct(batch, jnp.bool_),
            jax.ShapeDtypeStruct(batch, jnp.bool_),
            obs_struct,
        )
        obs, reward, terminated, truncated, final = io_callback(
            host_step, results, handle, action, ordered=True
        )
        return handle, TimeStep(obs, reward, terminated, truncated, final)

    return batched_env_fragment(name, num_envs, init, step, placement="host")


def step_simulators(
    simulator: HostSimulator, handle: Any, actions: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One step of the environments behind ``handle`` on the host, in Python.

    Returns numpy arrays ``(observation, reward, terminated, truncated, final observation)`` of
    ``[B, ...]``; an environment whose episode ended is reset in the same step (``observation`` is
    the new episode's first, ``final observation`` the ended one's last). The env fragment calls
    this through an ``io_callback``; a plan that steps the simulators itself (the ``host_env``
    placement) calls it directly, so both compute the same step.
    """
    envs = _SIMULATORS[int(handle)]
    batch = (len(envs),)
    obs_shape = (*batch, *simulator.observation_space.shape)
    actions = np.asarray(actions)
    if isinstance(simulator.action_space, Discrete):
        actions = actions.astype(np.int64)
    out_obs, final = np.empty(obs_shape, np.float32), np.empty(obs_shape, np.float32)
    rewards = np.empty(batch, np.float32)
    terminated, truncated = np.empty(batch, np.bool_), np.empty(batch, np.bool_)
    for i, env in enumerate(envs):
        obs, rewards[i], terminated[i], truncated[i], _ = env.step(actions[i])
        final[i] = obs
        out_obs[i] = env.reset()[0] if terminated[i] or truncated[i] else obs
    return out_obs, rewards, terminated, truncated, final


def close(handle: int) -> None:
    """Close and forget the environments behind ``handle`` (a run's simulators)."""
    with _LOCK:
        envs = _SIMULATORS.pop(int(handle), [])
    for env in envs:
        env.close()

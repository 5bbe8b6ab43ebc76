"""The runs :func:`jaxrl_fdg.envs.check.check_env` makes of a host simulator (``gym/<id>``,
``envpool/<id>``): a batch made from a seed, reset, and stepped with actions sampled from its
action space, twice. Nothing is traced: the checks of observations, rewards, flags, determinism
and the auto-reset read these runs; those of traced code are skipped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import numpy as np

from jaxrl_fdg import rng
from jaxrl_fdg.envs.base import TimeStep
from jaxrl_fdg.envs.check_probe import Failed, Rollout, describe_error, phase, sample_actions
from jaxrl_fdg.envs.host import HostSimulator


class HostProbe:
    """The runs of a :class:`~jaxrl_fdg.envs.host.HostSimulator`, made as checks ask for them."""

    host = True

    def __init__(self, simulator: HostSimulator, num_envs: int, steps: int, seed: int):
        self.simulator, self.num_envs, self.steps, self.seed = simulator, num_envs, steps, seed
        self.env = simulator
        self.observation_space = simulator.observation_space
        self.action_space = simulator.action_space
        self.max_steps = None
        self._made: dict[str, Any] = {}
        self.keys = rng.split(jax.random.key(seed), steps)

    @phase("reset", "the simulator")
    def rollout(self) -> Rollout:
        return self._run()

    @phase("determinism", "the simulator, run a second time,")
    def rollout_again(self) -> Rollout:
        return self._run()

    @phase("actions", "sampling actions")
    def actions(self) -> np.ndarray:
        """Every step's actions, ``[T, B, ...]``."""
        space, num = self.action_space, self.num_envs
        return np.asarray(jax.vmap(lambda key: sample_actions(space, key, num))(self.keys))

    def _run(self) -> Rollout:
        try:
            batch = self.simulator.make_batch(self.num_envs, self.seed)
        except Exception as error:
            raise Failed("reset", f"make_batch raised {describe_error(error)}") from None
        try:
            try:
                first = np.asarray(batch.reset())
            except Exception as error:
                raise Failed("reset", f"reset raised {describe_error(error)}") from None
            records = []
            for actions in self.actions:
                try:
                    batch.send(actions)
                    records.append(tuple(np.asarray(x) for x in batch.recv()))
                except Exception as error:
                    message = f"a step of sampled actions raised {describe_error(error)}"
                    raise Failed("actions", message) from None
        finally:
            batch.close()
        observation, reward, terminated, truncated, final = (
            np.stack(x) for x in zip(*records, strict=True)
        )
        zeros = np.zeros(self.num_envs)
        reset = TimeStep(first, zeros.astype(np.float32), zeros > 0, zeros > 0, first, {})
        steps = TimeStep(observation, reward, terminated, truncated, final, {})
        return Rollout(reset, self.actions, steps, None, None, None)

    @property
    def reset_observations(self) -> Any:
        """What an episode may restart from: the first observations."""
        return self.rollout.reset.observation

    def observed(self) -> Iterator[tuple[str, Any, tuple[int, ...]]]:
        """``(what, observation, batch axes)`` of every observation to hold against the space."""
        run, B = self.rollout, self.num_envs
        yield "observation at reset", run.reset.observation, (B,)
        yield "observation after a step", run.steps.observation, (len(run.steps.reward), B)
        yield "final_observation", run.steps.final_observation, (len(run.steps.reward), B)

"""Placement ``single``: every fragment on one device, the default."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxrl_fdg.core.algorithm import AlgorithmSpec
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.policies.base import BasePlacement, register

if TYPE_CHECKING:  # types only: config and envs sit above policies
    from jaxrl_fdg.config import Resolved, TrainConfig
    from jaxrl_fdg.envs import Environment
    from jaxrl_fdg.envs.host import HostSimulator


class Single(BasePlacement):
    name = "single"
    summary = "every fragment on one device (a JAX env, or host simulators via callbacks)"

    def check(
        self, config: TrainConfig, env: Environment | HostSimulator, spec: AlgorithmSpec
    ) -> None:
        super().check(config, env, spec)
        if config.devices != 1:
            raise ConfigError(
                f"devices = {config.devices} needs placement 'data_parallel' (placement "
                "'single' runs on one device)"
            )

    def compiles_from_shapes(self, resolved: Resolved) -> bool:
        # Host simulators keep state outside JAX: their arrays exist only once init has run.
        return not resolved.env.on_host


SINGLE = register(Single())

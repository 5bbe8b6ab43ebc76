"""Placement ``single``: every fragment on one device, the default."""

from __future__ import annotations

from jaxrl_fdg.policies.base import BasePlacement, Request, Supports, register


class Single(BasePlacement):
    name = "single"
    summary = "every fragment on one device (a JAX env, or host simulators via callbacks)"
    supports = Supports(policy_lags=(0, 1), lanes=True)

    def compiles_from_shapes(self, request: Request) -> bool:
        # Host simulators keep state outside JAX: their arrays exist only once init has run.
        return not request.env_on_host


SINGLE = register(Single())

"""``check_env``: step an environment through the framework's contracts and say what it breaks.

:func:`jaxrl_fdg.envs.contracts.check_reset`, which every run makes, looks at shapes only. This
checker runs the environment: it resets and steps a few environments for a few hundred steps with
actions sampled from the action space (once eagerly, op by op, and once under one ``jax.jit`` of
``step_batch``), and checks, each under its own name (:data:`CHECKS`), what the environment's own
code could get wrong: observations unlike their space or outside its bounds, rewards and flags of
the wrong type, NaNs, a state whose types change from ``reset_env`` to ``step_env``, randomness
not drawn from the key, code that does not compile or gives other numbers compiled, an
auto-reset that keeps the old episode, a time limit of its own in ``step_env``, an action mask
with no legal action, an info that changes shape. Each problem is one line that says how to fix
it. What the base class guarantees (the time limit, the auto-reset) is checked as it is observed.

A host simulator (``gym/<id>``, ``envpool/<id>``) has no JAX state, params or trace: its
observations are checked against its spaces and bounds, its rewards and flags, NaNs, determinism
from a seed and its auto-reset; the checks of traced code are skipped, and say so.

>>> report = check_env("CartPole-v1")  # doctest: +SKIP
>>> report.ok, report.problems  # doctest: +SKIP
(True, ())
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

from jaxrl_fdg.envs import check_rules, check_traced, host, registry
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.check_host import HostProbe
from jaxrl_fdg.envs.check_probe import Failed, JaxProbe, Skip, describe_error
from jaxrl_fdg.envs.multi_agent import JointView, is_multi_agent

__all__ = ["CHECKS", "Problem", "Report", "check_env", "check_sizes"]

CHECKS: dict[str, str] = {
    "reset": "reset_env and reset_batch run",
    "spaces": "observations match observation_space in structure, shape and dtype",
    "bounds": "observations lie inside their Box bounds and Discrete ranges",
    "actions": "actions sampled from action_space are accepted",
    "step_outputs": "reward a float scalar and terminated a bool scalar per environment",
    "state": "step_env and auto_reset_env keep reset_env's state types",
    "finite": "no NaN or Inf in observations, rewards or info",
    "determinism": "the same key gives the same trajectory, bit for bit",
    "jit": "jax.jit(env.step) compiles and agrees with eager env.step",
    "vmap": "step_batch under jax.jit, and jax.vmap(env.step), agree with eager step_batch",
    "auto_reset": "an ended episode restarts: a new observation, the final one kept, counter 0",
    "time_limit": "truncated exactly when an episode reaches params.max_steps",
    "termination": "step_env does not end episodes at the time limit itself",
    "action_mask": "bool [n] over the actions, at least one legal in every state",
    "info": "info_env keeps its keys, shapes and dtypes from reset to every step",
}
"""Every check, in the order run and reported, with what it checks."""

_RULES: dict[str, Callable[[Any], list[str]]] = {
    "reset": check_traced.reset,
    "spaces": check_rules.spaces_,
    "bounds": check_rules.bounds,
    "actions": check_rules.actions,
    "step_outputs": check_rules.step_outputs,
    "state": check_traced.state,
    "finite": check_rules.finite,
    "determinism": check_rules.determinism,
    "jit": check_traced.jit,
    "vmap": check_traced.vmap,
    "auto_reset": check_rules.auto_reset,
    "time_limit": check_rules.time_limit,
    "termination": check_rules.termination,
    "action_mask": check_traced.action_mask,
    "info": check_traced.info,
}
MAX_STEPS = 100_000
MAX_ENVS = 4096
MAX_ENV_STEPS = 1_000_000  # steps × num_envs: the check keeps every step's data on the host
SEED_MAX = 2**32 - 1  # keys are made from 32 bits of the seed


_HOST_SKIPS = ("state", "jit", "vmap", "time_limit", "termination", "action_mask", "info")
_HOST_WHY = "a host simulator: stepped by its own library outside JAX, nothing here is traced"


class Problem(NamedTuple):
    """One broken contract: the check that found it and a one-line message with the fix."""

    check: str
    message: str


@dataclasses.dataclass(frozen=True)
class Report:
    """What :func:`check_env` found: the problems, and the checks that passed or were skipped
    (with why: nothing to check, or a failure elsewhere kept them from running)."""

    env: str
    problems: tuple[Problem, ...]
    passed: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """No check found a problem (skipped checks do not count)."""
        return not self.problems

    @property
    def failed(self) -> tuple[str, ...]:
        """The checks that found a problem, in the order of :data:`CHECKS`."""
        found = {p.check for p in self.problems}
        return tuple(name for name in CHECKS if name in found)

    def __str__(self) -> str:
        """One line per check, ``pass``, ``FAIL`` (each further problem of the check on a line
        of its own below) or ``skip``, then a summary line."""
        skipped = dict(self.skipped)
        lines = []
        for name, what in CHECKS.items():
            messages = [p.message for p in self.problems if p.check == name]
            if messages:
                lines.append(f"FAIL  {name:<13} {messages[0]}")
                lines += [f"      {'':<13} {m}" for m in messages[1:]]
            elif name in skipped:
                lines.append(f"skip  {name:<13} {skipped[name]}")
            elif name in self.passed:
                lines.append(f"pass  {name:<13} {what}")
        ran = len(self.passed) + len(self.failed)
        if self.ok:
            summary = f"{self.env}: all {ran} checks passed"
        else:
            summary = f"{self.env}: {len(self.failed)} of {ran} checks failed"
            summary += f" ({', '.join(self.failed)})"
        if skipped:
            summary += f", {len(skipped)} skipped"
        return "\n".join([*lines, summary])


def check_env(
    env_or_name: Any,
    params: Any = None,
    *,
    seed: int = 0,
    steps: int = 200,
    num_envs: int = 4,
) -> Report:
    """Step an environment through the framework's contracts; a :class:`Report` of the
    problems found, each one line under the name of the check (:data:`CHECKS`) that found it.

    Args:
      env_or_name: an :class:`~jaxrl_fdg.envs.Environment`, a host simulator, or a name
        ``envs.make`` builds (``"CartPole-v1"``, ``"gymnax/Catch-bsuite"``, ``"walk.py:Walk-v0"``,
        ``"gym/CartPole-v1"``).
      params: the environment's params (default: those ``envs.make`` returns, or the
        environment's ``default_params``).
      seed: the seed of every key the check draws.
      steps: steps of the compiled rollout (the eager runs take 3).
      num_envs: environments stepped side by side.

    The environment's own errors become problems; what cannot be checked is skipped, and the
    report says why. Runs in seconds on classic-control sizes: one compile of ``step_batch``, one
    of ``env.step``.

    Raises:
      ValueError: ``steps``, ``num_envs`` or ``seed`` out of range (:func:`check_sizes`), or a
        name ``envs.make`` cannot build.
      TypeError: ``env_or_name`` is none of the above.
    """
    check_sizes(steps=steps, num_envs=num_envs, seed=seed)
    label = env_or_name if isinstance(env_or_name, str) else None
    if isinstance(env_or_name, str):
        env_or_name, made = registry.make(env_or_name)
        params = made if params is None else params
    if isinstance(env_or_name, host.HostSimulator):
        probe: Any = HostProbe(env_or_name, num_envs, steps, seed)
        skips = dict.fromkeys(_HOST_SKIPS, _HOST_WHY)
    elif isinstance(env_or_name, Environment):
        params = env_or_name.default_params if params is None else params
        if is_multi_agent(env_or_name):  # a game of N agents, checked with its joint spaces
            env_or_name = JointView(env_or_name)
        probe, skips = JaxProbe(env_or_name, params, num_envs, steps, seed), {}
    else:
        raise TypeError(
            "check_env takes an Environment, a host simulator or an environment's name, got "
            f"{type(env_or_name).__name__}"
        )
    return _run(label or env_or_name.name, probe, skips)


def check_sizes(*, steps: int, num_envs: int, seed: int) -> None:
    """Raise a ValueError naming ``steps``, ``num_envs`` or ``seed`` where it is not an integer
    in its range: ``1..MAX_STEPS``, ``1..MAX_ENVS``, ``0..SEED_MAX``, or where ``steps ×
    num_envs`` exceeds ``MAX_ENV_STEPS``."""
    for name, value, low, high in (
        ("steps", steps, 1, MAX_STEPS),
        ("num_envs", num_envs, 1, MAX_ENVS),
        ("seed", seed, 0, SEED_MAX),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be an integer in [{low}, {high:,}], got {value!r}")
    if steps * num_envs > MAX_ENV_STEPS:
        raise ValueError(
            f"steps × num_envs must be at most {MAX_ENV_STEPS:,} (every step is kept to be "
            f"checked), got {steps:,} × {num_envs:,}"
        )


def _run(label: str, probe: Any, skips: dict[str, str]) -> Report:
    """Every check on ``probe``: a problem for each message a check returns, or for the failure
    of a step it owns (:class:`Failed`); a skip where it has nothing to check or what it needs
    failed in another check."""
    problems, passed, skipped = [], [], dict(skips)
    for name, rule in _RULES.items():
        if name in skipped:
            continue
        try:
            found = rule(probe)
        except Skip as why:
            skipped[name] = str(why)
            continue
        except Failed as failure:
            if failure.owner != name:
                skipped[name] = f"cannot run: the {failure.owner} check failed"
                continue
            found = [failure.message]
        except Exception as error:  # the environment's code, raising where a check calls it
            found = [f"raised {describe_error(error)}"]
        problems += [Problem(name, message) for message in dict.fromkeys(found)]
        if not found:
            passed.append(name)
    return Report(label, tuple(problems), tuple(passed), tuple(skipped.items()))

"""The checks of :func:`jaxrl_fdg.envs.check.check_env` that only a JAX environment has: its
reset runs, its state keeps its types, it compiles and batches to the same numbers as it runs
eagerly, and its action mask and info keep their contracts.

Each takes the probe (:class:`~jaxrl_fdg.envs.check_probe.JaxProbe`) and returns its problems,
one line each with the fix; it raises :class:`Skip` where there is nothing to check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.base import ACTION_MASK, NEXT_ACTION_MASK
from jaxrl_fdg.envs.check_probe import (
    Failed,
    Skip,
    describe_error,
    first_difference,
    first_of,
    type_difference,
)
from jaxrl_fdg.envs.check_rules import SPACES, when

_FROZEN = (
    "a value fixed when traced (a Python or NumPy random number, a counter on the environment "
    "object, a Python branch on an array's value): compute it from the key and the state"
)


def reset(probe: Any) -> list[str]:
    """``reset_env`` and ``reset_batch`` run (a host simulator: it is made and reset)."""
    if probe.host:
        probe.rollout  # noqa: B018 (Failed reports what raised)
    else:
        probe.raw_reset, probe.reset  # noqa: B018
    return []


def _traced(probe: Any) -> tuple:
    """The types (``ShapeDtypeStruct``\\ s) of ``reset_env``'s, ``step_env``'s and
    ``auto_reset_env``'s results, traced one after the other."""
    env, params = probe.env, probe.params
    key = jax.random.key(0)
    first = jax.eval_shape(lambda k: env.reset_env(k, params), key)
    action = jax.eval_shape(probe.action_space.sample, key)
    step = jax.eval_shape(lambda k, s, a: env.step_env(k, s, a, params), key, first[0], action)
    again = jax.eval_shape(lambda k, s: env.auto_reset_env(k, s, params), key, step[0])
    return first, step, again


def state(probe: Any) -> list[str]:
    """``step_env`` and ``auto_reset_env`` return a state of ``reset_env``'s structure, shapes
    and dtypes (``lax.cond`` in the auto-reset and a compiled rollout's loop need them)."""
    probe.reset  # noqa: B018
    if not isinstance(probe.action_space, SPACES):
        raise Skip("action_space is not a space (see spaces)")
    try:
        first, step, again = _traced(probe)
    except Exception as error:
        raise Skip(f"cannot be traced (see jit): {describe_error(error)}") from None
    problems = []
    for what, (state_, _obs) in (("step_env", step[:2]), ("auto_reset_env", again)):
        found = type_difference(first[0], state_)
        if found is None:
            continue
        path, reset_type, its_type = found
        where = f"state{path}" if path else "state"
        problems.append(
            f"{what}'s {where} is {its_type}, reset_env's {reset_type}: return the same "
            "structure, shapes and dtypes from both (cast with jnp.asarray(x, dtype))"
        )
    return problems


def _single(probe: Any) -> list[tuple]:
    """Eager ``env.step`` of the first environment: ``(key, state, action, result)`` for each
    step of the first eager run."""
    run, out = probe.eager, []
    state_ = first_of(run[0][1])
    for t in range(probe.eager_steps):
        action = first_of(run[t + 1][0])
        result = probe.env.step(probe.keys[t], state_, action, probe.params)
        out.append((probe.keys[t], state_, action, result))
        state_ = result[0]
    return out


def jit(probe: Any) -> list[str]:
    """``jax.jit(env.step)`` compiles, and agrees with eager ``env.step`` step by step."""
    env, params = probe.env, probe.params
    try:
        single = _single(probe)
    except Failed:
        raise
    except Exception as error:
        return [f"eager env.step raised {describe_error(error)}"]
    step = jax.jit(lambda key, s, a: env.step(key, s, a, params))
    for t, (key, state_, action, eager) in enumerate(single):
        try:
            compiled = step(key, state_, action)
        except Exception as error:
            return [f"jax.jit(env.step) raised {describe_error(error)}"]
        found = first_difference(_named(eager), _named(compiled), exact=False)
        if found:
            return [
                f"jax.jit(env.step) differs from eager env.step at step {t + 1} in {found}: "
                + _FROZEN
            ]
    return []


def _named(result: tuple) -> dict[str, Any]:
    return dict(zip(("actions", "state", "timestep")[-len(result) :], result, strict=True))


def vmap(probe: Any) -> list[str]:
    """``step_batch`` under ``jax.jit`` agrees with eager ``step_batch`` from the same state and
    key, and ``jax.vmap(env.step)`` traces to a batch of the space's shapes."""
    run, step = probe.eager, probe.jit_step
    for t in range(probe.eager_steps):
        _, state_, timestep = run[t]
        compiled = step(probe.keys[t], state_, probe.mask(timestep))
        found = first_difference(_named(run[t + 1]), _named(compiled), exact=False)
        if found:
            return [
                f"jax.jit(step_batch) differs from eager step_batch at step {t + 1} in {found}: "
                f"{_FROZEN}"
            ]
    env, params, B = probe.env, probe.params, probe.num_envs
    state_, actions = run[0][1], run[1][0]
    keys = jax.random.split(probe.keys[0], B)
    try:
        shapes = jax.eval_shape(
            jax.vmap(lambda k, s, a: env.step(k, s, a, params)), keys, state_, actions
        )
    except Exception as error:
        return [f"jax.vmap(env.step) raised {describe_error(error)}"]
    found = type_difference(run[1][2], shapes[1])
    if found:
        path, batched, vmapped = found
        return [f"jax.vmap(env.step) gives timestep{path} {vmapped}, step_batch {batched}"]
    return []


def action_mask(probe: Any) -> list[str]:
    """A mask of bool ``[n]`` over a Discrete space's actions, at least one legal in every
    state the rollout reached, and, where no episode ended, the same at the observation to act
    on as at the one reached."""
    env = probe.env
    if not env.has_action_mask:
        raise Skip("no action mask (action_mask is not overridden)")
    space = probe.action_space
    if not isinstance(space, spaces.Discrete):
        return [f"an action mask needs a Discrete action space, got {spaces.describe(space)}"]
    mask = np.asarray(env.action_mask(probe.raw_reset[0], probe.params))
    if mask.shape != (space.n,) or mask.dtype != np.bool_:
        return [
            f"action_mask returns {mask.dtype}{list(mask.shape)}, must be bool[{space.n}] (a flag "
            "per action): return a comparison, or jnp.asarray(mask, bool)"
        ]
    run, problems = probe.rollout, []
    info = run.steps.info
    for what, masks, offset in (
        (ACTION_MASK, np.concatenate([run.reset.info[ACTION_MASK][None], info[ACTION_MASK]]), 0),
        (NEXT_ACTION_MASK, info[NEXT_ACTION_MASK], 1),
    ):
        none = ~masks.any(axis=-1)
        if none.any():
            t, i = np.argwhere(none)[0]
            problems.append(
                f"no legal action in info[{what!r}] {when(t + offset)} (env {i}): action_mask "
                "must leave at least one action legal in every state; end the episode where "
                "none is"
            )
            break
    going = ~(run.steps.terminated | run.steps.truncated)
    if (info[ACTION_MASK] != info[NEXT_ACTION_MASK]).any(axis=-1)[going].any():
        problems.append(
            f"info[{ACTION_MASK!r}] and info[{NEXT_ACTION_MASK!r}] differ on a step that ended "
            "no episode: both are the mask of the same state"
        )
    return problems


def info(probe: Any) -> list[str]:
    """``info_env`` returns a dict of numeric arrays of fixed keys, shapes and dtypes: at reset,
    on every step, traced and eager."""
    env = probe.env
    if not env.has_info:
        raise Skip("no info (info_env is not overridden)")
    raw = env.info_env(probe.raw_reset[0], probe.params)
    if not isinstance(raw, Mapping):
        return [f"info_env returns a {type(raw).__name__}: return a dict of arrays"]
    problems = []
    clash = sorted(set(raw) & {ACTION_MASK, NEXT_ACTION_MASK})
    if clash:
        problems.append(f"info_env's keys {clash} are the base class's (the masks): rename them")
    for name, value in raw.items():
        dtype = np.asarray(value).dtype
        if not isinstance(name, str) or dtype.kind not in "biuf":
            problems.append(
                f"info_env's {name!r} is {dtype}: info is a dict of str to arrays of numbers "
                "(a run averages them into its metrics)"
            )
    run = probe.eager
    first = _own(run[0][2].info)
    for t, (_, _, timestep) in enumerate(run[1:], start=1):
        found = type_difference(first, _own(timestep.info))
        if found:
            path, at_reset, then = found
            problems.append(
                f"info{path} is {then} {when(t)} but {at_reset} at reset: keep every info key at "
                "a fixed shape and dtype (pad to a largest size)"
                if path
                else f"info's keys change {when(t)}: keep the same keys on every step"
            )
            break
    return problems


def _own(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in (ACTION_MASK, NEXT_ACTION_MASK)}

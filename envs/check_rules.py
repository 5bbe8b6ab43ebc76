"""The checks of :func:`jaxrl_fdg.envs.check.check_env` that read what an environment returned,
JAX environment or host simulator alike: observations against their space (structure, shape,
dtype, bounds), actions, rewards and flags, NaNs, determinism, the auto-reset and the time limit.

Each takes the probe (:mod:`jaxrl_fdg.envs.check_probe`) and returns its problems, one line each
with the fix; it raises :class:`Skip` where there is nothing to check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.check_probe import Failed, Rollout, Skip, first_difference, path_name

SPACES = (spaces.Discrete, spaces.MultiDiscrete, spaces.Box, spaces.Dict, spaces.Tuple)


def leaf_pairs(space: Any, value: Any, path: str = "") -> list[tuple[str, Any, Any]] | None:
    """``(path, leaf space, array)`` for every array ``space`` describes, or None where the
    structure of ``value`` departs from it."""
    if isinstance(space, spaces.Dict):
        if not isinstance(value, Mapping) or set(value) != set(space.spaces):
            return None
        found = [leaf_pairs(space.spaces[k], value[k], f"{path}[{k!r}]") for k in sorted(value)]
        return None if None in found else [pair for pairs in found for pair in pairs]
    if isinstance(space, spaces.Tuple):
        if not isinstance(value, tuple) or len(value) != len(space.spaces):
            return None
        found = [
            leaf_pairs(s, v, f"{path}[{i}]")
            for i, (s, v) in enumerate(zip(space.spaces, value, strict=True))
        ]
        return None if None in found else [pair for pairs in found for pair in pairs]
    if isinstance(value, (Mapping, tuple, list)):
        return None
    return [(path, space, value)]


def _observation_space(probe: Any) -> Any:
    space = probe.observation_space
    if not isinstance(space, SPACES):
        raise Skip("observation_space is not a space (see spaces)")
    return space


def when(t: int) -> str:
    """Row ``t`` of observations that start with the reset's: ``at reset``, ``after step t``."""
    return "at reset" if t == 0 else f"after step {t}"


def spaces_(probe: Any) -> list[str]:
    """Observations match ``observation_space`` in structure, shape and dtype, as ``reset_env``
    and ``step_env`` return them and as a rollout sees them."""
    problems = []
    for what, space in (
        ("observation_space", probe.observation_space),
        ("action_space", probe.action_space),
    ):
        if not isinstance(space, SPACES):
            problems.append(
                f"{what}(params) returns a {type(space).__name__}, not a space: return a Box, "
                "Discrete, MultiDiscrete, Dict or Tuple of jaxrl_fdg.envs.spaces"
            )
    if problems:
        return problems
    space, seen = probe.observation_space, set()
    for what, value, batch in probe.observed():
        pairs = leaf_pairs(space, value)
        if pairs is None:
            found = spaces.mismatch(space, value, batch, what)
            problems.append(
                f"{found}: make observation_space ({spaces.describe(space)}) describe what "
                "reset_env and step_env return"
            )
            break
        for path, leaf, x in pairs:
            message = _leaf_mismatch(f"{what}{path}", leaf, x, len(batch))
            if message and path not in seen:
                seen.add(path)
                problems.append(message)
    return problems


def _leaf_mismatch(what: str, leaf: Any, x: Any, batch: int) -> str | None:
    shape, want = tuple(np.shape(x)[batch:]), tuple(leaf.shape)
    kind = type(leaf).__name__
    if shape != want:
        return (
            f"{what} has shape {shape} but observation_space says {want}: return shape {want} "
            f"from reset_env/step_env or declare {kind}(..., shape={shape})"
        )
    dtype, declared = jnp.dtype(np.asarray(x).dtype), jnp.dtype(leaf.dtype)
    if dtype != declared:
        return (
            f"{what} dtype {dtype} but observation_space says {declared}: cast in "
            f"reset_env/step_env (jnp.asarray(obs, jnp.{declared})) or declare "
            f"{kind}(..., dtype={dtype})"
        )
    return None


def _observations(run: Rollout) -> Iterator[tuple[str, Any, int]]:
    """``(what, observations [N, B, ...], row offset)``: the reset's and the steps' (row 0 the
    reset), then the final ones (row 0 after step 1)."""
    steps = run.steps
    both = jax.tree.map(
        lambda a, b: np.concatenate([a[None], b]), run.reset.observation, steps.observation
    )
    yield "observation", both, 0
    yield "final_observation", steps.final_observation, 1


def bounds(probe: Any) -> list[str]:
    """Observations of a rollout lie inside their Box bounds and Discrete ranges."""
    space, problems = _observation_space(probe), []
    for what, value, offset in _observations(probe.rollout):
        for path, leaf, x in leaf_pairs(space, value) or ():
            if np.shape(x)[2:] == tuple(leaf.shape):
                problems += _outside(f"{what}{path}", leaf, np.asarray(x), offset)
    return problems


def _outside(what: str, leaf: Any, x: np.ndarray, offset: int) -> list[str]:
    if isinstance(leaf, spaces.Box):
        low = np.broadcast_to(np.asarray(leaf.low, np.float64), leaf.shape)
        high = np.broadcast_to(np.asarray(leaf.high, np.float64), leaf.shape)
        bad = (x < low) | (x > high)
        declared = lambda at: f"Box bounds [{low[at]:.6g}, {high[at]:.6g}]"  # noqa: E731
        fix = "clip it in reset_env/step_env or widen observation_space's low and high"
    elif isinstance(leaf, spaces.Discrete | spaces.MultiDiscrete):
        n = np.broadcast_to(np.asarray(getattr(leaf, "n", getattr(leaf, "nvec", 0))), leaf.shape)
        bad = (x < 0) | (x >= n) | (x != np.round(x))
        declared = lambda at: f"{spaces.describe(leaf)} (0 to {n[at] - 1})"  # noqa: E731
        fix = "keep it in range in reset_env/step_env or declare a larger space"
    else:
        return []
    if not bad.any():
        return []
    t, env, *at = np.argwhere(bad)[0]
    at = tuple(at)
    element = f"{what}[{', '.join(map(str, at))}]" if at else what
    return [
        f"{element} = {x[(t, env, *at)]:.6g} {when(t + offset)} (env {env}) is outside "
        f"{declared(at)}: {fix}"
    ]


def actions(probe: Any) -> list[str]:
    """Actions sampled from ``action_space`` are of its shape and dtype, and the environment
    steps with them (eagerly, and compiled in the rollout)."""
    space = probe.action_space
    if not isinstance(space, SPACES):
        raise Skip("action_space is not a space (see spaces)")
    sample = jax.eval_shape(space.sample, jax.random.key(0))
    found = spaces.mismatch(space, sample, what="action")
    problems = [f"action_space.sample gives an {found}"] if found else []
    if not probe.host:
        probe.eager, probe.raw_step  # noqa: B018 (steps eagerly; Failed reports a step that raised)
    probe.rollout  # noqa: B018
    return problems


def step_outputs(probe: Any) -> list[str]:
    """A reward of a float dtype and a bool terminated, one of each per environment."""
    if probe.host:
        steps, problems = probe.rollout.steps, []
        for name, x, kind in (
            ("reward", steps.reward, "a float"),
            ("terminated", steps.terminated, "a bool"),
            ("truncated", steps.truncated, "a bool"),
        ):
            ok = np.issubdtype(x.dtype, np.floating if kind == "a float" else np.bool_)
            if x.shape[1:] != (probe.num_envs,) or not ok:
                problems.append(
                    f"the simulator's {name} is {x.dtype}{list(x.shape[1:])} a step: it must be "
                    f"{kind} per environment, [{probe.num_envs}]"
                )
        return problems
    _, _, reward, terminated = probe.raw_step
    problems = []
    for name, x, kind, fix in (
        ("reward", reward, np.floating, "jnp.asarray(reward, jnp.float32)"),
        ("terminated", terminated, np.bool_, "a comparison, or jnp.asarray(terminated, bool)"),
    ):
        x = jnp.asarray(x)
        if x.shape != ():
            problems.append(
                f"step_env's {name} has shape {x.shape}, must be a scalar () per environment: "
                f"return one value (reshape it, or take the element that is meant)"
            )
        if not np.issubdtype(x.dtype, kind):
            wanted = "float" if kind is np.floating else "bool"
            problems.append(
                f"step_env's {name} has dtype {x.dtype}, must be {wanted}: return {fix}"
            )
    return problems


def finite(probe: Any) -> list[str]:
    """No NaN or Inf in a rollout's observations, rewards or info."""
    run, problems = probe.rollout, []
    rewards = np.concatenate([run.reset.reward[None], run.steps.reward])
    values = [*_observations(run), ("reward", rewards, 0), ("info", run.steps.info, 1)]
    for what, tree, offset in values:
        for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]:
            x = np.asarray(x)
            if not np.issubdtype(x.dtype, np.inexact) or np.isfinite(x).all():
                continue
            t, env, *at = np.argwhere(~np.isfinite(x))[0]
            name = what + path_name(path, bare_root=False)
            element = f"{name}[{', '.join(map(str, at))}]" if at else name
            problems.append(
                f"{element} is {x[(t, env, *at)]} {when(t + offset)} (env {env}): find the "
                "operation in reset_env/step_env that makes it (a division by zero, the log or "
                "square root of a negative number, an overflow) and guard it"
            )
    return problems


def determinism(probe: Any) -> list[str]:
    """The same key (or seed) gives the same run twice, bit for bit."""
    if probe.host:
        first, again = probe.rollout, probe.rollout_again
        found = first_difference(first._asdict(), again._asdict())
        if found:
            return [
                f"two runs from seed {probe.seed} differ in {found}: the simulator must draw "
                "every random number from the seed it is reset with"
            ]
        return []
    first, again = probe.eager, probe.eager_again
    for t, (a, b) in enumerate(zip(first, again, strict=True)):
        names = ("actions", "state", "timestep")
        found = first_difference(dict(zip(names, a, strict=True)), dict(zip(names, b, strict=True)))
        if found:
            return [
                f"two runs from the same key differ {when(t)} in {found}: reset_env and "
                "step_env must draw every random number from their key (no Python random, "
                "NumPy RNG, clock or counter kept on the environment object)"
            ]
    return []


def _same_rows(a: Any, b: Any) -> np.ndarray:
    """``[T, B]``: whether two pytrees of ``[T, B, ...]`` arrays agree row by row."""
    rows = [
        np.all(np.asarray(x) == np.asarray(y), axis=tuple(range(2, np.ndim(x))))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    ]
    return np.logical_and.reduce(rows) if rows else np.ones((0, 0), bool)


def _is_reset(resets: Any, observation: Any) -> bool:
    """Whether ``observation`` is one of the reset observations ``resets`` (``[N, ...]``)."""
    rows = [
        np.all(r == o, axis=tuple(range(1, r.ndim)))
        for r, o in zip(jax.tree.leaves(resets), jax.tree.leaves(observation), strict=True)
    ]
    return bool(np.logical_and.reduce(rows).any())


def _ended_run(probe: Any) -> Rollout:
    """The rollout, if an episode ended in it, else the one with the time limit lowered."""
    run = probe.rollout
    if (run.steps.terminated | run.steps.truncated).any():
        return run
    if not probe.host:
        try:
            limited = probe.limit_rollout
        except (Skip, Failed):
            pass
        else:
            if (limited.steps.terminated | limited.steps.truncated).any():
                return limited
    T, B = run.steps.reward.shape[:2]
    raise Skip(
        f"no episode ended in {T} steps of {B} environments: raise --steps (or lower "
        "max_steps) to see one"
    )


def auto_reset(probe: Any) -> list[str]:
    """Where an episode ended the next observation is a new episode's, ``final_observation``
    the old one's last, and the step counter is back at 0; elsewhere the two observations are
    one."""
    run = _ended_run(probe)
    steps, problems = run.steps, []
    done = steps.terminated | steps.truncated
    same = _same_rows(steps.observation, steps.final_observation)
    if (~done & ~same).any():
        t, env = np.argwhere(~done & ~same)[0]
        problems.append(
            f"final_observation differs from observation after step {t + 1} (env {env}) though "
            "no episode ended: the final observation is the observation unless an episode ends"
        )
    resets = probe.reset_observations
    for t, env in np.argwhere(done & same):
        final = jax.tree.map(lambda x, at=(t, env): x[at], steps.final_observation)
        if not _is_reset(resets, final):
            problems.append(
                f"after the episode that ended at step {t + 1} (env {env}) the observation is "
                "still its final one: auto_reset_env must start a new episode (the state and "
                "observation of reset_env), not keep the state it is given"
            )
            break
    if run.time_after is not None:
        wrong = np.where(done, run.time_after != 0, run.time_after != run.time_before + 1)
        if wrong.any():
            t, env = np.argwhere(wrong)[0]
            problems.append(
                f"the step counter is {run.time_after[t, env]} after step {t + 1} (env {env}): "
                "it must restart at 0 when an episode ends and count up by one otherwise"
            )
    return problems


def _limit_runs(probe: Any) -> list[Rollout]:
    """The rollout, if an episode reached the time limit in it, else one with the limit lowered
    (or a skip that says why there is none)."""
    if probe.host:
        raise Skip("a host simulator's time limit is its own")
    if probe.max_steps is None:
        raise Failed(
            "time_limit",
            "params have no max_steps, the episode length at which "
            "truncated is raised: give them a max_steps field",
        )
    run = probe.rollout
    if (run.time_before + 1 >= run.max_steps).any():
        return [run]
    return [probe.limit_rollout]


def time_limit(probe: Any) -> list[str]:
    """``truncated`` exactly where an episode reaches ``params.max_steps``."""
    for run in _limit_runs(probe):
        reached = run.time_before + 1 >= run.max_steps
        wrong = reached != run.steps.truncated
        if wrong.any():
            t, env = np.argwhere(wrong)[0]
            return [
                f"truncated is {bool(run.steps.truncated[t, env])} at step "
                f"{run.time_before[t, env] + 1} of an episode with max_steps = {run.max_steps} "
                f"(env {env}): params.max_steps must be the int the time limit is"
            ]
        if not reached.any():
            raise Skip(f"no episode lasted max_steps = {run.max_steps} steps")
    return []


def termination(probe: Any) -> list[str]:
    """``step_env`` does not end episodes at the time limit itself: not every episode that
    reaches ``max_steps`` terminates there too."""
    for run in _limit_runs(probe):
        reached = run.time_before + 1 == run.max_steps
        count = int(reached.sum())
        if count < 2:
            raise Skip(f"{count} episode(s) reached max_steps = {run.max_steps}: too few to tell")
        if run.steps.terminated[reached].all():
            return [
                f"all {count} episodes that reached max_steps = {run.max_steps} also terminated "
                "on that step: step_env ends episodes at the time limit itself. Leave the limit "
                "to the base class (it raises truncated, and learners bootstrap from the final "
                "observation); terminated means a terminal state"
            ]
    return []

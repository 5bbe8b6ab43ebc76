"""What :func:`jaxrl_fdg.envs.check.check_env` runs an environment through, each made once, when a
check first needs it, and kept for the others: the reset, two eager runs of a few steps, the
compiled ``step_batch`` and its rollout, a rollout with the time limit lowered.

Making one may fail where the environment's code raises: the failure is a :class:`Failed` that
names the check that reports it (``reset`` for a reset that raises, ``actions`` for a step,
``vmap`` for a ``step_batch`` that does not compile); every other check that needed it is skipped.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import rng
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.base import ACTION_MASK, Environment, TimeStep
from jaxrl_fdg.errors import one_line

EAGER_STEPS = 3  # steps of each eager run: determinism, and what compiled code must agree with
EAGER_ROLLOUT = 32  # the rollout's length where step_batch does not compile
RESET_SAMPLE = 32  # reset observations an observation kept over an auto-reset is compared with
LIMIT_STEPS = 8  # the time limit set where no episode reaches its own within the rollout


class Skip(Exception):
    """Nothing for a check to check here; the message says why."""


class Failed(Exception):
    """Running the environment failed: ``owner`` is the check that reports ``message``; the
    other checks that needed the run are skipped."""

    def __init__(self, owner: str, message: str):
        super().__init__(message)
        self.owner, self.message = owner, message


def phase(owner: str, what: str) -> Callable[[Callable], property]:
    """A probe's property, computed once: its value, or what it raised, raised again on every
    read. An error of the environment's becomes a :class:`Failed` of ``owner``'s whose message
    starts with ``what``."""

    def decorate(make: Callable) -> property:
        name = make.__name__

        @functools.wraps(make)
        def get(self: Any) -> Any:
            if name not in self._made:
                try:
                    self._made[name] = (True, make(self))
                except (Failed, Skip) as stop:
                    self._made[name] = (False, stop)
                except Exception as error:
                    message = f"{what} raised {describe_error(error)}"
                    self._made[name] = (False, Failed(owner, message))
            made, value = self._made[name]
            if made:
                return value
            if isinstance(value, Skip):
                raise Skip(str(value))
            raise Failed(value.owner, value.message)

        return property(get)

    return decorate


_TRACED = (
    "TracerBoolConversionError",
    "ConcretizationTypeError",
    "TracerArrayConversionError",
    "TracerIntegerConversionError",
)


def describe_error(error: BaseException) -> str:
    """``Type: first line of the message``, with the fix for the errors of tracing."""
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    first = first if len(first) <= 200 else first[:197] + "..."
    text = f"{type(error).__name__}: {first}" if first else type(error).__name__
    if type(error).__name__ in _TRACED:
        text += (
            " (Python control flow, int() or NumPy on a traced array: use jnp.where, "
            "jax.lax.cond and jnp instead)"
        )
    elif "max_steps" in first:
        text += " (params must carry max_steps, the episode length at which truncated is raised)"
    return one_line(text)


# -- host copies and comparisons -----------------------------------------------------------------


def to_host(tree: Any) -> Any:
    """``tree`` as NumPy arrays (a random key as its data)."""

    def leaf(x: Any) -> np.ndarray:
        if hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    return jax.tree.map(leaf, tree)


def stack(records: list[Any]) -> Any:
    """Records of the same structure stacked leaf by leaf on a new leading axis."""
    return jax.tree.map(lambda *xs: np.stack(xs), *records)


def path_name(path: tuple, bare_root: bool = True) -> str:
    """A pytree path as it reads in code: ``timestep.observation['img']``, ``state.env[0]`` (a
    first dict key bare, as a name, where ``bare_root``)."""
    text = ""
    for i, key in enumerate(path):
        if isinstance(key, jax.tree_util.DictKey):
            text += str(key.key) if i == 0 and bare_root else f"[{key.key!r}]"
        elif isinstance(key, jax.tree_util.GetAttrKey):
            text += f".{key.name}"
        elif isinstance(key, jax.tree_util.SequenceKey):
            text += f"[{key.idx}]"
        else:
            text += str(key)
    return text


def _equal(x: np.ndarray, y: np.ndarray, exact: bool) -> bool:
    if not np.issubdtype(x.dtype, np.inexact):
        return bool(np.array_equal(x, y))
    if not np.array_equal(np.isnan(x), np.isnan(y)):
        return False
    x, y = np.nan_to_num(x), np.nan_to_num(y)
    return bool(np.array_equal(x, y) if exact else np.allclose(x, y, rtol=1e-4, atol=1e-5))


def first_difference(a: Any, b: Any, exact: bool = True) -> str | None:
    """Where two pytrees first differ (the path, and by how much), or None where they agree:
    bit for bit, or (``exact`` False) floats within a compiler's rounding."""
    (left, left_def), (right, right_def) = (
        jax.tree_util.tree_flatten_with_path(to_host(x)) for x in (a, b)
    )
    if left_def != right_def:
        return "the structure of what it returns"
    for (path, x), (_, y) in zip(left, right, strict=True):
        name = path_name(path)
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"{name} ({x.dtype}{list(x.shape)} against {y.dtype}{list(y.shape)})"
        if not _equal(x, y, exact):
            if np.issubdtype(x.dtype, np.floating):
                gap = np.nanmax(np.abs(x.astype(np.float64) - y.astype(np.float64)))
                return f"{name} (by up to {gap:.3g})"
            return name
    return None


def describe_type(x: Any) -> str:
    return f"{x.dtype}{list(np.shape(x))}"


def type_difference(a: Any, b: Any) -> tuple[str, str, str] | None:
    """``(path, a's type, b's type)`` of the first leaf whose shape or dtype differs between
    two pytrees of arrays or ``ShapeDtypeStruct``\\ s, or None; a path ``""`` where their
    structures differ."""
    (left, left_def), (right, right_def) = (jax.tree_util.tree_flatten_with_path(x) for x in (a, b))
    if left_def != right_def:
        return "", f"{len(left)} arrays as {left_def}", f"{len(right)} arrays as {right_def}"
    for (path, x), (_, y) in zip(left, right, strict=True):
        if np.shape(x) != np.shape(y) or x.dtype != y.dtype:
            return path_name(path), describe_type(x), describe_type(y)
    return None


# -- the runs --------------------------------------------------------------------------------------


class Rollout(NamedTuple):
    """Host copies of ``B`` environments stepped ``T`` times with sampled actions."""

    reset: TimeStep  # the first time step, [B, ...]
    actions: Any  # [T, B, ...]
    steps: TimeStep  # [T, B, ...]
    time_before: np.ndarray | None  # the step counter before each step, [T, B] (JAX only)
    time_after: np.ndarray | None  # and after it
    max_steps: int | None  # the time limit it ran under


def sample_actions(space: Any, key: jax.Array, num: int, mask: jax.Array | None = None) -> Any:
    """``num`` actions from ``space``; only legal ones where a mask ``[num, n]`` is given."""
    keys = rng.split(key, num)
    if mask is not None and isinstance(space, spaces.Discrete):
        logits = jnp.where(mask, 0.0, -jnp.inf)
        return jax.vmap(jax.random.categorical)(keys, logits).astype(space.dtype)
    return jax.vmap(space.sample)(keys)


def with_max_steps(params: Any, limit: int) -> Any | None:
    """``params`` with the time limit ``limit``, or None where no dataclass field holds it (a
    ``max_steps`` field, gymnax's ``max_steps_in_episode``, or one in a field's dataclass)."""
    new = _replace_limit(params, limit)
    try:
        return new if new is not None and int(np.asarray(new.max_steps)) == limit else None
    except (AttributeError, TypeError, ValueError):
        return None


def _replace_limit(params: Any, limit: int) -> Any | None:
    if not dataclasses.is_dataclass(params) or isinstance(params, type):
        return None
    fields = [f.name for f in dataclasses.fields(params)]
    for name in ("max_steps", "max_steps_in_episode"):
        if name in fields:
            return dataclasses.replace(params, **{name: limit})
    for name in fields:
        inner = _replace_limit(getattr(params, name), limit)
        if inner is not None:
            return dataclasses.replace(params, **{name: inner})
    return None


def first_of(tree: Any) -> Any:
    """The first environment of a batch."""
    return jax.tree.map(lambda x: x[0], tree)


class JaxProbe:
    """The runs of a JAX :class:`~jaxrl_fdg.envs.Environment`, made as checks ask for them."""

    host = False

    def __init__(self, env: Environment, params: Any, num_envs: int, steps: int, seed: int):
        self.env, self.params, self.num_envs, self.steps = env, params, num_envs, steps
        self.eager_steps = min(steps, EAGER_STEPS)
        self._made: dict[str, Any] = {}
        self.reset_key, step_key, self.other_key = rng.split(jax.random.key(seed), 3)
        self.keys = rng.split(step_key, steps)

    @phase("spaces", "observation_space(params)")
    def observation_space(self) -> Any:
        return self.env.observation_space(self.params)

    @phase("spaces", "action_space(params)")
    def action_space(self) -> Any:
        return self.env.action_space(self.params)

    @property
    def max_steps(self) -> int | None:
        try:
            return int(np.asarray(self.params.max_steps))
        except (AttributeError, TypeError, ValueError):
            return None

    def mask(self, timestep: TimeStep) -> jax.Array | None:
        """The legal actions at a time step's observation, or None: every action is legal."""
        return timestep.info[ACTION_MASK] if self.env.has_action_mask else None

    def batch_step(self, params: Any) -> Callable:
        """``(key, state, mask) -> (actions, state, timestep)``: sampled actions, one step."""
        env, num, space = self.env, self.num_envs, self.action_space

        def step(key: jax.Array, state: Any, mask: jax.Array | None) -> tuple:
            action_key, env_key = rng.split(key)
            actions = sample_actions(space, action_key, num, mask)
            return (actions, *env.step_batch(env_key, state, actions, params))

        return step

    @phase("reset", "reset_batch")
    def reset(self) -> tuple[Any, TimeStep]:
        return self.env.reset_batch(self.reset_key, self.num_envs, self.params)

    @phase("reset", "reset_env")
    def raw_reset(self) -> tuple[Any, Any]:
        return self.env.reset_env(rng.split(self.reset_key, self.num_envs)[0], self.params)

    def _eager_run(self, state: Any, timestep: TimeStep) -> list[tuple]:
        """``[(None, state, timestep)]`` of the reset, then ``(actions, state, timestep)`` of
        each eager step."""
        step, run = self.batch_step(self.params), [(None, state, timestep)]
        for t in range(self.eager_steps):
            run.append(step(self.keys[t], state, self.mask(timestep)))
            _, state, timestep = run[-1]
        return run

    @phase("actions", "step_batch with actions sampled from action_space")
    def eager(self) -> list[tuple]:
        return self._eager_run(*self.reset)

    @phase("determinism", "reset_batch and step_batch, run a second time,")
    def eager_again(self) -> list[tuple]:
        return self._eager_run(*self.env.reset_batch(self.reset_key, self.num_envs, self.params))

    @phase("actions", "step_env with an action sampled from action_space")
    def raw_step(self) -> tuple:
        state, _ = self.raw_reset
        action = first_of(self.eager[1][0])
        return self.env.step_env(self.keys[0], state, action, self.params)

    @phase("vmap", "jax.jit(step_batch)")
    def jit_step(self) -> Callable:
        step = jax.jit(self.batch_step(self.params))
        state, timestep = self.reset
        jax.block_until_ready(step(self.keys[0], state, self.mask(timestep)))
        return step

    @phase("actions", "step_batch with actions sampled from action_space")
    def rollout(self) -> Rollout:
        """``steps`` steps of the compiled ``step_batch`` (a few eager ones where it does not
        compile, which the vmap check reports)."""
        try:
            step, count = self.jit_step, self.steps
        except Failed:
            step, count = self.batch_step(self.params), min(self.steps, EAGER_ROLLOUT)
        return self._record(step, *self.reset, self.keys[:count], self.max_steps)

    def _record(self, step: Callable, state: Any, timestep: TimeStep, keys: Any, limit: Any):
        first, records = to_host(timestep), []
        for key in keys:
            before = state.time
            actions, state, timestep = step(key, state, self.mask(timestep))
            records.append(to_host((actions, before, state.time, timestep)))
        actions, before, after, steps = stack(records)
        return Rollout(first, actions, steps, before, after, limit)

    @phase("time_limit", "step_batch with max_steps lowered")
    def limit_rollout(self) -> Rollout:
        """A few eager steps with the time limit below every episode's length seen in the
        rollout, so that every episode reaches it."""
        main, limit = self.rollout, self.max_steps
        if limit is None:
            raise Skip("params.max_steps is not a number")
        lengths = (main.time_before + 1)[main.steps.terminated]
        limit = min(LIMIT_STEPS, limit, int(lengths.min()) - 1 if lengths.size else LIMIT_STEPS)
        if limit < 1:
            raise Skip("episodes terminate after one step: a time limit cannot be told apart")
        params = self.params if limit == self.max_steps else with_max_steps(self.params, limit)
        if params is None:
            raise Skip(
                f"no episode lasted params.max_steps = {self.max_steps} steps in "
                f"{self.steps} steps, and params have no max_steps field to lower: raise --steps"
            )
        state, timestep = self.env.reset_batch(self.reset_key, self.num_envs, params)
        keys = rng.split(self.other_key, limit + 1)
        return self._record(self.batch_step(params), state, timestep, keys, limit)

    @phase("auto_reset", "reset_batch")
    def reset_observations(self) -> Any:
        """Reset observations, ``[N, ...]``: what an episode may restart from."""
        _, timestep = self.env.reset_batch(self.other_key, RESET_SAMPLE, self.params)
        sample = to_host(timestep.observation)
        first = self.rollout.reset.observation
        return jax.tree.map(lambda a, b: np.concatenate([a, b]), sample, first)

    def observed(self) -> Iterator[tuple[str, Any, tuple[int, ...]]]:
        """``(what, observation, batch axes)`` of every observation to hold against the space:
        as ``reset_env`` and ``step_env`` return them, and as the rollout saw them."""
        B = self.num_envs
        yield "reset_env's observation", self.raw_reset[1], ()
        yield "observation at reset", self.reset[1].observation, (B,)
        for name in ("raw_step", "rollout"):
            try:
                made = getattr(self, name)
            except Failed:
                continue
            if name == "raw_step":
                yield "step_env's observation", made[1], ()
            else:
                batch = made.steps.reward.shape[:1] + (B,)
                yield "observation after a step", made.steps.observation, batch
                yield "final_observation", made.steps.final_observation, batch

"""The graph's ``env`` fragment: a vectorised :class:`~jaxrl_fdg.envs.Environment`, or a batch
of host simulators (:mod:`jaxrl_fdg.envs.host`), with running episode statistics."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from jaxrl_fdg.core.fragment import ApplyFn, Fragment, Role, Site, fragment
from jaxrl_fdg.core.names import (
    ACTION,
    EPISODE_LENGTH,
    EPISODE_RETURN,
    EPISODE_STEP,
    NEXT_OBSERVATION,
    OBSERVATION,
    REWARD,
    TERMINATED,
    TRUNCATED,
)
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.base import ACTION_MASK, NEXT_ACTION_MASK, EpisodeState, TimeStep
from jaxrl_fdg.errors import ConfigError

if TYPE_CHECKING:
    from jaxrl_fdg.envs.base import Environment
    from jaxrl_fdg.envs.host import HostSimulator

ENV_OUTPUTS = (
    REWARD,
    TERMINATED,
    TRUNCATED,
    NEXT_OBSERVATION,
    EPISODE_RETURN,
    EPISODE_LENGTH,
)


class EnvFragmentState(NamedTuple):
    """The simulator's state (batched environment state, or a host simulator's handle), the
    observation to act on, and running episode statistics.

    Shapes: ``observation`` ``[B, *obs_shape]`` (or a pytree of such arrays);
    ``episode_return``/``episode_length`` ``[B]``; ``action_mask`` bool ``[B, n]`` for an
    environment with an action mask, else None.
    """

    env: EpisodeState
    observation: Any
    episode_return: jax.Array
    episode_length: jax.Array
    action_mask: jax.Array | None = None


def env_fragment(env: Environment, params: Any, num_envs: int, name: str = "env") -> Fragment:
    """``num_envs`` copies of ``env`` stepped in lock-step, auto-resetting independently.

    ``apply`` reads edge ``action`` ``[B, ...]`` and writes the transition's ``reward``,
    ``terminated``, ``truncated``, ``next_observation`` (the observation actually reached, before
    any reset) and, where the episode ended, its ``episode_return`` and ``episode_length``
    (valid only where ``terminated | truncated``). It publishes ``observation`` and
    ``episode_step`` (:func:`publish`).

    An environment with an action mask also publishes ``action_mask`` (bool ``[B, n]``, the
    legal actions at ``observation``) and writes ``next_action_mask`` (at
    ``next_observation``); the keys of its :meth:`~jaxrl_fdg.envs.Environment.info_env` are
    written as edges of their own, which the trajectory keeps in ``info``.
    """
    from jaxrl_fdg.envs.contracts import check_reset
    from jaxrl_fdg.envs.multi_agent import fold, fold_timestep, num_agents, unfold

    info_names = tuple(k for k in check_reset(env, params).info if k != ACTION_MASK)
    agents = num_agents(env)
    if num_envs % agents:
        raise ConfigError(
            f"{env.name} is a game of {agents} agents: its env fragment's batch of {num_envs} rows "
            f"must be a multiple of {agents} (num_envs games x {agents} agents)"
        )
    games = num_envs // agents

    # The batch-level entry points draw randomness once per step for the whole batch rather
    # than through one key per environment, which is most of the cost of a classic-control step.
    # A multi-agent game's agents are folded into the batch, game-major (envs.multi_agent).
    def init(key: jax.Array) -> tuple[EpisodeState, Any, dict]:
        env_state, timestep = env.reset_batch(key, games, params)
        if agents > 1:
            return env_state, fold(timestep.observation, agents), fold(timestep.info, agents)
        return env_state, timestep.observation, timestep.info

    action_space = env.action_space(params)

    def step_batch(env_state: EpisodeState, action: jax.Array, key: jax.Array):
        check_action(env.name, action_space, num_envs, action)  # as it traces: shapes only
        if agents == 1:
            return env.step_batch(key, env_state, action, params)
        env_state, timestep = env.step_batch(key, env_state, unfold(action, agents), params)
        return env_state, fold_timestep(timestep, agents)

    return batched_env_fragment(
        name, num_envs, init, step_batch, info=info_names, masked=env.has_action_mask, agents=agents
    )


def check_action(env: str, space: Any, num_envs: int, action: Any) -> None:
    """Refuse, in one line naming both, an action whose shape is not ``[num_envs, *space.shape]``
    or whose kind (integer, floating) is not the space's: the actor's output, checked as the
    environment's step is traced, before XLA would fail on it with a broadcasting error."""
    if spaces.is_nested(space) or not hasattr(action, "shape"):
        return
    expected = (num_envs, *tuple(space.shape))
    integer = jnp.issubdtype(space.dtype, jnp.integer)
    kind_ok = jnp.issubdtype(action.dtype, jnp.integer if integer else jnp.floating)
    if tuple(action.shape) != expected or not kind_ok:
        raise ConfigError(
            f"the action reaching {env} is {action.dtype} {tuple(action.shape)}; it takes "
            f"{'an integer' if integer else 'a float'} array of shape {expected} (num_envs = "
            f"{num_envs} x {spaces.describe(space)}): look at what writes the edge 'action'"
        )


def batched_env_fragment(
    name: str,
    num_envs: int,
    init: Callable[[jax.Array], tuple[Any, jax.Array]],
    step: Callable[[Any, jax.Array, jax.Array], tuple[Any, TimeStep]],
    site: Site = Site.DEVICE,
    host_apply: ApplyFn | None = None,
    info: tuple[str, ...] = (),
    masked: bool = False,
    agents: int = 1,
) -> Fragment:
    """The env fragment around any batched simulator: episode statistics, edges, publishing.

    Args:
      init: ``key -> (simulator state, first observation [B, ...])``, or with a third item,
        the reset's :attr:`~jaxrl_fdg.envs.TimeStep.info` (where ``action_mask`` is).
      step: ``(simulator state, action [B, ...], key) -> (simulator state, TimeStep of [B])``,
        auto-resetting finished episodes itself.
      site: where the simulator steps (:class:`~jaxrl_fdg.core.fragment.Site`).
      host_apply: for a host simulator, ``apply`` in numpy (see ``Fragment.host_apply``).
      info: the names of the time step's info written as edges (``next_action_mask`` among
        them for a masked environment).
      masked: the simulator reports an ``action_mask``, which the fragment keeps and publishes.
      agents: the agents of each game where the batch folds them (``num_envs`` is then games x
        agents rows; :mod:`~jaxrl_fdg.envs.multi_agent`), which the fragment records as its
        :attr:`~jaxrl_fdg.core.fragment.Fragment.agents`.
    """

    def init_state(key: jax.Array) -> EnvFragmentState:
        sim_state, observation, *rest = init(key)
        first = rest[0] if rest else {}
        zeros = jnp.zeros((num_envs,), jnp.float32)
        mask = first[ACTION_MASK] if masked else None
        return EnvFragmentState(sim_state, observation, zeros, zeros.astype(jnp.int32), mask)

    def apply(state: EnvFragmentState, inputs, key: jax.Array):
        sim_state, ts = step(state.env, inputs[ACTION], key)
        return record_step(state, sim_state, ts)

    return fragment(
        name,
        Role.ENV,
        apply,
        init=init_state,
        inputs=(ACTION,),
        outputs=ENV_OUTPUTS + tuple(info),
        publish=publish,
        published=PUBLISHED + ((ACTION_MASK,) if masked else ()),
        site=site,
        host_apply=host_apply,
        agents=agents,
    )


PUBLISHED = (OBSERVATION, EPISODE_STEP)


def info_outputs(env: Fragment) -> tuple[str, ...]:
    """The env fragment's outputs that carry its environment's ``info_env`` keys (what it writes
    besides :data:`ENV_OUTPUTS` and ``next_action_mask``)."""
    return tuple(o for o in env.outputs if o not in ENV_OUTPUTS and o != NEXT_ACTION_MASK)


def publish(state: EnvFragmentState) -> dict[str, jax.Array]:
    """The edges an env fragment publishes: ``observation`` ``[B, *obs_shape]``, the one to act
    on, and ``episode_step`` (int32 ``[B]``), the steps its episode has taken before it: 0
    exactly at an episode's first observation (after a reset, and where the step before ended
    one).

    ``episode_step == 0`` is where a recurrent actor resets its memory
    (``fragments.algorithms.actor_critic``). The edge is the running ``episode_length`` of the state
    itself, published as it is rather than as a derived flag: it adds nothing to the state
    (checkpoints and host-side steps are unchanged, every simulator behind
    :func:`batched_env_fragment` has it, JAX, brax and host alike), and computes nothing where
    no fragment reads it, not even in the split fusion modes, which gather published edges
    outside compiled programs.
    An environment with an action mask publishes ``action_mask`` beside them.
    """
    edges = {OBSERVATION: state.observation, EPISODE_STEP: state.episode_length}
    if state.action_mask is not None:
        edges[ACTION_MASK] = state.action_mask
    return edges


def record_step(
    state: EnvFragmentState, sim_state: Any, ts: TimeStep, xp: Any = jnp
) -> tuple[EnvFragmentState, dict[str, jax.Array]]:
    """The env fragment's new state and outputs after the simulator stepped: running episode
    statistics (reset where an episode ended), and the step's edges (``episode_return`` and
    ``episode_length`` hold the ended episodes' totals where ``terminated | truncated``).

    ``xp`` is ``jax.numpy``, or ``numpy`` for a host simulator stepped outside a compiled
    program: the same float32 and int32 arithmetic, so the same bits."""
    done = xp.logical_or(ts.terminated, ts.truncated)
    ep_return = state.episode_return + ts.reward
    ep_length = state.episode_length + 1
    info = dict(ts.info)
    new_state = EnvFragmentState(
        sim_state,
        ts.observation,
        xp.where(done, 0.0, ep_return),
        xp.where(done, 0, ep_length),
        info.pop(ACTION_MASK, None),
    )
    outputs = {
        **info,
        REWARD: ts.reward,
        TERMINATED: ts.terminated,
        TRUNCATED: ts.truncated,
        NEXT_OBSERVATION: ts.final_observation,
        EPISODE_RETURN: ep_return,
        EPISODE_LENGTH: ep_length,
    }
    return new_state, outputs


def host_env_fragment(simulator: HostSimulator, num_envs: int, name: str = "env") -> Fragment:
    """``num_envs`` host environments as an env fragment (the same edges as a JAX env
    fragment; the state's ``env`` field holds the handle of this run's simulators).

    Inside a compiled program its ``apply`` steps the simulators through an ordered
    ``io_callback``; its ``host_apply`` does the same step in numpy, for plans that step host
    fragments between compiled programs."""
    from jaxrl_fdg.envs import host

    space = simulator.observation_space
    obs_shape = (num_envs, *space.shape)
    obs_struct = jax.ShapeDtypeStruct(obs_shape, space.dtype)
    batch = (num_envs,)

    def host_reset(seed):
        handle, observation = host.open_simulators(simulator, num_envs, int(seed))
        return np.int32(handle), observation.reshape(obs_shape)

    def init(key):
        seed = jax.random.randint(key, (), 0, 2**30)
        handle, observation = io_callback(
            host_reset, (jax.ShapeDtypeStruct((), jnp.int32), obs_struct), seed, ordered=True
        )
        return handle, observation, {}

    def step(handle, action, key):
        del key  # the simulators keep their own random streams, seeded at init
        results = (
            obs_struct,
            jax.ShapeDtypeStruct(batch, jnp.float32),
            jax.ShapeDtypeStruct(batch, jnp.bool_),
            jax.ShapeDtypeStruct(batch, jnp.bool_),
            obs_struct,
        )
        arrays = io_callback(host.step_simulators, results, handle, action, ordered=True)
        return handle, TimeStep(*arrays)

    def host_apply(state: EnvFragmentState, inputs, key):
        del key
        state = jax.tree.map(np.asarray, state)
        arrays = host.step_simulators(state.env, np.asarray(inputs[ACTION]))
        return record_step(state, state.env, TimeStep(*arrays), xp=np)

    return batched_env_fragment(name, num_envs, init, step, Site.HOST, host_apply)

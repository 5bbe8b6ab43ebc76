"""Environments of several agents acting at once: the agents axis.

A :class:`MultiAgentEnvironment` is an :class:`~jaxrl_fdg.envs.Environment` whose one
environment is one game of ``num_agents`` agents. Everything a game returns carries the agents
axis ``N`` after the environment's own axes:

* ``reset_env``/``step_env``'s observation is ``[N, *obs]`` (each leaf of a structured one,
  such as ``{"observation", "world_state"}``), where ``obs`` is :meth:`observation_space`'s
  shape: the spaces describe **one agent**, which is what a policy acts on;
* the action ``step_env`` takes is ``[N, *action]``, one per agent;
* the reward is ``[N]``, each agent's own;
* ``terminated`` is **the team's** (a scalar per game): the game ends for everyone at once, and
  the base class's time limit and auto-reset restart whole games. An agent that is out of the
  game before it ends (a unit killed in SMAX) goes on receiving observations and rewards (zeros,
  as its suite sends them) until the game ends; its own flag is in the info, ``agent_done``;
* :meth:`action_mask` is ``[N, n]``, :meth:`info_env` returns arrays with the agents axis first.

In the graph, the env fragment folds the agents into its batch axis: a run of ``num_envs``
games has edges of ``num_envs × N`` rows, game-major (row ``g·N + i`` is agent ``i`` of game
``g``; :func:`fold`, :func:`unfold`). Every single-agent algorithm therefore runs unchanged on a
multi-agent environment as its *independent* version with parameter sharing (PPO becomes IPPO,
PQN independent Q-learning): one network, every agent's experience in one batch. An algorithm
that needs the agents of one game together (a mixing network, a centralised critic over the
joint observation) unfolds rows with :func:`unfold` and the context's ``num_agents``.
``env_steps`` counts games: one step of ``num_envs`` games is ``num_envs`` env steps and
``num_envs × N`` agent steps.
"""

from __future__ import annotations

from typing import Any, TypeVar

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.base import ACTION_MASK, NEXT_ACTION_MASK, Environment, EpisodeState, TimeStep

TEnvState = TypeVar("TEnvState")
TParams = TypeVar("TParams")

AGENT_DONE = "agent_done"
"""The info key of each agent's own end (bool ``[N]``): out of the game, or the game over."""


class MultiAgentEnvironment(Environment[TEnvState, TParams]):
    """Base class of a game of ``num_agents`` agents (see the module docstring for the axes).

    Subclasses set :attr:`num_agents` and :attr:`agents` and write ``reset_env``/``step_env``
    as for one agent, with the agents axis on observations, actions and rewards and the team's
    ``terminated``.
    """

    num_agents: int = 2
    agents: tuple[str, ...] = ()
    """The agents' names, in the order of the agents axis."""

    def reset(
        self, key: jax.Array, params: TParams | None = None
    ) -> tuple[EpisodeState[TEnvState], TimeStep]:
        state, timestep = super().reset(key, params)
        # One reward per agent: zeros of the step's shape.
        return state, timestep._replace(reward=jnp.zeros((self.num_agents,), jnp.float32))


class JointView(Environment[TEnvState, TParams]):
    """A game of ``N`` agents seen as one environment of joint spaces: observations ``[N, *obs]``
    (each leaf), actions ``MultiDiscrete([n] * N)`` or a Box ``[N, d]``, the reward the agents'
    mean. What ``jaxrl-fdg check-env`` checks a multi-agent game through: its dynamics, keys,
    auto-reset and time limit are the game's own. The action mask, ``[N, n]``, is not carried
    (a mask is of a Discrete space); its shape is checked when a run resolves."""

    def __init__(self, game: MultiAgentEnvironment):
        self.game = game
        self.name = game.name
        self.num = game.num_agents

    @property
    def default_params(self) -> TParams:
        return self.game.default_params

    def reset_env(self, key: jax.Array, params: TParams):
        return self.game.reset_env(key, params)

    def auto_reset_env(self, key: jax.Array, state: TEnvState, params: TParams):
        return self.game.auto_reset_env(key, state, params)

    def step_env(self, key: jax.Array, state: TEnvState, action: jax.Array, params: TParams):
        state, obs, reward, terminated = self.game.step_env(key, state, action, params)
        return state, obs, jnp.mean(reward), terminated

    def info_env(self, state: TEnvState, params: TParams) -> dict[str, jax.Array]:
        return self.game.info_env(state, params)

    @property
    def has_info(self) -> bool:
        return self.game.has_info

    def observation_space(self, params: TParams) -> spaces.Space:
        return _joint(self.game.observation_space(params), self.num)

    def action_space(self, params: TParams) -> spaces.Space:
        space = self.game.action_space(params)
        if isinstance(space, spaces.Discrete):
            return spaces.MultiDiscrete((int(space.n),) * self.num, space.dtype)
        return _joint(space, self.num)


def _joint(space: Any, num: int) -> Any:
    """``space`` with an agents axis in front of each leaf."""
    if isinstance(space, spaces.Dict):
        return spaces.Dict({k: _joint(v, num) for k, v in space.spaces.items()})
    if isinstance(space, spaces.Box):
        low = jnp.broadcast_to(jnp.asarray(space.low, space.dtype), space.shape)
        high = jnp.broadcast_to(jnp.asarray(space.high, space.dtype), space.shape)
        shape = (num, *space.shape)
        return spaces.Box(
            jnp.broadcast_to(low, shape), jnp.broadcast_to(high, shape), shape, space.dtype
        )
    raise ValueError(f"no joint space of {spaces.describe(space)} for {num} agents")


def fold(tree: Any, num_agents: int) -> Any:
    """``[G, N, ...]`` leaves as ``[G·N, ...]``: the agents of each game in consecutive rows."""
    return jax.tree.map(lambda x: x.reshape(x.shape[0] * num_agents, *x.shape[2:]), tree)


def unfold(tree: Any, num_agents: int) -> Any:
    """``[G·N, ...]`` leaves as ``[G, N, ...]`` (the inverse of :func:`fold`)."""
    return jax.tree.map(
        lambda x: x.reshape(x.shape[0] // num_agents, num_agents, *x.shape[1:]), tree
    )


def per_agent(flags: jax.Array, num_agents: int) -> jax.Array:
    """A game's value ``[G]`` repeated for each of its agents: ``[G·N]``."""
    return jnp.repeat(flags, num_agents, axis=0)


def fold_timestep(timestep: TimeStep, num_agents: int) -> TimeStep:
    """A batch of games' time step ``[G, N, ...]`` as the agents' rows ``[G·N, ...]``: the
    observations, rewards, masks and info folded, the team's flags repeated per agent."""
    return TimeStep(
        fold(timestep.observation, num_agents),
        fold(timestep.reward, num_agents),
        per_agent(timestep.terminated, num_agents),
        per_agent(timestep.truncated, num_agents),
        fold(timestep.final_observation, num_agents),
        fold(dict(timestep.info), num_agents),
    )


def is_multi_agent(env: Any) -> bool:
    """Whether ``env`` is a :class:`MultiAgentEnvironment` (its batch folds agents)."""
    return isinstance(env, MultiAgentEnvironment)


def num_agents(env: Any) -> int:
    """The agents of one game of ``env``: 1 for a single-agent environment."""
    return env.num_agents if is_multi_agent(env) else 1


__all__ = [
    "ACTION_MASK",
    "AGENT_DONE",
    "JointView",
    "NEXT_ACTION_MASK",
    "MultiAgentEnvironment",
    "fold",
    "fold_timestep",
    "is_multi_agent",
    "num_agents",
    "per_agent",
    "unfold",
]

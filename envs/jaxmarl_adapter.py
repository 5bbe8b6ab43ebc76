"""JaxMARL's environments behind :class:`~jaxrl_fdg.envs.multi_agent.MultiAgentEnvironment`:
``jaxmarl/<name>``.

JaxMARL (Rutherford et al. 2024; on PyPI as ``jaxmarl``) keys everything by agent: ``reset(key)
-> (obs, state)`` and ``step_env(key, state, actions) -> (obs, state, rewards, dones, infos)``
with dicts ``{agent: value}``, ``dones["__all__"]`` for the game's end, per-agent
``observation_space(agent)``/``action_space(agent)`` and, where the suite has them,
``get_avail_actions(state)`` and a world state (SMAX). What this adapter makes of them:

* **Agents axis.** The dicts become arrays stacked in ``env.agents`` order: observations
  ``[N, *obs]``, rewards ``[N]``, actions ``[N]``. The game ends when ``dones["__all__"]``
  does (``terminated``); each agent's own ``dones[agent]`` is the info's ``agent_done``.
  JaxMARL's suites end their games at their own time limits (MPE 25 steps, SMAX 100) and
  report that end in ``dones``, so it is ``terminated`` here as in JaxMARL's baselines; the base
  class's limit (``max_steps``, default ``2 * env.max_steps + 2``) is a guard that
  ``truncated`` raises only where a suite has no limit of its own.
* **Heterogeneous agents** (``MPE_simple_speaker_listener_v4``, ``MPE_simple_adversary_v3``):
  with ``pad=True`` (the default) flat observations are zero-padded to the longest, and
  ``Discrete`` actions to the most; the padded actions are masked out (an action mask, which
  every discrete policy respects). Image observations of different shapes are refused.
* **Action masks.** Where the suite implements ``get_avail_actions`` (SMAX, Hanabi, Overcooked's
  are all legal), it is the action mask ``[N, n]``.
* **Agent ids.** ``agent_ids=True`` appends a one-hot agent id to each flat observation, so one
  shared network can act differently per agent.
* **World state.** ``world_state=True`` makes the observation a dict: ``observation`` (the
  agent's own) and ``world_state``, the game's global state with the agent's one-hot id
  appended (``[N, S + N]``): SMAX's ``get_world_state``, and for suites without one every
  agent's observation concatenated, as JaxMARL's MAPPO baselines do. A centralised critic reads
  it (``mappo``).
* **Win rate.** For SMAX maps, the info's ``won`` is 1 where the game ended with every enemy
  unit dead (the run's rows give the fraction of games won).
* **Keywords** go to ``jaxmarl.make(name, **kwargs)``, except ``map`` (SMAX: a map name such as
  ``3m`` or ``2s3z``, turned into JaxMARL's scenario), ``pad``, ``agent_ids``, ``world_state``
  and ``max_steps``.

JaxMARL is imported only when an environment is built, and then only the module of the game
asked for (:mod:`~jaxrl_fdg.envs.jaxmarl_imports`): ``import jaxmarl`` imports every suite,
about 9 s.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.jaxmarl_imports import jaxmarl_factory
from jaxrl_fdg.envs.multi_agent import AGENT_DONE, MultiAgentEnvironment
from jaxrl_fdg.envs.partial_imports import import_alone

WORLD_STATE = "world_state"
"""The key of the global state in a ``world_state=True`` observation (and in SMAX's own)."""
OBSERVATION_KEY = "observation"
WON = "won"


class JaxMARLParams(NamedTuple):
    """The base class's time limit; JaxMARL's environments keep their settings themselves."""

    max_steps: Any


class JaxMARLState(NamedTuple):
    game: Any  # JaxMARL's state
    agent_done: jax.Array  # bool [N]


class JaxMARLEnv(MultiAgentEnvironment[JaxMARLState, JaxMARLParams]):
    """A JaxMARL environment by name (``jaxmarl.registered_envs``).

    Args:
      name: the environment's name in JaxMARL's registry (``MPE_simple_spread_v3``, ``SMAX``,
        ``HeuristicEnemySMAX``, ``overcooked``, ``hanabi``, ...).
      map: for the SMAX family, a map of ``jaxmarl.environments.smax.map_name_to_scenario``.
      pad, agent_ids, world_state: see the module docstring.
      **kwargs: to ``jaxmarl.make``.
    """

    def __init__(
        self,
        name: str,
        map: str | None = None,
        pad: bool = True,
        agent_ids: bool = False,
        world_state: bool = False,
        **kwargs: Any,
    ):
        make = jaxmarl_factory(name)
        if map is not None:
            smax = import_alone("jaxmarl.environments.smax")
            try:
                kwargs["scenario"] = smax.map_name_to_scenario(map)
            except KeyError:
                scenarios = import_alone("jaxmarl.environments.smax.smax_env").MAP_NAME_TO_SCENARIO
                raise UnknownEnvironmentError(unknown("SMAX map", map, scenarios)) from None
        try:
            self.game = make(**kwargs)
        except TypeError as e:
            raise ValueError(f"jaxmarl cannot make {name!r} with {kwargs}: {e}") from None
        self.name = f"jaxmarl-{name}" + (f"-{map}" if map else "")
        self.agents = tuple(self.game.agents)
        self.num_agents = len(self.agents)
        self.agent_ids, self.with_world_state = agent_ids, world_state
        self._observations = [self.game.observation_space(a) for a in self.agents]
        self._actions = [self.game.action_space(a) for a in self.agents]
        self._obs_space = _common_observation(self._observations, pad, name)
        self._action_space, self._action_counts = _common_action(self._actions, pad, name)
        own_masks = type(self.game).get_avail_actions is not _base_avail_actions()
        self._masked = own_masks or self._action_counts is not None
        self._own_masks = own_masks
        self._smax = hasattr(self.game, "num_allies") and hasattr(self.game, "get_world_state")

    # -- the spaces, one agent's ------------------------------------------------------------

    @property
    def default_params(self) -> JaxMARLParams:
        # A guard above the suite's own limit (MPE ends its games after max_steps + 1 steps).
        return JaxMARLParams(max_steps=2 * int(getattr(self.game, "max_steps", 5_000)) + 2)

    def observation_space(self, params: JaxMARLParams) -> spaces.Space:
        own = self._obs_space
        if self.agent_ids:
            own = _widened(own, self.num_agents)
        if not self.with_world_state:
            return own
        state = _state_size(self)
        world = spaces.Box(-jnp.inf, jnp.inf, (state + self.num_agents,), jnp.float32)
        return spaces.Dict({OBSERVATION_KEY: own, WORLD_STATE: world})

    def action_space(self, params: JaxMARLParams) -> spaces.Space:
        return self._action_space

    # -- the dynamics ----------------------------------------------------------------------

    def reset_env(self, key: jax.Array, params: JaxMARLParams) -> tuple[JaxMARLState, Any]:
        obs, game = self.game.reset(key)
        state = JaxMARLState(game, jnp.zeros((self.num_agents,), jnp.bool_))
        return state, self._observe(obs, game)

    def step_env(self, key: jax.Array, state: JaxMARLState, action: jax.Array, params: Any):
        actions = {a: self._agent_action(action, i) for i, a in enumerate(self.agents)}
        obs, game, rewards, dones, _ = self.game.step_env(key, state.game, actions)
        reward = jnp.stack([jnp.asarray(rewards[a], jnp.float32) for a in self.agents])
        agent_done = jnp.stack([jnp.asarray(dones[a], jnp.bool_) for a in self.agents])
        next_state = JaxMARLState(game, agent_done)
        return next_state, self._observe(obs, game), reward, jnp.asarray(dones["__all__"], bool)

    def action_mask(self, state: JaxMARLState, params: JaxMARLParams) -> jax.Array | None:
        n = self._action_space.n
        if self._action_counts is not None:
            legal = jnp.arange(n)[None, :] < jnp.asarray(self._action_counts)[:, None]
        else:
            legal = jnp.ones((self.num_agents, n), jnp.bool_)
        if self._own_masks:
            avail = self.game.get_avail_actions(state.game)
            own = jnp.stack([_pad_to(jnp.asarray(avail[a]) > 0, n) for a in self.agents])
            legal = legal & own
        return legal

    @property
    def has_action_mask(self) -> bool:
        return self._masked

    @property
    def has_info(self) -> bool:
        return True

    def info_env(self, state: JaxMARLState, params: JaxMARLParams) -> dict[str, jax.Array]:
        info = {AGENT_DONE: state.agent_done}
        if self._smax:
            alive = _unit_alive(state.game)
            won = ~jnp.any(alive[self.game.num_allies :])
            info[WON] = jnp.broadcast_to(won.astype(jnp.float32), (self.num_agents,))
        return info

    # -- helpers ---------------------------------------------------------------------------

    def _observe(self, obs: dict, game: Any) -> Any:
        own = [jnp.asarray(obs[a], jnp.float32) for a in self.agents]
        if len(self._obs_space.shape) == 1:  # flat: zero-padded to the longest
            own = [_pad_to(o, self._obs_space.shape[0]) for o in own]
        own = jnp.stack(own)
        ids = jnp.eye(self.num_agents, dtype=jnp.float32)
        if self.agent_ids:
            own = jnp.concatenate([own, ids], axis=-1)
        if not self.with_world_state:
            return own
        world = _global_state(self, obs, game)
        world = jnp.broadcast_to(world, (self.num_agents, world.shape[-1]))
        return {OBSERVATION_KEY: own, WORLD_STATE: jnp.concatenate([world, ids], axis=-1)}

    def _agent_action(self, action: jax.Array, i: int) -> jax.Array:
        space = self._actions[i]
        if hasattr(space, "n"):
            return action[i]
        return action[i, : math.prod(space.shape)].reshape(space.shape)


def _base_avail_actions() -> Any:
    return import_alone("jaxmarl.environments.multi_agent_env").MultiAgentEnv.get_avail_actions


def _common_observation(observations: list[Any], pad: bool, name: str) -> spaces.Box:
    shapes = {tuple(s.shape) for s in observations}
    if len(shapes) == 1:
        return spaces.Box(-jnp.inf, jnp.inf, next(iter(shapes)), jnp.float32)
    if not pad or any(len(s) != 1 for s in shapes):
        raise ValueError(
            f"jaxmarl/{name}: its agents observe different shapes {sorted(shapes)}; pad=True "
            "zero-pads flat observations to the longest (images cannot be padded)"
        )
    return spaces.Box(-jnp.inf, jnp.inf, (max(s[0] for s in shapes),), jnp.float32)


def _common_action(actions: list[Any], pad: bool, name: str) -> tuple[spaces.Space, Any]:
    """One agent's action space, and each agent's count of actions where they differ."""
    if all(hasattr(s, "n") for s in actions):
        counts = [int(s.n) for s in actions]
        if len(set(counts)) == 1:
            return spaces.Discrete(counts[0]), None
        if not pad:
            raise ValueError(f"jaxmarl/{name}: its agents have {counts} actions; pad=True masks")
        return spaces.Discrete(max(counts)), tuple(counts)
    if all(hasattr(s, "low") for s in actions):
        sizes = [math.prod(s.shape) for s in actions]
        lows = {float(jnp.min(jnp.asarray(s.low))) for s in actions}
        highs = {float(jnp.max(jnp.asarray(s.high))) for s in actions}
        if len(lows) == 1 and len(highs) == 1 and (len(set(sizes)) == 1 or pad):
            return spaces.Box(lows.pop(), highs.pop(), (max(sizes),), jnp.float32), None
    kinds = sorted({type(s).__name__ for s in actions})
    raise ValueError(f"jaxmarl/{name}: action spaces {kinds} are not supported here")


def _widened(space: spaces.Box, extra: int) -> spaces.Box:
    if len(space.shape) != 1:
        raise ValueError("agent_ids=True appends to flat observations; this one is an image")
    return spaces.Box(space.low, space.high, (space.shape[0] + extra,), space.dtype)


def _state_size(env: JaxMARLEnv) -> int:
    obs, game = jax.eval_shape(env.game.reset, jax.random.key(0))
    return int(jax.eval_shape(lambda o, g: _global_state(env, o, g), obs, game).shape[-1])


def _global_state(env: JaxMARLEnv, obs: dict, game: Any) -> jax.Array:
    if WORLD_STATE in obs:
        return jnp.asarray(obs[WORLD_STATE], jnp.float32).reshape(-1)
    if hasattr(env.game, "get_world_state"):
        return jnp.asarray(env.game.get_world_state(game), jnp.float32).reshape(-1)
    return jnp.concatenate([jnp.asarray(obs[a], jnp.float32).reshape(-1) for a in env.agents])


def _unit_alive(game: Any) -> jax.Array:
    while not hasattr(game, "unit_alive"):
        game = game.state  # HeuristicEnemySMAX wraps SMAX's state
    return game.unit_alive


def _pad_to(x: jax.Array, n: int) -> jax.Array:
    return jnp.pad(x, (0, n - x.shape[0]))


def make_jaxmarl(
    name: str, max_steps: Any = None, **kwargs: Any
) -> tuple[JaxMARLEnv, JaxMARLParams]:
    """``(environment, params)`` of JaxMARL's ``name``; ``max_steps`` sets the guard limit.

    >>> env, params = make_jaxmarl("MPE_simple_spread_v3")  # 3 agents, observations [3, 18]
    """
    env = JaxMARLEnv(name, **kwargs)
    params = env.default_params
    if max_steps is not None:
        params = params._replace(max_steps=int(max_steps))
    return env, params

"""Jumanji behind this package's :class:`Environment` API: ``jumanji/<id>``.

Jumanji (Bonnet et al. 2024) has the dm_env-style JAX API that
:class:`~jaxrl_fdg.envs.timestep_adapter.TimeStepApiEnv` adapts for any suite, so
:class:`JumanjiEnv` is that adapter plus Jumanji's registry. What the adapter maps (its module
says how):

* **Ids.** ``jumanji.registered_environments()``: ``Game2048-v1``, ``Minesweeper-v0``,
  ``RubiksCube-v0``, ``Snake-v1``, ``Sokoban-v0``, ``Maze-v0``, ... Keywords go to Jumanji's
  constructor (``jumanji.make(id, **kwargs)``: ``board_size=3`` for Game2048,
  ``time_limit=50`` for RubiksCube). Multi-agent ids (rewards per agent) are refused.
* **Action masks.** The observation's ``action_mask`` is published as the action mask
  (Game2048: bool ``[4]``), and the policy observes the other fields: Game2048's ``board`` alone
  (int32 ``[4, 4]``), a :class:`~jaxrl_fdg.envs.spaces.Dict` where several remain
  (Minesweeper: ``board``, ``num_mines``, ``step_count``). Minesweeper's action, a row and a
  column (``MultiDiscrete([10, 10])``), becomes one ``Discrete(100)``, cell ``row * 10 + col``,
  so that its ``[10, 10]`` mask of unexplored cells masks it (``flatten_action=False`` keeps
  the pair, and the mask in the observation).
* **Time limits.** Many Jumanji environments end episodes at an attribute ``time_limit`` (Snake
  4,000, RubiksCube 200, Sokoban 120, Maze rows × cols) with a discount of 0, as if it were
  the MDP's end. The default ``max_steps`` is that limit, and the adapter reports the LAST at
  ``time_limit`` as ``truncated`` (bootstrapped), the rest as ``terminated``;
  ``max_steps`` below it truncates earlier, above it the environment's own limit still ends
  the episode (``terminated``). Environments without ``time_limit`` (Game2048, Minesweeper) end
  by themselves; their ``max_steps`` defaults to
  :data:`~jaxrl_fdg.envs.gymnax_adapter.DEFAULT_MAX_STEPS`.
* **Info.** A time step's ``extras`` (Game2048's ``highest_tile``) are the environment's info,
  as float32.
* **Keys.** The base class's ``reset(key)`` is Jumanji's ``reset(key)``; Jumanji's ``step``
  takes no key (its randomness is in its state), so the step keys go unused.

Jumanji is imported only when an environment is built.
"""

from __future__ import annotations

from typing import Any

from jaxrl_fdg.envs.errors import UnknownEnvironmentError, unknown
from jaxrl_fdg.envs.timestep_adapter import TimeStepApiEnv, TimeStepParams, with_max_steps


class JumanjiEnv(TimeStepApiEnv):
    """A Jumanji environment by id: :class:`TimeStepApiEnv` around ``jumanji.make(id)``.

    Args:
      env_id: one of ``jumanji.registered_environments()``.
      flatten_action: see :class:`~jaxrl_fdg.envs.timestep_adapter.TimeStepAdapter`.
      **kwargs: to Jumanji's constructor.

    Raises:
      UnknownEnvironmentError: an id Jumanji does not register (close matches named).
      ValueError: keywords the constructor refuses; a multi-agent environment.
    """

    def __init__(self, env_id: str, flatten_action: bool | None = None, **kwargs: Any):
        import jumanji

        registered = jumanji.registered_environments()
        if env_id not in registered:
            raise UnknownEnvironmentError(unknown("Jumanji environment", env_id, registered))
        try:
            env = jumanji.make(env_id, **kwargs)
        except TypeError as e:
            raise ValueError(f"jumanji cannot make {env_id!r} with {kwargs}: {e}") from None
        self.env_id = env_id
        super().__init__(env, f"jumanji-{env_id}", flatten_action)


def make_jumanji(
    env_id: str, max_steps: Any = None, flatten_action: bool | None = None, **kwargs: Any
) -> tuple[JumanjiEnv, TimeStepParams]:
    """``(environment, params)`` of Jumanji ``env_id``; ``max_steps`` sets the time limit,
    ``kwargs`` go to Jumanji's constructor.

    >>> env, params = make_jumanji("Minesweeper-v0")  # actions: Discrete(100), masked
    """
    env = JumanjiEnv(env_id, flatten_action, **kwargs)
    return env, with_max_steps(env.default_params, max_steps)

"""The evaluation fragment: an algorithm's deterministic policy on environments of its own.

Every ``eval_every`` env steps the runner hands the learner's published ``params`` to this
fragment, which plays one episode on each of ``episodes`` fresh environments (no exploration, no
learning) and reports the mean and spread of their returns. Its keys derive from the run's seed
and the iteration alone, so its results are the same under every fusion mode; it never touches the
training state, so evaluating does not change what the run computes.

:func:`in_graph_evaluator` puts the same evaluation inside the graph instead, as a fragment that
runs every ``n`` iterations inside the compiled program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.core import cadence
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext
from jaxrl_fdg.core.fragment import Fragment, Role, fragment
from jaxrl_fdg.core.names import (
    ACTION_MASK,
    EVAL_LENGTH,
    EVAL_RETURN,
    EVAL_RETURN_STD,
    METRICS,
    PARAMS,
)
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.envs.multi_agent import fold, num_agents, unfold
from jaxrl_fdg.errors import GraphError

Policy = Callable[..., Any]  # (params, observations [B, ...]) -> actions [B], or see below

EVAL_OUTPUTS = (EVAL_RETURN, EVAL_RETURN_STD, EVAL_LENGTH)


class _Episodes(NamedTuple):
    env: Any
    observation: jax.Array
    total: jax.Array
    length: jax.Array
    done: jax.Array
    key: jax.Array
    memory: Any = ()
    action_mask: jax.Array | None = None


def evaluator(
    env: Environment,
    env_params: Any,
    policy: Policy,
    episodes: int,
    name: str = "evaluator",
    memory: Callable[[int], Any] | None = None,
) -> Fragment:
    """A stateless fragment: ``apply(_, {"params"}, key)`` plays ``episodes`` episodes (one per
    environment, in parallel, until each ends or reaches ``env_params.max_steps``) and outputs
    ``eval_return`` (mean), ``eval_return_std`` and ``eval_length`` (mean).

    ``policy(params, observations) -> actions``; for a policy with memory
    (:attr:`~jaxrl_fdg.core.algorithm.Algorithm.policy_memory` given as ``memory``),
    ``policy(params, observations, memory) -> (actions, memory)``, which starts from
    ``memory(episodes)`` and is reset to it wherever an environment's episode ended (the steps
    after an episode's end count for nothing, but the policy acts on them as on a new episode).
    For an environment with an action mask the policy is also given ``action_mask=`` (bool
    ``[B, n]``), the legal actions at the observations.
    """

    act, initial = _for_agents(*_with_memory(policy, memory), num_agents(env))
    masked = getattr(env, "has_action_mask", False)
    reset = jax.vmap(env.reset, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    max_steps = int(env_params.max_steps)

    def play(params: Any, key: jax.Array) -> dict[str, jax.Array]:
        k_reset, key = jax.random.split(key)
        env_state, timestep = reset(jax.random.split(k_reset, episodes), env_params)
        zeros = jnp.zeros((episodes,), jnp.float32)
        no_end = jnp.zeros((episodes,), bool)
        mask = timestep.info[ACTION_MASK] if masked else None
        start = _Episodes(
            env_state, timestep.observation, zeros, zeros, no_end, key, initial(episodes), mask
        )

        def running(c: _Episodes) -> jax.Array:
            return ~c.done.all() & (c.length.max() < max_steps)

        def one_step(c: _Episodes) -> _Episodes:
            key, k_step = jax.random.split(c.key)
            action, memory_after = act(params, c.observation, c.memory, c.action_mask)
            env_state, ts = step(jax.random.split(k_step, episodes), c.env, action, env_params)
            ended = ts.terminated | ts.truncated
            memory = _reset_where(ended, memory_after, initial(episodes))
            return _record(c, ts, ended)._replace(env=env_state, key=key, memory=memory)

        end = jax.lax.while_loop(running, one_step, start)
        return {
            EVAL_RETURN: end.total.mean(),
            EVAL_RETURN_STD: end.total.std(),
            EVAL_LENGTH: end.length.mean(),
        }

    def apply(state, inputs, key):
        return state, play(inputs[PARAMS], key)

    return fragment(name, Role.EVALUATOR, apply, inputs=(PARAMS,), outputs=EVAL_OUTPUTS)


def episode_states(
    env: Environment,
    env_params: Any,
    policy: Policy,
    episodes: int,
    steps: int,
    memory: Callable[[int], Any] | None = None,
) -> Callable[[Any, jax.Array], tuple[Any, jax.Array]]:
    """``(params, key) -> (states, ended)``: ``episodes`` environments played ``steps`` steps by
    the deterministic policy as :func:`evaluator` plays them (the same keys, masks and memory),
    keeping what a video needs: each step's environment state before it acts (``states``,
    the environment's own state with leaves ``[steps, episodes, ...]``) and whether that step
    ended the environment's first episode or a later one (``ended`` bool ``[steps, episodes]``).
    """
    act, initial = _for_agents(*_with_memory(policy, memory), num_agents(env))
    reset = jax.vmap(env.reset, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    masked = getattr(env, "has_action_mask", False)

    def play(params: Any, key: jax.Array) -> tuple[Any, jax.Array]:
        k_reset, key = jax.random.split(key)
        env_state, timestep = reset(jax.random.split(k_reset, episodes), env_params)
        mask = timestep.info[ACTION_MASK] if masked else None
        carry = (env_state, timestep.observation, mask, initial(episodes), key)

        def one_step(carry, _):
            env_state, observation, mask, memory, key = carry
            key, k_step = jax.random.split(key)
            action, memory_after = act(params, observation, memory, mask)
            after, ts = step(jax.random.split(k_step, episodes), env_state, action, env_params)
            ended = ts.terminated | ts.truncated
            memory = _reset_where(ended, memory_after, initial(episodes))
            mask = ts.info.get(ACTION_MASK)
            return (after, ts.observation, mask, memory, key), (env_state.env, ended)

        return jax.lax.scan(one_step, carry, None, length=steps)[1]

    return play


def in_graph_evaluator(
    ctx: AlgorithmContext, algorithm: Algorithm, every: int, episodes: int, name: str = "evaluator"
) -> Fragment:
    """An evaluator that runs inside the graph, every ``every`` iterations (cadence
    :func:`~jaxrl_fdg.core.cadence.every`): ``algorithm``'s deterministic policy on the learner's
    published ``params``, played on ``episodes`` environments of the run's own environment
    (``ctx.env``). Its results are its ``metrics``: ``<name>/eval_return`` and the others,
    with ``<name>/runs``. Add it with ``algorithm.with_fragments(...)``.

    A node of evaluators draws its key apart from the training nodes' (``core.loop``), so
    adding one changes nothing training computes."""
    if ctx.env is None or getattr(ctx.env, "on_host", False):
        raise GraphError(
            f"an in-graph evaluator plays a JAX environment inside the compiled program; "
            f"the run's environment is {'none' if ctx.env is None else 'a host simulator'}"
        )
    if algorithm.policy is None:
        raise GraphError(f"algorithm {algorithm.name!r} defines no policy to evaluate")
    play = evaluator(
        ctx.env, ctx.env_params, algorithm.policy, episodes, name, algorithm.policy_memory
    )

    def apply(state, inputs, key):
        state, results = play.apply(state, inputs, key)
        return state, {METRICS: results}

    return fragment(
        name,
        Role.EVALUATOR,
        apply,
        inputs=(PARAMS,),
        outputs=(METRICS,),
        cadence=cadence.every(every),
    )


def _record(c: _Episodes, ts: Any, ended: jax.Array) -> _Episodes:
    """``c`` after one step's time step ``ts``: the reward and the step counted for the episodes
    still running, ``ended`` ``[B]`` added to the finished ones, the new observation kept."""
    live = ~c.done
    return c._replace(
        observation=ts.observation,
        action_mask=ts.info.get(ACTION_MASK),
        # A game's return is its agents' mean, as the run's episode_return averages agents.
        total=c.total + jnp.where(live, _per_game(ts.reward), 0.0),
        length=c.length + live,
        done=c.done | ended,
    )


def _with_memory(
    policy: Policy, memory: Callable[[int], Any] | None
) -> tuple[Callable[[Any, jax.Array, Any], tuple[jax.Array, Any]], Callable[[int], Any]]:
    """``(params, observations, memory, action_mask) -> (actions, memory)`` and the initial
    memory of ``n`` environments, for any policy: one without memory carries an empty one,
    ``()``; ``action_mask`` goes to the policy as a keyword where it is not None."""

    def masked(mask: jax.Array | None) -> dict[str, jax.Array]:
        return {} if mask is None else {"action_mask": mask}

    if memory is not None:
        return (lambda p, obs, m, mask: policy(p, obs, m, **masked(mask))), memory
    return (lambda p, obs, _, mask: (policy(p, obs, **masked(mask)), ())), lambda n: ()


def _reset_where(ended: jax.Array, memory: Any, initial: Any) -> Any:
    """``memory`` with each environment's rows put back to ``initial`` where ``ended`` ``[B]``
    (each game's agents' rows, where the memory holds ``B x N`` rows of a multi-agent game)."""

    def reset(m: jax.Array, m0: jax.Array) -> jax.Array:
        flags = jnp.repeat(ended, m.shape[0] // ended.shape[0])
        return jnp.where(flags.reshape(-1, *[1] * (m.ndim - 1)), m0, m)

    return jax.tree.map(reset, memory, initial)


def _for_agents(
    act: Callable[..., tuple[jax.Array, Any]], initial: Callable[[int], Any], agents: int
) -> tuple[Callable[..., tuple[jax.Array, Any]], Callable[[int], Any]]:
    """``act`` and ``initial`` for games of ``agents`` agents: the policy sees each game's
    agents as rows of its batch (``[E x N, ...]``, as in training) and the game gets ``[E, N]``
    actions back; the memory of ``E`` games is that of ``E x N`` rows."""
    if agents == 1:
        return act, initial

    def team(params, observation, memory, mask):
        mask = None if mask is None else fold(mask, agents)
        action, memory = act(params, fold(observation, agents), memory, mask)
        return unfold(action, agents), memory

    return team, lambda n: initial(n * agents)


def _per_game(reward: jax.Array) -> jax.Array:
    """A step's reward of each game ``[E]``: its agents' mean where it has an agents axis."""
    return reward.mean(axis=-1) if reward.ndim > 1 else reward


def evaluation_key(seed: int, iteration: int) -> jax.Array:
    """The evaluation's key at ``iteration``: a stream apart from training's."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), 0x4556414C), iteration)

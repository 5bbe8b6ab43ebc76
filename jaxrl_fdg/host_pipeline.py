"""Placement ``host_env``: host simulators stepped in two halves that overlap device inference.

A host simulator (``gym/<id>``) steps in Python on the host while the actor and the learner run
on the accelerator. Stepped naively, the two take turns: the device idles while the host steps
the simulators, and the host idles while the device computes the next actions. Splitting the env
batch into two halves lets each hide the other (double buffering, as EnvPool's ``send`` /
``recv`` does): while the host steps half 0, the device computes half 1's actions, and the other
way round.

Two pieces, one definition:

* :class:`HalvedLoop` is the pure definition: a :class:`~jaxrl_fdg.loop.Loop` whose env state is
  two halves of ``num_envs / 2`` environments, each with its own simulators and its own key
  stream. Each step calls the actor once per half and steps each half; the trajectory is the two
  halves concatenated along the env axis, so the learner sees ``[T, num_envs]`` as usual. It runs
  under every fused mode (``fragment``, ``iteration``, ``scan``: each half's simulators are called
  back from inside the program through the env fragment's ``io_callback``, so nothing overlaps)
  and is the reference the pipelined plan is tested against.
* :class:`DoubleBufferedPlan` (fusion ``step``) runs the same calls in the same order with the
  same keys, but steps the simulators itself, in Python, between asynchronously dispatched actor
  programs. For each step and each half ``h``: read half ``h``'s actions (dispatched earlier),
  step its simulators on the host, then dispatch the actor on its new observation without
  waiting. The host thus steps one half while the other half's actor program runs.

Keys: each half threads its own key through its actor calls; ``Loop.act`` splits it, inside the
pure functions. The actor's state (an env-step counter for the off-policy algorithms, nothing
for the actor-critics) threads through the calls in their order: half 0 then half 1, step by
step, so a counter still advances by ``num_envs`` per step, half 1 seeing half 0's increment.
Actors must be batch-polymorphic (``[b, obs] -> [b]``), which every built-in one is.

Fusion modes (:data:`FUSION_MODES`): ``step`` runs the double-buffered plan, the fused modes run
:class:`HalvedLoop` with its callbacks, and all give the same numbers for a seed. ``eager`` is
refused (it is for debugging the loop op by op; use placement ``single`` for that). A ``host_env``
run does not equal a ``single`` run of the same seed: its halves' simulators are seeded from keys
of their own and each half draws its own actions. Host simulators live outside JAX, so a
``host_env`` run cannot be checkpointed, evaluated on a JAX environment, or vmapped over seeds.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.algorithm import Algorithm
from jaxrl_fdg.env_fragment import EnvFragmentState
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.fragment import Fragment, published
from jaxrl_fdg.fusion import Plan
from jaxrl_fdg.fusion import make_plan as make_fused_plan
from jaxrl_fdg.loop import Loop, LoopState, RolloutCarry, Transition
from jaxrl_fdg.profiling.timers import Timings

HALVES = 2

# Fusion modes placement host_env accepts: ``step`` runs the double-buffered plan; the fused modes
# run HalvedLoop with the simulators called back from inside the program (no overlap).
FUSION_MODES = ("step", "fragment", "iteration", "scan")


class HalvedLoop(Loop):
    """A :class:`Loop` over two halves of the env batch, each with its own env state and keys.

    ``env`` is the fragment of one half (``num_envs / 2`` environments); the graph state's entry
    for it is a pair ``(half 0's state, half 1's state)``. The learner (and any replay) is built
    for the whole batch: trajectories are ``[T, num_envs]``, half 0's environments first.
    """

    def __init__(
        self, env: Fragment, algorithm: Algorithm, rollout_len: int, simulator: Any = None
    ):
        super().__init__(env, algorithm, rollout_len)
        self.simulator = simulator  # the host simulator behind ``env``, if it is one

    @classmethod
    def for_simulator(
        cls, simulator: Any, num_envs: int, algorithm: Algorithm, rollout_len: int
    ) -> HalvedLoop:
        """``num_envs`` environments of a host ``simulator``, as two halves."""
        from jaxrl_fdg.envs.host import host_env_fragment

        if num_envs % HALVES or num_envs < HALVES:
            raise ConfigError(
                f"placement 'host_env' splits the envs into two halves: num_envs must be even "
                f"(valid: 2, 4, 6, ...), got {num_envs}"
            )
        env = host_env_fragment(simulator, num_envs // HALVES)
        return cls(env, algorithm, rollout_len, simulator)

    # -- state -------------------------------------------------------------------------------

    def init(self, key: jax.Array) -> LoopState:
        """As :meth:`Loop.init`, the env's key split once more: one per half."""
        key, *keys = jax.random.split(key, 1 + len(self.fragments))
        states = {}
        for frag, k in zip(self.fragments, keys, strict=True):
            if frag is self.env_frag:
                states[frag.name] = tuple(frag.init(k_half) for k_half in _split(k))
            else:
                states[frag.name] = frag.init(k)
        return LoopState(states, key, jnp.zeros((), jnp.int32))

    # -- the pure pieces ---------------------------------------------------------------------

    def begin(self, state: LoopState) -> tuple[LoopState, tuple[jax.Array, ...], jax.Array]:
        """As :meth:`Loop.begin`; the rollout key comes split into one key per half."""
        state, k_rollout, k_learn = super().begin(state)
        return state, _split(k_rollout), k_learn

    @staticmethod
    def half(carry: RolloutCarry, h: int) -> RolloutCarry:
        """Half ``h``'s view of a rollout carry: the shared actor state, its env state and key."""
        return RolloutCarry(carry.actor, carry.env[h], carry.key[h])

    def half_step(self, fixed: dict, view: RolloutCarry) -> tuple[RolloutCarry, Transition]:
        """One step of env∘actor for one half: ``(half's carry, half's transition)``."""
        observation = self.observation(view)
        actor_state, actor_out, k_env, key = self.act(
            view.actor, self.actor_inputs(fixed, view), view.key
        )
        view = view._replace(actor=actor_state, key=key)
        env_state, env_out = self.env_step(view.env, self.env_inputs(fixed, view, actor_out), k_env)
        return view._replace(env=env_state), self.transition(observation, actor_out, env_out)

    def rollout_step(self, fixed: dict, carry: RolloutCarry, _: Any = None):
        """Half 0's step, then half 1's (the actor state passed from one to the next); the
        step's transition is the two halves' concatenated along the env axis."""
        actor, envs, keys, transitions = carry.actor, [], [], []
        for h in range(HALVES):
            view, transition = self.half_step(fixed, self.half(carry._replace(actor=actor), h))
            actor = view.actor
            envs.append(view.env)
            keys.append(view.key)
            transitions.append(transition)
        return RolloutCarry(actor, tuple(envs), tuple(keys)), self.join(transitions)

    @staticmethod
    def join(halves: list[Transition]) -> Transition:
        """Transitions of the halves as one of the whole batch (half 0's environments first)."""
        return jax.tree.map(lambda *xs: jnp.concatenate(xs), *halves)

    def published_edges(self, states: dict) -> dict[str, Any]:
        """As :meth:`Loop.published_edges`; the env's edges are its halves' concatenated."""
        edges: dict[str, Any] = {}
        for frag in self.fragments:
            if frag is self.env_frag:
                halves = [published(frag, s) for s in states[frag.name]]
                edges.update(jax.tree.map(lambda *xs: jnp.concatenate(xs), *halves))
            else:
                edges.update(published(frag, states[frag.name]))
        return edges


def host_env_step(
    simulator: Any, state: EnvFragmentState, actions: np.ndarray
) -> tuple[EnvFragmentState, dict[str, np.ndarray]]:
    """One half's env step on the host, in numpy: the host env fragment's ``apply`` without the
    callback (the simulators, then the same episode bookkeeping in the same float32 arithmetic,
    so the result equals the fragment's bit for bit; the tests check it)."""
    from jaxrl_fdg.envs.host import step_simulators

    handle = np.asarray(state.env)
    observation, reward, terminated, truncated, final = step_simulators(simulator, handle, actions)
    done = terminated | truncated
    episode_return = np.asarray(state.episode_return) + reward
    episode_length = np.asarray(state.episode_length) + np.int32(1)
    new_state = EnvFragmentState(
        handle,
        observation,
        np.where(done, np.float32(0), episode_return),
        np.where(done, np.int32(0), episode_length),
    )
    outputs = {
        "reward": reward,
        "terminated": terminated,
        "truncated": truncated,
        "next_observation": final,
        "episode_return": episode_return,
        "episode_length": episode_length,
    }
    return new_state, outputs


class DoubleBufferedPlan(Plan):
    """Fusion ``step`` for placement ``host_env``: the host steps one half of the environments
    while the device computes the other half's actions.

    Compiled programs: ``keys`` (begin), ``actor`` (one half's policy call), ``stack`` (the
    trajectory, from the actor's outputs and the env's side, which the host has already stacked
    in numpy) and ``learner``. The simulators are stepped in Python in scope ``env``, whose
    ``device_s`` is the host waiting for a half's actions and ``dispatch_s`` the stepping. Each
    iteration drains the pipeline before the learner, whose new parameters the next rollout's
    actor calls need.

    Args:
      pipelined: ``False`` waits for each actor call as soon as it is dispatched, so the host
        never steps while device work is in flight: the same computation without the overlap,
        for measuring what the overlap gains.
      schedule: a list to record the order of events in (for tests and diagnosis), or ``None``.
        Entries are ``("dispatch", h, t)`` when half ``h``'s actor call for step ``t`` is
        dispatched, and ``("host_start" | "host_end", h, t, other)`` around the host stepping of
        half ``h`` at step ``t``, where ``other`` says whether the other half's in-flight
        actions were ready then (``None`` when none is in flight).
    """

    mode = "step"

    def __init__(
        self,
        loop: HalvedLoop,
        timings: Timings | None = None,
        *,
        pipelined: bool = True,
        schedule: list | None = None,
    ):
        if not isinstance(loop, HalvedLoop) or loop.simulator is None:
            raise TypeError(
                "the double-buffered plan needs a HalvedLoop of host simulators "
                "(HalvedLoop.for_simulator)"
            )
        super().__init__(loop, timings)
        self.pipelined = pipelined
        self.schedule = schedule
        self.simulator = loop.simulator

    def _signatures(self, state):
        loop: HalvedLoop = self.loop
        state_b, keys, k_learn = jax.eval_shape(loop.begin, state)
        fixed = loop.fixed_edges(state.fragments)
        view = loop.half(loop.rollout_carry(state.fragments, keys), 0)
        actor_args = (view.actor, loop.actor_inputs(fixed, view), view.key)
        _, actor_out, k_env, _ = jax.eval_shape(loop.act, *actor_args)
        env_args = (view.env, loop.env_inputs(fixed, view, actor_out), k_env)
        _, env_out = jax.eval_shape(loop.env_step, *env_args)
        host_side = {"observation": loop.observation(view), **env_out}
        stacked = {  # [T, num_envs, ...]: the halves concatenated, the steps stacked
            k: jax.ShapeDtypeStruct((loop.rollout_len, HALVES * x.shape[0], *x.shape[1:]), x.dtype)
            for k, x in host_side.items()
        }
        actor_outs = [[actor_out] * HALVES] * loop.rollout_len
        trajectory = jax.eval_shape(self._stack, actor_outs, stacked)
        return {
            "keys": (loop.begin, (state,)),
            "actor": (loop.act, actor_args),
            "stack": (self._stack, (actor_outs, stacked)),
            "learner": (loop.learn, (state_b, trajectory, k_learn)),
        }

    def _stack(self, actor_outs: list[list[dict]], host_side: dict) -> Transition:
        """The trajectory ``[T, num_envs]``: the actor's outputs (``[T][half]``, on the device)
        joined and stacked here; observations and env outputs stacked already, on the host."""
        loop: HalvedLoop = self.loop
        actor_out = loop.stack([loop.join(halves) for halves in actor_outs])
        env_out = {k: v for k, v in host_side.items() if k != "observation"}
        return loop.transition(host_side["observation"], actor_out, env_out)

    def _advance(self, state, n):
        per_iteration = []
        for _ in range(n):
            state, metrics = self._iteration(state)
            per_iteration.append(metrics)
        return state, per_iteration

    def _iteration(self, state: LoopState) -> tuple[LoopState, Any]:
        loop: HalvedLoop = self.loop
        state, keys, k_learn = self._call("keys", state)
        fixed = loop.fixed_edges(state.fragments)
        actor = state.fragments[loop.actor.name]
        envs, keys = list(state.fragments[loop.env_frag.name]), list(keys)
        in_flight: list[Any] = [None] * HALVES  # each half's actor outputs, once dispatched

        def dispatch(h: int, t: int) -> None:
            """Half ``h``'s actor call for step ``t``, dispatched without waiting."""
            nonlocal actor
            view = RolloutCarry(actor, envs[h], keys[h])
            # The env key is unused: host simulators keep their own random streams.
            actor, in_flight[h], _, keys[h] = self._call(
                "actor", actor, loop.actor_inputs(fixed, view), keys[h]
            )
            if not self.pipelined:
                with self.timings.scope("actor"):
                    self.timings.wait(in_flight[h])
            self._record("dispatch", h, t)

        for h in range(HALVES):
            dispatch(h, 0)
        actor_outs, host_side = [], []
        for t in range(loop.rollout_len):
            actor_step, host_step = [], []
            for h in range(HALVES):
                actor_out, in_flight[h] = in_flight[h], None
                observation = np.asarray(envs[h].observation)
                with self.timings.scope("env"):
                    actions = self.timings.device_get(actor_out["action"])
                    self._record("host_start", h, t, self._ready(in_flight[1 - h]))
                    envs[h], env_out = host_env_step(self.simulator, envs[h], actions)
                    self._record("host_end", h, t, self._ready(in_flight[1 - h]))
                actor_step.append(actor_out)
                host_step.append({"observation": observation, **env_out})
                if t + 1 < loop.rollout_len:
                    dispatch(h, t + 1)
            actor_outs.append(actor_step)
            host_side.append(host_step)
        trajectory = self._call("stack", actor_outs, _stack_on_host(host_side))
        fragments = {**state.fragments, loop.actor.name: actor, loop.env_frag.name: tuple(envs)}
        return self._call("learner", state._replace(fragments=fragments), trajectory, k_learn)

    def _record(self, *event: Any) -> None:
        if self.schedule is not None:
            self.schedule.append(event)

    def _ready(self, pending: Any) -> bool | None:
        if self.schedule is None or pending is None:
            return None
        return bool(pending["action"].is_ready())


def _stack_on_host(steps: list[list[dict[str, np.ndarray]]]) -> dict[str, np.ndarray]:
    """Per-step, per-half numpy records as ``{name: [T, num_envs, ...]}`` (half 0 first): a copy,
    so the values are exactly those the pure definition's ``join`` and ``stack`` produce."""
    return {
        k: np.stack([np.concatenate([half[k] for half in halves]) for halves in steps])
        for k in steps[0][0]
    }


def make_plan(mode: str, loop: HalvedLoop, timings: Timings | None = None, chunk: int = 1) -> Plan:
    """The plan of placement ``host_env`` for fusion ``mode``: the double-buffered plan for
    ``step``, the usual fused plans (running :class:`HalvedLoop`) otherwise."""
    if mode not in FUSION_MODES:
        raise ConfigError(
            f"placement 'host_env' runs fusion modes {', '.join(FUSION_MODES)}, got {mode!r}"
        )
    if mode == "step":
        return DoubleBufferedPlan(loop, timings)
    return make_fused_plan(mode, loop, timings, chunk)


def simulator_handles(loop: Loop, state: LoopState) -> list[int]:
    """The handles of the host simulators in ``state`` (one per half for a :class:`HalvedLoop`),
    for :func:`jaxrl_fdg.envs.host.close`."""
    env_state = state.fragments[loop.env_frag.name]
    halves = env_state if isinstance(loop, HalvedLoop) else (env_state,)
    return [int(np.asarray(half.env)) for half in halves]


def _split(key: jax.Array) -> tuple[jax.Array, ...]:
    return tuple(jax.random.split(key, HALVES))

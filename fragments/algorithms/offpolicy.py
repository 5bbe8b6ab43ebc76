"""What every off-policy algorithm shares: its replay configuration, the replay fragment that
turns rollouts into n-step experience, and the update-to-data schedule.

An off-policy algorithm (DQN, SAC, TD3, DDPG) supplies an actor and a learner whose ``apply``
reads the edge ``batch`` (a :class:`Batch` of :class:`Experience` and importance weights) and
outputs ``metrics`` and ``td_error``. :func:`replay` builds the replay fragment and
:func:`update_rounds` the learner's cadence: ``utd_ratio × B × T`` rounds per iteration once the
warm-up is over, each one the replay's ``sample`` → the learner → the replay's ``update`` (new
priorities from the ``td_error`` for the :class:`Slots` the batch came from, which travel apart
from it, on ``batch_slots``), an order the graph derives from those edges.

Any other fragment can draw batches of its own from the same replay: :func:`sampler` makes a
method for the replay fragment that writes them to an edge the fragment reads (add it with
``Fragment.with_methods``; the graph runs it in the node of its reader).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import AlgorithmContext, hparam
from jaxrl_fdg.core.cadence import Condition, Rounds, condition, rounds
from jaxrl_fdg.core.fragment import Fragment, Method, Role, fragment
from jaxrl_fdg.core.names import (
    BATCH,
    BATCH_SLOTS,
    ENV_STEPS,
    METRICS,
    NEXT_ACTION_MASK,
    OBSERVATION_MOMENTS,
    PARAMS,
    REPLAY_READY,
    REPLAY_SIZE,
    TD_ERROR,
    TRAJECTORY,
)
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.spaces import Box, Discrete
from jaxrl_fdg.errors import ConfigError, SpaceMismatch
from jaxrl_fdg.fragments import exploration, losses
from jaxrl_fdg.fragments.normalization import Normalized as Normalized
from jaxrl_fdg.fragments.normalization import normalized_observations as normalized_observations
from jaxrl_fdg.fragments.normalization import standardized as standardized
from jaxrl_fdg.fragments.replay import (
    FrameReplay,
    linear_beta,
    make_frame_replay,
    make_prioritized,
    make_uniform,
)
from jaxrl_fdg.fragments.replay.sum_tree import MAX_ARITY, MIN_ARITY

REPLAY_KINDS = ("uniform", "prioritized")
STORAGE_KINDS = ("auto", "transitions", "frames")
# The edge on which the observation-moments fragment publishes its running moments. That
# fragment and the learner it wraps are fragments.normalization's (normalized_observations,
# standardized, Normalized), imported above so that they stay importable from here too.
MOMENTS = OBSERVATION_MOMENTS


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig:
    """Hyperparameters shared by the off-policy algorithms (each is a ``--flag``).

    With ``B`` envs and rollouts of ``T`` steps, each iteration makes ``utd_ratio · B · T``
    gradient updates, which must be a whole number. ``priority_beta`` is annealed linearly to 1
    over the run.
    """

    buffer_size: int = hparam(100_000, "replay capacity in transitions")
    batch_size: int = hparam(256, "transitions per gradient update")
    learning_starts: int = hparam(5_000, "env steps of warm-up: random actions, no updates")
    utd_ratio: float = hparam(1.0, "gradient updates per env step, the update-to-data ratio")
    n_step: int = hparam(1, "length of the n-step returns stored in the replay")
    replay: str = hparam("uniform", "uniform or prioritized (Schaul et al. 2016)")
    tree_arity: int = hparam(8, "arity of the prioritized replay's sum tree")
    priority_alpha: float = hparam(0.6, "priority exponent α of the prioritized replay")
    priority_beta: float = hparam(0.4, "initial importance-sampling exponent β, annealed to 1")
    replay_storage: str = hparam(
        "auto",
        "transitions (each observation with its next), frames (each frame once, stacks and next "
        "observations rebuilt on sampling) or auto (frames for uint8 observations)",
    )
    frame_stack: int = hparam(
        0,
        "frames stacked on the observation's last axis, stored once each by frame storage; "
        "0 takes the environment's (EnvPool Atari: 4; otherwise 1, whole observations)",
    )

    def __post_init__(self) -> None:
        for name in ("buffer_size", "batch_size", "n_step"):
            validate.positive_int(name, getattr(self, name))
        validate.non_negative("learning_starts", self.learning_starts)
        validate.in_range("utd_ratio", self.utd_ratio, 0.0, 1024.0, low_open=True)
        validate.choice("replay", self.replay, REPLAY_KINDS)
        validate.choice("replay_storage", self.replay_storage, STORAGE_KINDS)
        if isinstance(self.frame_stack, bool) or not isinstance(self.frame_stack, int):
            raise ConfigError(f"frame_stack must be an integer, got {self.frame_stack!r}")
        validate.in_range("frame_stack", self.frame_stack, 0, 255)
        if not MIN_ARITY <= self.tree_arity <= MAX_ARITY or isinstance(self.tree_arity, bool):
            raise ConfigError(
                f"tree_arity must be an integer in [{MIN_ARITY}, {MAX_ARITY}], "
                f"got {self.tree_arity!r}"
            )
        validate.in_range("priority_alpha", self.priority_alpha, 0.0, 1.0)
        validate.in_range("priority_beta", self.priority_beta, 0.0, 1.0)
        if self.batch_size > self.buffer_size:
            raise ConfigError(
                f"batch_size = {self.batch_size} exceeds buffer_size = {self.buffer_size}"
            )


class Experience(NamedTuple):
    """One stored transition with its n-step return:

        reward   = Σ_{j<k} γ^j r_{t+j}
        discount = γ^k if the episode did not terminate within the k steps, else 0
        next_observation = s_{t+k}

    where ``k ≤ n`` stops early at the end of an episode or of the rollout window. A learner's
    TD target is ``reward + discount · V(next_observation)`` whatever ``n`` is.
    """

    observation: jax.Array
    action: jax.Array
    reward: jax.Array
    discount: jax.Array
    next_observation: jax.Array
    next_action_mask: jax.Array | None = None  # legal actions at next_observation, if masked


class Batch(NamedTuple):
    """What a learner reads of a sampled batch: the transitions (:class:`Experience` ``[N]``)
    and their importance weights ``[N]`` (ones for uniform replay; 0 for a transition that could
    not be rebuilt)."""

    transitions: Any
    weights: jax.Array


class Slots(NamedTuple):
    """Where a batch came from, for the replay's own bookkeeping: the slots ``[N]``, their write
    counts when sampled (a priority update skips a slot overwritten since) and the sampling
    probabilities."""

    indices: jax.Array
    writes: jax.Array
    probabilities: jax.Array


def updates_per_iteration(ctx: AlgorithmContext[OffPolicyConfig]) -> int:
    """``utd_ratio × num_envs × rollout_len``, which must be a whole number ≥ 1."""
    hp = ctx.hparams
    exact = hp.utd_ratio * ctx.batch_size
    if exact < 1 or abs(exact - round(exact)) > 1e-6:
        raise ConfigError(
            f"utd_ratio = {hp.utd_ratio} × num_envs × rollout_len = {ctx.batch_size} gives "
            f"{exact:g} updates per iteration; it must be a whole number ≥ 1"
        )
    return round(exact)


def check(ctx: AlgorithmContext[OffPolicyConfig]) -> None:
    """The checks every off-policy algorithm makes before compiling."""
    hp = ctx.hparams
    updates_per_iteration(ctx)
    storage(ctx)
    if hp.n_step > ctx.rollout_len:
        raise ConfigError(
            f"n_step = {hp.n_step} exceeds rollout_len = {ctx.rollout_len}: n-step returns are "
            f"computed within a rollout; use rollout_len ≥ {hp.n_step}"
        )
    if ctx.batch_size > hp.buffer_size:
        raise ConfigError(
            f"one rollout (num_envs × rollout_len = {ctx.batch_size}) exceeds "
            f"buffer_size = {hp.buffer_size}"
        )


def check_box(name: str, space: Any) -> None:
    """Continuous-control algorithms need a bounded Box action space."""
    if not isinstance(space, Box):
        raise SpaceMismatch(f"{name} needs a Box action space, got {type(space).__name__}")
    low, high = jnp.asarray(space.low), jnp.asarray(space.high)
    if not (bool(jnp.all(jnp.isfinite(low))) and bool(jnp.all(jnp.isfinite(high)))):
        raise ConfigError(f"{name} needs a bounded action space, got low={low}, high={high}")


def n_step_experience(trajectory: Any, gamma: float, n: int) -> Experience:
    """The rollout ``[T, B]`` as ``T · B`` flat :class:`Experience` records of n-step returns."""
    reward, discount, next_index = losses.n_step_returns(
        trajectory.reward, trajectory.terminated, trajectory.truncated, gamma, n
    )

    def at_next(x: jax.Array) -> jax.Array:
        index = next_index.reshape(*next_index.shape, *(1,) * (x.ndim - 2))
        return jnp.take_along_axis(x, index, axis=0)

    next_observation = jax.tree.map(at_next, trajectory.next_observation)
    next_mask = trajectory.info.get(NEXT_ACTION_MASK)
    experience = Experience(
        trajectory.observation,
        trajectory.action,
        reward,
        discount,
        next_observation,
        None if next_mask is None else at_next(next_mask),
    )
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), experience)


def example_experience(ctx: AlgorithmContext) -> Experience:
    obs_space, act_space = ctx.observation_space, ctx.action_space
    observation = spaces.example(obs_space)
    dtype = jnp.int32 if isinstance(act_space, Discrete) else act_space.dtype
    scalar = jnp.zeros((), jnp.float32)
    mask = jnp.ones((act_space.n,), bool) if ctx.has_action_mask else None
    action = jnp.zeros(act_space.shape, dtype)
    return Experience(observation, action, scalar, scalar, observation, mask)


def storage(ctx: AlgorithmContext[OffPolicyConfig]) -> tuple[str, int]:
    """``(kind, K)``: how the replay stores observations (``"transitions"`` or ``"frames"``) and,
    for frames, how many are stacked on the observation's last axis.

    ``replay_storage = "auto"`` picks frames for uint8 observations (images); ``frame_stack = 0``
    takes the environment's ``frame_stack`` attribute (EnvPool's Atari tasks and
    :class:`~jaxrl_fdg.envs.FrameStack` declare one), else 1.
    """
    hp, space = ctx.hparams, ctx.observation_space
    kind = hp.replay_storage
    structured = spaces.is_nested(space) or ctx.has_action_mask
    if kind == "auto":
        frames = not structured and jnp.dtype(space.dtype) == jnp.uint8
        kind = "frames" if frames else "transitions"
    if kind == "transitions":
        return kind, 1
    if structured:
        raise ConfigError(
            "replay_storage = frames stores one image observation per step; this environment's "
            "observations are structured or come with an action mask: use replay_storage = "
            "transitions (or auto)"
        )
    stack = hp.frame_stack or int(getattr(ctx.env, "frame_stack", 1) or 1)
    shape = tuple(space.shape)
    if stack > 1 and (not shape or shape[-1] != stack):
        raise ConfigError(
            f"frame_stack = {stack} needs observations whose last axis holds {stack} frames; "
            f"they are {shape} (use frame_stack = 1 to store whole observations)"
        )
    if hp.buffer_size % ctx.num_envs:
        lower = hp.buffer_size - hp.buffer_size % ctx.num_envs
        raise ConfigError(
            f"frame storage needs buffer_size = {hp.buffer_size} to be a multiple of num_envs = "
            f"{ctx.num_envs} (e.g. {lower}), or replay_storage = transitions"
        )
    return kind, stack


def replay_buffer(
    ctx: AlgorithmContext[OffPolicyConfig], gamma: float, batch_size: int | None = None
) -> FrameReplay:
    """The replay's pure functions from :class:`OffPolicyConfig` fields of ``ctx.hparams``,
    storing observations as :func:`storage` says: whole n-step transitions (``gamma`` discounts
    their returns), or each frame once (:mod:`~jaxrl_fdg.fragments.replay.frames`). Either way
    ``init(example_observation, example_action)`` makes the state, ``store`` takes a rollout,
    and the sampled batches are the same. ``sample`` draws ``batch_size`` transitions (default
    ``hparams.batch_size``); the state does not depend on it, so replays built with other batch
    sizes sample the same state."""
    hp = ctx.hparams
    size = hp.batch_size if batch_size is None else batch_size
    if hp.replay == "prioritized":
        buffer = make_prioritized(
            hp.buffer_size, size, alpha=hp.priority_alpha, arity=hp.tree_arity
        )
    else:
        buffer = make_uniform(hp.buffer_size, size)
    kind, stack = storage(ctx)
    if kind == "frames":
        return make_frame_replay(
            buffer,
            capacity=hp.buffer_size,
            num_envs=ctx.num_envs,
            rollout_len=ctx.rollout_len,
            stack=stack,
            n_step=hp.n_step,
            gamma=gamma,
            make_transitions=Experience,
        )

    def init(observation, action):
        scalar = jnp.zeros((), jnp.float32)
        mask = jnp.ones((ctx.action_space.n,), bool) if ctx.has_action_mask else None
        return buffer.init(Experience(observation, action, scalar, scalar, observation, mask))

    def store(state, trajectory):
        return buffer.add(state, n_step_experience(trajectory, gamma, hp.n_step))

    def lookup(state, indices):
        transitions = jax.tree.map(lambda x: x[indices], state.storage)
        return transitions, jnp.ones(indices.shape, bool)

    return FrameReplay(
        init, store, buffer.sample, lookup, buffer.update_priorities, buffer.can_sample
    )


def sampler(
    ctx: AlgorithmContext[OffPolicyConfig],
    gamma: float,
    name: str,
    output: str,
    *,
    batch_size: int | None = None,
    slots: str | None = None,
    cadence: Any = None,
) -> Method:
    """A method for the replay fragment that samples ``batch_size`` transitions (default: the
    learner's) into edge ``output`` (a :class:`Batch`) and, with ``slots``, where they came from
    into that edge (:class:`Slots`). Prioritized replay draws by priority with the learner's
    importance-sampling exponent. Whoever reads ``output`` declares it: the graph runs the
    method in that reader's node (or as ``cadence`` says)."""
    buffer = replay_buffer(ctx, gamma, batch_size)
    beta = linear_beta(ctx.hparams.priority_beta, ctx.num_iterations * ctx.batch_size)

    def sample(state, inputs, key):
        drawn = buffer.sample(state, key, beta(inputs[ENV_STEPS]))
        out = {output: Batch(drawn.transitions, drawn.weights)}
        if slots is not None:
            out[slots] = Slots(drawn.indices, drawn.writes, drawn.probabilities)
        return state, out

    outputs = (output,) if slots is None else (output, slots)
    return Method(name, sample, inputs=(ENV_STEPS,), outputs=outputs, cadence=cadence)


def replay(ctx: AlgorithmContext[OffPolicyConfig], gamma: float) -> Fragment:
    """The replay fragment over :func:`replay_buffer`: its ``apply`` stores each rollout as
    n-step experience (``gamma`` discounts the returns), its ``sample`` method writes the
    ``batch`` of a round and its :class:`Slots` (:func:`sampler`), its ``update`` method takes
    the ``td_error`` as new priorities of those slots. It publishes ``replay_size`` and
    ``replay_ready`` (enough stored to sample a batch)."""
    buffer = replay_buffer(ctx, gamma)
    example = example_experience(ctx)

    def store(state, inputs, key):
        del key
        return buffer.store(state, inputs[TRAJECTORY]), {}

    def update(state, inputs, key):
        del key  # deterministic: new priorities for the sampled slots
        drawn = inputs[BATCH_SLOTS]
        return buffer.update_priorities(state, drawn.indices, drawn.writes, inputs[TD_ERROR]), {}

    return fragment(
        "replay",
        Role.REPLAY,
        store,
        init=lambda key: buffer.init(example.observation, example.action),
        inputs=(TRAJECTORY,),
        publish=lambda state: {REPLAY_SIZE: state.size, READY: buffer.can_sample(state)},
        published=(REPLAY_SIZE, READY),
        methods=(
            sampler(ctx, gamma, "sample", BATCH, slots=BATCH_SLOTS),
            Method("update", update, inputs=(BATCH_SLOTS, TD_ERROR)),
        ),
    )


# The edge on which the replay publishes whether it holds enough to sample a batch.
READY = REPLAY_READY


def warmed_up(learning_starts: int) -> Condition:
    """Once ``learning_starts`` env steps have been collected and the replay can sample."""
    return condition(
        lambda edges: (edges[ENV_STEPS] >= learning_starts) & edges[READY],
        (ENV_STEPS, READY),
        f"env_steps >= {learning_starts} and the replay is ready",
    )


def update_rounds(ctx: AlgorithmContext[OffPolicyConfig]) -> Rounds:
    """An off-policy learner's cadence: :func:`updates_per_iteration` rounds per iteration once
    it has :func:`warmed_up`."""
    return rounds(updates_per_iteration(ctx), when=warmed_up(ctx.hparams.learning_starts))


def update_target(target: Any, online: Any, updates: jax.Array, tau: float, period: int) -> Any:
    """Every ``period`` learner updates, ``target ← τ · online + (1 − τ) · target``.

    ``τ = 1`` with a long period is DQN's periodic copy (Mnih et al. 2015); ``period = 1`` with a
    small ``τ`` is the Polyak averaging of DDPG, TD3 and SAC (Lillicrap et al. 2016).
    ``updates`` counts the updates made, this one included.
    """
    return optax.periodic_update(
        optax.incremental_update(online, target, tau), target, updates, period
    )


def actor_and_learner(
    ctx: AlgorithmContext[OffPolicyConfig],
    act: Any,
    init: Any,
    learn: Any,
    params: Any,
    inputs: tuple[str, ...] = (),
) -> tuple[Fragment, Fragment]:
    """The two fragments every off-policy algorithm declares alike.

    The actor's state counts the env steps taken (``act(steps, inputs, key)`` reads the
    learner's published ``params`` and the ``observation``); the learner runs in
    :func:`update_rounds`, reads ``batch`` (and any further ``inputs``) and outputs ``metrics``
    and ``td_error``, publishing ``params(state)`` for the actor.
    """
    actor = exploration.counting_actor(act, masked=ctx.has_action_mask)
    learner = fragment(
        "learner",
        Role.LEARNER,
        learn,
        init=init,
        inputs=(BATCH, *inputs),
        outputs=(METRICS, TD_ERROR),
        publish=lambda state: {PARAMS: params(state)},
        published=(PARAMS,),
        cadence=update_rounds(ctx),
    )
    return actor, learner

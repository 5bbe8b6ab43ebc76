"""The names of the edges the built-in fragments and the loop share, and of the metrics every run
reports, each defined once.

A fragment declares the edges it reads and writes by name (``inputs=(OBSERVATION, PARAMS)``);
two fragments are connected where one writes or publishes a name the other reads
(:mod:`jaxrl_fdg.core.graph`). The names below are those of the built-in env fragment, actors,
learners, replay and evaluator, and of the loop: a fragment written elsewhere connects to them by
the same strings, with or without these constants.

Shapes: ``B`` is the number of environments stepped together, ``T`` the rollout's length, ``N``
a replay batch's size; ``[]`` is a scalar.

:data:`ITERATION` is the loop's edge ``iteration``, which :mod:`jaxrl_fdg.core.graph` calls
``ITERATION_EDGE``; :data:`jaxrl_fdg.core.cadence.ITERATION` is a cadence, not an edge.
"""

from __future__ import annotations

# Environment edges: the env fragment's outputs at each step, and what it publishes.

OBSERVATION = "observation"  # published: the observation to act on, [B, *obs_shape]
EPISODE_STEP = "episode_step"  # published: steps its episode took before it, int32 [B] (0: first)
REWARD = "reward"  # the step's reward, float32 [B]
TERMINATED = "terminated"  # the step reached a terminal state (no bootstrap), bool [B]
TRUNCATED = "truncated"  # the episode was cut short (time limit), bool [B]
NEXT_OBSERVATION = "next_observation"  # the observation reached, before any reset, [B, *obs_shape]
EPISODE_RETURN = "episode_return"  # the ended episode's return, float32 [B] (where it ended)
EPISODE_LENGTH = "episode_length"  # the ended episode's length, int32 [B] (where it ended)
# A masked env's edges, named where the environment API defines them (jaxrl_fdg.envs.base):
# ACTION_MASK, published: the legal actions at observation, bool [B, n]; NEXT_ACTION_MASK, an
# output: the legal actions at next_observation, bool [B, n].
from jaxrl_fdg.envs.base import ACTION_MASK, NEXT_ACTION_MASK  # noqa: E402

# Actor edges: what an actor writes at each step (all but ACTION land in trajectory.extras).

ACTION = "action"  # the action the env takes, [B, *action_shape]
LOG_PROB = "log_prob"  # log-probability of the sampled action under the acting policy, float32 [B]
VALUE = "value"  # the critic's value of the observation acted on, float32 [B]
RAW_ACTION = "raw_action"  # a Gaussian policy's unclipped sample, float32 [B, A]
MEMORY = "memory"  # a recurrent actor's memory it acted from (after any reset), float32 [B, W]
EPISODE_START = "episode_start"  # where the recurrent actor reset its memory, bool [B]

# Learner and replay edges.

PARAMS = "params"  # published by a learner: the parameters its actor and evaluation play, pytree
BATCH = "batch"  # a replay's Batch: N Experience records [N, ...] and their weights [N]
BATCH_SLOTS = "batch_slots"  # where the batch came from: slots, write counts, probabilities [N]
TD_ERROR = "td_error"  # an off-policy learner's TD errors of the batch (new priorities), [N]
REPLAY_SIZE = "replay_size"  # published by a replay: transitions it holds, int32 []
REPLAY_READY = "replay_ready"  # published by a replay: it holds enough to sample a batch, bool []
OBSERVATION_MOMENTS = "observation_moments"  # published: running observation moments, pytree

# Loop edges: what the loop itself provides (jaxrl_fdg.core.graph).

TRAJECTORY = "trajectory"  # the rollout, a Transition of [T, B, ...]
ENV_STEPS = "env_steps"  # env steps taken, this rollout's included, int32 []
ITERATION = "iteration"  # the iteration being run, from 1, int32 []
METRICS = "metrics"  # a fragment's metrics for the iteration's log, dict of float32 []

# Episode metric names: what every run logs per iteration (jaxrl_fdg.core.loop, .learn).

EPISODES = "episodes"  # episodes that ended in the rollout, float32 []
EPISODE_RETURN_SUM = "episode_return_sum"  # sum of their returns, float32 []
EPISODE_LENGTH_SUM = "episode_length_sum"  # sum of their lengths, float32 []
UPDATES = "updates"  # rounds the primary learner ran (another's: <fragment>/updates), float32 []
RUNS = "runs"  # <fragment>/runs of a periodic node: 1 where it ran, else 0, float32 []

# Evaluation metric names: an evaluator's outputs.

EVAL_RETURN = "eval_return"  # mean return of the deterministic policy's episodes, float32 []
EVAL_RETURN_STD = "eval_return_std"  # standard deviation of those returns, float32 []
EVAL_LENGTH = "eval_length"  # mean length of those episodes, float32 []

__all__ = [
    "ACTION",
    "ACTION_MASK",
    "BATCH",
    "BATCH_SLOTS",
    "ENV_STEPS",
    "EPISODES",
    "EPISODE_LENGTH",
    "EPISODE_LENGTH_SUM",
    "EPISODE_RETURN",
    "EPISODE_RETURN_SUM",
    "EPISODE_START",
    "EPISODE_STEP",
    "EVAL_LENGTH",
    "EVAL_RETURN",
    "EVAL_RETURN_STD",
    "ITERATION",
    "LOG_PROB",
    "MEMORY",
    "METRICS",
    "NEXT_ACTION_MASK",
    "NEXT_OBSERVATION",
    "OBSERVATION",
    "OBSERVATION_MOMENTS",
    "PARAMS",
    "RAW_ACTION",
    "REPLAY_READY",
    "REPLAY_SIZE",
    "REWARD",
    "RUNS",
    "TD_ERROR",
    "TERMINATED",
    "TRAJECTORY",
    "TRUNCATED",
    "UPDATES",
    "VALUE",
]

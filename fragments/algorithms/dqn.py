"""Deep Q-Networks with double Q-learning, dueling heads, n-step returns, ε-greedy exploration
and uniform or prioritized replay, as an actor and a learner fragment.

Mnih et al. (2015), "Human-level control through deep reinforcement learning", Nature 518:

    y = r + γ^k (1 − terminated) · max_a Q_target(s', a)          (k-step return, k ≤ n)
    L = E_w[ℓ(Q(s, a) − y)]                                        (ℓ: Huber or squared error)

with options from Rainbow's ablations (Hessel et al. 2018, arXiv:1710.02298): double Q-learning
(van Hasselt et al. 2016) bootstraps from ``Q_target(s', argmax_a Q(s', a))``; dueling heads (Wang
et al. 2016); n-step returns; prioritized replay (Schaul et al. 2016) weights the loss by
importance weights ``w`` and feeds ``|Q(s, a) − y|`` back as priorities.

What the network outputs and what it learns from is a :class:`QHead`; the rest (actor, learner
step, target network, replay) is :func:`build_q_learning`, which C51 (:mod:`.c51`) shares.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrl_fdg import validate
from jaxrl_fdg.core.algorithm import Algorithm, AlgorithmContext, AlgorithmSpec, hparam
from jaxrl_fdg.core.names import (
    ACTION,
    ACTION_MASK,
    BATCH,
    METRICS,
    OBSERVATION,
    PARAMS,
    TD_ERROR,
)
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.envs.spaces import Discrete
from jaxrl_fdg.errors import SpaceMismatch
from jaxrl_fdg.fragments import exploration, losses
from jaxrl_fdg.fragments.algorithms import offpolicy
from jaxrl_fdg.fragments.networks import (
    ACTIVATIONS,
    TORSO_HELP,
    TORSOS,
    QNetwork,
    check_torso,
    hidden_features,
)
from jaxrl_fdg.fragments.torsos import observation_ndim

TD_LOSSES = ("huber", "mse")


@dataclasses.dataclass(frozen=True)
class DQNConfig(offpolicy.OffPolicyConfig):
    """DQN hyperparameters (each is a ``--flag`` of ``jaxrl-fdg train``), on top of the replay
    settings every off-policy algorithm shares.

    The defaults are CleanRL's ``dqn.py`` CartPole settings (Huang et al. 2022, JMLR 23(274)):
    Adam 2.5e-4, squared TD error, a 10k buffer, batches of 128, 10k warm-up steps, ε from 1 to
    0.05 over half the run, an update every 8 env steps and a target copy every 50 updates
    (CleanRL: every 500 env steps with an update every 10), a 120-84 ReLU MLP.
    """

    lr: float = hparam(2.5e-4, "learning rate of Adam")
    gamma: float = hparam(0.99, "discount factor γ")
    double_q: bool = hparam(True, "double Q-learning: the online network picks the next action")
    dueling: bool = hparam(False, "dueling head: Q = V + A − mean(A)")
    td_loss: str = hparam("mse", "loss on the TD error: mse or huber")
    target_update_period: int = hparam(50, "gradient updates between target network updates")
    tau: float = hparam(1.0, "each target update's Polyak rate τ; 1 copies the network")
    epsilon_start: float = hparam(1.0, "ε-greedy's ε at the start of the run")
    epsilon_end: float = hparam(0.05, "ε-greedy's ε at the end of its linear decay")
    epsilon_fraction: float = hparam(0.5, "fraction of the run over which ε decays")
    max_grad_norm: float = hparam(10.0, "clip gradients to this global norm")
    hidden_sizes: tuple[int, ...] = hparam((120, 84), "layer sizes of the Q network's MLP")
    activation: str = hparam("relu", f"hidden-layer activation: {', '.join(ACTIVATIONS)}")
    torso: str = hparam("mlp", TORSO_HELP)
    buffer_size: int = hparam(10_000, "replay capacity in transitions")
    batch_size: int = hparam(128, "transitions per gradient update")
    learning_starts: int = hparam(10_000, "env steps of warm-up: random actions, no updates")
    utd_ratio: float = hparam(0.125, "gradient updates per env step, the update-to-data ratio")

    def __post_init__(self) -> None:
        super().__post_init__()
        validate.in_range("lr", self.lr, 0.0, 1.0, low_open=True)
        validate.in_range("gamma", self.gamma, 0.0, 1.0)
        validate.choice("td_loss", self.td_loss, TD_LOSSES)
        validate.positive_int("target_update_period", self.target_update_period)
        validate.in_range("tau", self.tau, 0.0, 1.0, low_open=True)
        for name in ("epsilon_start", "epsilon_end", "epsilon_fraction"):
            validate.in_range(name, getattr(self, name), 0.0, 1.0)
        validate.non_negative("max_grad_norm", self.max_grad_norm)
        validate.layer_sizes("hidden_sizes", self.hidden_sizes)
        validate.choice("activation", self.activation, ACTIVATIONS)
        validate.choice("torso", self.torso, TORSOS)


class DQNState(NamedTuple):
    params: Any
    target_params: Any
    opt_state: optax.OptState
    updates: jax.Array


class QHead(NamedTuple):
    """What a Q-learning variant plugs into the DQN machinery: how its network's output reads as
    action values and what it learns from. Replay, n-step returns, ε-greedy, the warm-up, the
    optimizer and the target network are the same for every head.

    Attributes:
      network: the flax module; ``network.init(key, observation)`` makes the parameters.
      q_values: ``(params, observation [B, ...]) -> [B, A]``, what ε-greedy and the evaluation
        policy take the argmax of.
      target: ``(params, target_params, experience) -> target``, the bootstrapped target of a
        batch of :class:`~jaxrl_fdg.fragments.algorithms.offpolicy.Experience`, without gradient.
      loss: ``(params, experience, target) -> (per_sample [B], td_error [B], metrics)``: the
        loss per transition (the learner weights it by the replay's importance weights), what
        prioritized replay takes ``|·|`` of as priority, and scalar metrics.
    """

    network: Any
    q_values: Callable[[Any, jax.Array], jax.Array]
    target: Callable[[Any, Any, Any], Any]
    loss: Callable[[Any, Any, Any], tuple[jax.Array, jax.Array, dict[str, jax.Array]]]


def check(ctx: AlgorithmContext[DQNConfig]) -> None:
    check_discrete(ctx, "dqn")


def check_discrete(ctx: AlgorithmContext[DQNConfig], name: str) -> None:
    """The checks of every Q-learning variant: discrete actions, then the off-policy ones."""
    if not isinstance(ctx.action_space, Discrete):
        raise SpaceMismatch(
            f"{name} needs a Discrete action space, got {type(ctx.action_space).__name__}"
        )
    check_torso(ctx.hparams.torso, ctx.observation_space)
    offpolicy.check(ctx)


def build(ctx: AlgorithmContext[DQNConfig], network: Any = None) -> Algorithm:
    """The algorithm's fragments; ``network`` replaces its Q-network by a flax module of the
    caller's, ``observation [..., *obs] -> Q [..., n]`` (a custom head, a shared torso)."""
    hp = ctx.hparams
    net = (
        network
        if network is not None
        else QNetwork(
            num_actions=ctx.action_space.n,
            hidden_sizes=tuple(hp.hidden_sizes),
            activation=hp.activation,
            dueling=hp.dueling,
            obs_ndim=observation_ndim(ctx.observation_space),
            torso=hp.torso,
        )
    )
    return build_q_learning(ctx, "dqn", scalar_head(net, hp))


def scalar_head(net: QNetwork, hp: DQNConfig) -> QHead:
    """DQN's head: one value per action, regressed on ``y = r + discount · V_target(s')``.

    The loss is ``ℓ(Q(s, a) − y)`` (``ℓ``: ``hp.td_loss``, Huber or ``½ x²``); the TD error
    ``Q(s, a) − y`` is the priority signal.
    """

    def target(params, target_params, exp):
        mask = exp.next_action_mask  # None without an action mask: every action is legal
        q_next_target = exploration.mask_q_values(
            net.apply(target_params, exp.next_observation), mask
        )
        q_next_online = None
        if hp.double_q:
            q_next_online = exploration.mask_q_values(net.apply(params, exp.next_observation), mask)
        return losses.td_target(
            exp.reward, exp.discount, losses.q_learning_next_value(q_next_target, q_next_online)
        )

    def loss(params, exp, target):
        q = net.apply(params, exp.observation)
        q_taken = jnp.take_along_axis(q, exp.action[:, None], axis=-1)[:, 0]
        td_error = q_taken - target
        if hp.td_loss == "huber":
            per_sample = optax.huber_loss(td_error, delta=1.0)
        else:
            per_sample = 0.5 * td_error**2
        return (
            per_sample,
            td_error,
            {"abs_td_error": jnp.abs(td_error).mean(), "q_mean": q_taken.mean()},
        )

    return QHead(net, net.apply, target, loss)


def build_q_learning(ctx: AlgorithmContext[DQNConfig], name: str, head: QHead) -> Algorithm:
    """The algorithm ``name``: a Q-learning ``head`` on the shared DQN actor, learner and replay.

    ``ctx.hparams`` is a :class:`DQNConfig` (or a subclass of it). Its named parts
    (``Algorithm.part``), for extensions that reuse them:

    * ``network``: the flax module; ``q_values(params, observation)`` its action values;
    * ``features(params, observation)``: the network's last hidden layer, ``[..., F]``;
    * ``optimizer``: the learner's optax transformation;
    * ``update``: the learner's ``apply``, ``(DQNState, {"batch": Batch}, key) -> (DQNState,
      {"metrics", "td_error"})``: one gradient step and the target update, on any batch;
    * ``sampler(name, output, batch_size=None, ...)``: a method for the replay fragment that
      samples batches of its own into edge ``output`` (``offpolicy.sampler``).
    """
    hp = ctx.hparams
    tx = ctx.optimizer(optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(hp.lr)))
    total_steps = ctx.num_iterations * ctx.batch_size
    epsilon = exploration.epsilon_schedule(
        hp.epsilon_start, hp.epsilon_end, hp.epsilon_fraction, total_steps
    )
    obs_example = spaces.example(ctx.observation_space)

    def act(steps, inputs, key):
        """ε-greedy on the online network; uniformly random during the warm-up. The actor's
        state counts the env steps taken, which drive the ε schedule."""
        q_values = head.q_values(inputs[PARAMS], inputs[OBSERVATION])
        eps = jnp.where(exploration.warming_up(steps, hp.learning_starts), 1.0, epsilon(steps))
        action = exploration.epsilon_greedy(key, q_values, eps, inputs.get(ACTION_MASK))
        return steps + q_values.shape[0], {ACTION: action}

    def init(key):
        params = head.network.init(key, obs_example)
        return DQNState(params, params, tx.init(params), jnp.zeros((), jnp.int32))

    learn = _learner(head, tx, hp)
    actor, learner = offpolicy.actor_and_learner(ctx, act, init, learn, lambda state: state.params)
    greedy = exploration.greedy_policy(head.q_values)
    parts = {
        "network": head.network,
        "q_values": head.q_values,
        "features": functools.partial(hidden_features, head.network),
        "optimizer": tx,
        "update": learn,
        "sampler": functools.partial(offpolicy.sampler, ctx, hp.gamma),
    }
    replay = offpolicy.replay(ctx, hp.gamma)
    return Algorithm(name, actor, learner, greedy, extra=(replay,), parts=parts)


def _learner(head: QHead, tx: optax.GradientTransformation, hp: DQNConfig):
    """The learner's ``apply``: ``(DQNState, {"batch": Sample}, key) -> (DQNState, outputs)``.

    One gradient step of ``L = mean_w(head.loss)`` against ``head.target`` (computed from the
    parameters before the step), then the target update every ``target_update_period`` updates;
    the head's TD errors ``[B]`` go back to the replay.
    """

    def learn(state: DQNState, inputs, key):
        del key
        sample = inputs[BATCH]
        exp = sample.transitions
        target = head.target(state.params, state.target_params, exp)

        def loss(params):
            per_sample, td_error, metrics = head.loss(params, exp, target)
            return losses.weighted_mean(per_sample, sample.weights), (td_error, metrics)

        (value, (td_error, metrics)), grads = jax.value_and_grad(loss, has_aux=True)(state.params)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        count = state.updates + 1
        target_params = offpolicy.update_target(
            state.target_params, params, count, hp.tau, hp.target_update_period
        )
        return DQNState(params, target_params, opt_state, count), {
            METRICS: {"loss": value, **metrics},
            TD_ERROR: td_error,
        }

    return learn


SPEC = AlgorithmSpec(
    name="dqn",
    hparams=DQNConfig,
    build=build,
    check=check,
    summary="Deep Q-Network: double, dueling, n-step, prioritized replay (Mnih et al. 2015)",
    # CleanRL's CartPole budget of 500,000 steps solves it by about 300,000 here.
    defaults=dict(env="CartPole-v1", total_steps=300_000, num_envs=4, rollout_len=4),
)

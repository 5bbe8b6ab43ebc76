"""Phasic Policy Gradient: a policy phase every iteration, an auxiliary phase every N iterations.

Cobbe, Hilton, Klimov & Schulman (2021), "Phasic Policy Gradient", ICML, arXiv:2009.04416.

PPG trains two networks that share nothing: a policy network π_θ, whose torso also feeds an
auxiliary value head V_θπ, and a value network V_θV. Training alternates two phases.

Policy phase, every iteration (the learner's ``apply``): PPO on the rollout just collected, with
GAE(γ, λ) advantages Â and value targets V_targ = Â + V_θV(s) from the value network,

    ρ = π_θ(a|s) / π_θold(a|s)
    L_clip  = −E[min(ρ Â, clip(ρ, 1 − ε, 1 + ε) Â)] − β_S E[H(π_θ(·|s))]
    L_value = ½ E[(V_θV(s) − V_targ)²]

for E_π epochs of shuffled minibatches. The rollout's observations and targets are kept: the
learner's state holds those of the last N rollouts (N = ``aux_every``, the paper's N_π).

Auxiliary phase, every N iterations (the learner's method ``auxiliary``, cadence
``rl.every(N)``): π_old(·|s) is computed once for every state kept, then for E_aux epochs of
shuffled minibatches

    L_joint = ½ E[(V_θπ(s) − V_targ)²] + β_clone E[KL(π_old(·|s) ‖ π_θ(·|s))]

and L_value again for the value network. The auxiliary head distils what the value function
knows into the policy's features; the KL term keeps the policy where the policy phase left it.
The phase has an Adam state of its own, as in the paper's code.

The schedule does the bookkeeping a hand-written loop would: the method runs at the end of
iterations N, 2N, ..., after that iteration's policy phase (a method's node comes after its
fragment's ``apply``), so the N slots of the buffer then hold exactly the last N rollouts.

Simplified, against the paper: discrete actions and MLP torsos only (the paper's Procgen runs
use an IMPALA CNN); E_V = E_π, with the policy and value losses summed in one Adam step per
minibatch (the networks share no parameter, so each gets its own loss's gradient; only the
global-norm clipping sees both); minibatches of single steps rather than of whole environment
segments; no reward normalisation.

    python examples/ppg.py --total-steps 100000
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxrl_fdg as rl
from jaxrl_fdg import testing, validate
from jaxrl_fdg.envs.spaces import Discrete
from jaxrl_fdg.fragments import distributions as dist
from jaxrl_fdg.fragments import losses
from jaxrl_fdg.fragments.minibatch import minibatch_epochs
from jaxrl_fdg.fragments.networks import ACTIVATIONS, MLP, orthogonal


@dataclasses.dataclass(frozen=True)
class PPGConfig:
    """PPG's hyperparameters; the paper's Procgen values where they suit CartPole."""

    lr: float = rl.hparam(5e-4, "learning rate of Adam, in both phases")
    gamma: float = rl.hparam(0.99, "discount factor γ")
    gae_lambda: float = rl.hparam(0.95, "λ of GAE")
    clip_eps: float = rl.hparam(0.2, "clipping range ε of the policy's probability ratio")
    ent_coef: float = rl.hparam(0.01, "weight β_S of the entropy bonus")
    max_grad_norm: float = rl.hparam(0.5, "clip gradients to this global norm")
    policy_epochs: int = rl.hparam(1, "E_π: passes over each rollout in the policy phase")
    num_minibatches: int = rl.hparam(8, "minibatches each policy-phase pass splits a rollout into")
    aux_every: int = rl.hparam(32, "N_π: iterations between auxiliary phases")
    aux_epochs: int = rl.hparam(6, "E_aux: passes over the kept rollouts in the auxiliary phase")
    aux_minibatches: int = rl.hparam(16, "auxiliary minibatches per pass, per kept rollout")
    beta_clone: float = rl.hparam(1.0, "weight β_clone of the behaviour-cloning KL")
    hidden_sizes: tuple[int, ...] = rl.hparam((64, 64), "layer sizes of both networks")
    activation: str = rl.hparam("tanh", f"hidden-layer activation: {', '.join(ACTIVATIONS)}")

    def __post_init__(self) -> None:
        validate.in_range("lr", self.lr, 0.0, 1.0, low_open=True)
        validate.in_range("gamma", self.gamma, 0.0, 1.0)
        validate.in_range("gae_lambda", self.gae_lambda, 0.0, 1.0)
        for name in ("clip_eps", "ent_coef", "max_grad_norm", "beta_clone"):
            validate.non_negative(name, getattr(self, name))
        for name in ("policy_epochs", "num_minibatches", "aux_every", "aux_epochs"):
            validate.positive_int(name, getattr(self, name))
        validate.positive_int("aux_minibatches", self.aux_minibatches)
        validate.layer_sizes("hidden_sizes", self.hidden_sizes)
        validate.choice("activation", self.activation, ACTIVATIONS)


# -- networks -------------------------------------------------------------------------------------


class PolicyNetwork(nn.Module):
    """π_θ and its auxiliary value head on one torso: ``[..., D] -> (logits [..., A], V_θπ
    [...])``, initialised as PPO implementations do (orthogonal; logits near zero)."""

    num_actions: int
    hidden_sizes: Sequence[int]
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = obs.astype(jnp.float32)
        for size in self.hidden_sizes:
            x = ACTIVATIONS[self.activation](nn.Dense(size, kernel_init=orthogonal(2**0.5))(x))
        logits = nn.Dense(self.num_actions, kernel_init=orthogonal(0.01))(x)
        return logits, nn.Dense(1, kernel_init=orthogonal(1.0))(x)[..., 0]


class Params(NamedTuple):
    policy: Any  # π_θ with V_θπ
    value: Any  # V_θV


class PPGState(NamedTuple):
    """The learner's state: both networks, an Adam state per phase, and the last N rollouts'
    observations ``[N, T·B, D]`` and value targets ``[N, T·B]``; ``rollouts`` counts policy
    phases, the next of which writes slot ``rollouts % N``."""

    params: Params
    opt_state: optax.OptState
    aux_opt_state: optax.OptState
    observations: jax.Array
    targets: jax.Array
    rollouts: jax.Array


class PolicyBatch(NamedTuple):  # one rollout flattened to [T·B, ...]
    observation: jax.Array
    action: jax.Array
    log_prob: jax.Array
    advantage: jax.Array
    target: jax.Array


class AuxBatch(NamedTuple):  # the kept rollouts flattened to [N·T·B, ...]
    observation: jax.Array
    target: jax.Array
    old_log_probs: jax.Array  # log π_old(·|s) [N·T·B, A], fixed for the whole phase


def build(ctx: rl.AlgorithmContext[PPGConfig]) -> rl.Algorithm:
    hp = ctx.hparams
    obs_shape = tuple(ctx.observation_space.shape)
    policy_net = PolicyNetwork(ctx.action_space.n, tuple(hp.hidden_sizes), hp.activation)
    value_net = MLP(tuple(hp.hidden_sizes), 1, hp.activation, out_scale=1.0)

    def value(params: Params, obs: jax.Array) -> jax.Array:
        return value_net.apply(params.value, obs.astype(jnp.float32))[..., 0]

    def adam() -> optax.GradientTransformation:
        clipped = optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(hp.lr))
        return ctx.optimizer(clipped)  # combines gradients where a placement must

    tx, aux_tx = adam(), adam()

    def init(key: jax.Array) -> PPGState:
        k_policy, k_value = jax.random.split(key)
        obs = jnp.zeros(obs_shape, jnp.float32)
        params = Params(policy_net.init(k_policy, obs), value_net.init(k_value, obs))
        n = hp.aux_every
        return PPGState(
            params,
            tx.init(params),
            aux_tx.init(params),
            jnp.zeros((n, ctx.batch_size, *obs_shape), jnp.float32),
            jnp.zeros((n, ctx.batch_size), jnp.float32),
            jnp.zeros((), jnp.int32),
        )

    def act(state, inputs, key):
        logits, _ = policy_net.apply(inputs["params"].policy, inputs["observation"])
        action = dist.categorical_sample(key, logits)
        return state, {"action": action, "log_prob": dist.categorical_log_prob(logits, action)}

    # -- the policy phase: PPO on this rollout ---------------------------------------------------

    def policy_loss(params: Params, mb: PolicyBatch):
        logits, _ = policy_net.apply(params.policy, mb.observation)
        log_prob = dist.categorical_log_prob(logits, mb.action)
        advantage = losses.normalize(mb.advantage)
        clip_loss, clip_fraction = losses.clipped_surrogate_loss(
            log_prob, mb.log_prob, advantage, hp.clip_eps
        )
        entropy = dist.categorical_entropy(logits).mean()
        value_loss = 0.5 * ((value(params, mb.observation) - mb.target) ** 2).mean()
        metrics = {
            "policy_loss": clip_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": losses.approx_kl(log_prob, mb.log_prob),
            "clip_fraction": clip_fraction,
        }
        return clip_loss - hp.ent_coef * entropy + value_loss, metrics

    def policy_phase(state: PPGState, inputs, key):
        traj = inputs["trajectory"]  # fields [T, B, ...]
        advantage, target = losses.generalized_advantage_estimation(
            traj.reward,
            value(state.params, traj.observation),
            value(state.params, traj.next_observation),
            traj.terminated,
            traj.truncated,
            hp.gamma,
            hp.gae_lambda,
        )
        fields = (traj.observation, traj.action, traj.extras["log_prob"], advantage, target)
        batch = PolicyBatch(*(x.reshape(-1, *x.shape[2:]) for x in fields))
        (params, opt_state), metrics = minibatch_epochs(
            (state.params, state.opt_state),
            batch,
            key,
            epochs=hp.policy_epochs,
            num_minibatches=hp.num_minibatches,
            update=gradient_step(policy_loss, tx),
        )
        slot = state.rollouts % hp.aux_every
        state = state._replace(
            params=params,
            opt_state=opt_state,
            observations=state.observations.at[slot].set(batch.observation.astype(jnp.float32)),
            targets=state.targets.at[slot].set(batch.target),
            rollouts=state.rollouts + 1,
        )
        return state, {"metrics": metrics}

    # -- the auxiliary phase: distil values into the policy's torso, keep the policy -------------

    def joint_loss(params: Params, mb: AuxBatch):
        logits, aux_value = policy_net.apply(params.policy, mb.observation)
        log_probs = jax.nn.log_softmax(logits)
        # KL(π_old ‖ π) = Σ_a π_old(a|s) (log π_old(a|s) − log π(a|s))
        clone_kl = (jnp.exp(mb.old_log_probs) * (mb.old_log_probs - log_probs)).sum(-1).mean()
        aux_value_loss = 0.5 * ((aux_value - mb.target) ** 2).mean()
        value_loss = 0.5 * ((value(params, mb.observation) - mb.target) ** 2).mean()
        metrics = {"aux_value_loss": aux_value_loss, "clone_kl": clone_kl, "value_loss": value_loss}
        return aux_value_loss + hp.beta_clone * clone_kl + value_loss, metrics

    def auxiliary_phase(state: PPGState, inputs, key):
        del inputs  # it reads its own state only
        observations = state.observations.reshape(-1, *obs_shape)
        logits, _ = policy_net.apply(state.params.policy, observations)
        old_log_probs = jax.lax.stop_gradient(jax.nn.log_softmax(logits))
        batch = AuxBatch(observations, state.targets.reshape(-1), old_log_probs)
        (params, aux_opt_state), metrics = minibatch_epochs(
            (state.params, state.aux_opt_state),
            batch,
            key,
            epochs=hp.aux_epochs,
            num_minibatches=hp.aux_every * hp.aux_minibatches,
            update=gradient_step(joint_loss, aux_tx),
        )
        # How many rollouts the learner had seen when the phase ran: N, 2N, ... (logged as
        # learner/rollouts, zero on the iterations it did not run).
        metrics["rollouts"] = state.rollouts.astype(jnp.float32)
        return state._replace(params=params, aux_opt_state=aux_opt_state), {"metrics": metrics}

    actor = rl.fragment(
        "actor", "actor", act, inputs=("observation", "params"), outputs=("action", "log_prob")
    )
    learner = rl.fragment(
        "learner",
        "learner",
        policy_phase,
        init=init,
        inputs=("trajectory",),
        outputs=("metrics",),
        publish=lambda state: {"params": state.params},
        published=("params",),
        methods=(
            rl.Method(
                "auxiliary", auxiliary_phase, outputs=("metrics",), cadence=rl.every(hp.aux_every)
            ),
        ),
    )

    def greedy(params: Params, observation: jax.Array) -> jax.Array:
        return dist.categorical_mode(policy_net.apply(params.policy, observation)[0])

    return rl.Algorithm("ppg", actor, learner, policy=greedy)


def gradient_step(loss, tx: optax.GradientTransformation):
    """One ``tx`` step on ``loss(params, minibatch) -> (loss, metrics)``, over ``(params,
    optimizer state)``: the ``update`` that ``minibatch_epochs`` takes."""

    def update(carry: tuple[Params, optax.OptState], mb):
        params, opt_state = carry
        grads, metrics = jax.grad(loss, has_aux=True)(params, mb)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), metrics

    return update


def check(ctx: rl.AlgorithmContext[PPGConfig]) -> None:
    """Refuse what this PPG cannot run, before anything compiles."""
    hp = ctx.hparams
    if not isinstance(ctx.action_space, Discrete):
        raise rl.ConfigError(
            f"this PPG needs a Discrete action space, got {type(ctx.action_space).__name__}"
        )
    if len(ctx.observation_space.shape) != 1:
        raise rl.ConfigError(
            f"this PPG's MLPs need flat observations, got shape {ctx.observation_space.shape}"
        )
    rollout = "num_envs × rollout_len"
    validate.divides("num_minibatches", hp.num_minibatches, rollout, ctx.batch_size)
    validate.divides("aux_minibatches", hp.aux_minibatches, rollout, ctx.batch_size)


SPEC = rl.AlgorithmSpec(
    "ppg",
    PPGConfig,
    build,
    check,
    summary="Phasic Policy Gradient (Cobbe et al. 2021), written outside the library",
    defaults=dict(env="CartPole-v1", total_steps=500_000, num_envs=8, rollout_len=128),
)


# -- running it -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--aux-every", type=int, default=8, help="N: iterations between phases")
    parser.add_argument(
        "--fusion", default="step,fragment,iteration,scan", help="comma-separated fusion modes"
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.fusion.split(",") if m]
    config = rl.TrainConfig(
        algo=SPEC.name,
        total_steps=args.total_steps,
        out=None,
        progress=False,
        hparams={"aux_every": args.aux_every},
    )
    print(rl.build_loop(rl.resolve(config, SPEC)).graph.describe())
    # Trained under each fusion mode; assert_modes_agree raises, naming the leaves that differ,
    # unless every run ends on the same bits (final state and metrics) as the first.
    results = testing.assert_modes_agree(config, SPEC, modes)
    for mode, result in results.items():
        ran = result.metrics["learner/runs"] > 0
        kl = result.metrics["learner/clone_kl"][ran]
        print(
            f"{mode:>9}: final return {result.summary['final_return']:.1f}, "
            f"auxiliary phases at iterations {np.flatnonzero(ran) + 1}, clone KL "
            f"{np.array2string(kl, precision=2)}"
        )
    print("same state and metrics under every fusion mode")


if __name__ == "__main__":
    main()

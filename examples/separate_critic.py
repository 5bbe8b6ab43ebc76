"""An actor-critic whose value function is a learner of its own: two learners in one graph.

The critic is a fragment with its own parameters and its own Adam. Each iteration it fits
V_φ to the λ-returns of the rollout, computed with V_φ as it was before the fit, for a few
full-batch gradient steps:

    G_t = Â_t(V_φ) + V_φ(s_t)                   (GAE(γ, λ) returns, Schulman et al. 2016)
    L_V(φ) = ½ E[(V_φ(s_t) − G_t)²]

and publishes φ as the edge ``critic_params``. The policy learner, the primary learner, reads
that edge and computes its advantages with the critic as it stands after this iteration's fit,
then takes one step of the advantage actor-critic loss (Mnih et al. 2016, "Asynchronous Methods
for Deep Reinforcement Learning", arXiv:1602.01783):

    Â_t = GAE(γ, λ) under V_φ' (the critic after its fit), standardised over the batch
    L_π(θ) = −E[log π_θ(a_t|s_t) Â_t] − c_H E[H(π_θ(·|s_t))]

Nothing in either fragment says which runs first. The graph orders the calls after the
rollout by every edge they read, published edges included: the policy learner reads
``critic_params``, which the critic publishes, so the critic's ``apply`` runs before it, and the
policy sees the critic's state as the fit left it. Here the policy learner is declared first
(it is the algorithm's ``learner``; the critic comes in ``extra``), and the schedule still reads
``critic, learner``. Swap the declarations and it reads the same.

The policy learner reports ``value_mean``, the mean of the critic's values its advantages were
computed from; the critic reports ``critic/value_mean``, the same mean under the parameters it
publishes after its fit. They agree at every iteration.

    python examples/separate_critic.py --total-steps 100000
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
from jaxrl_fdg.fragments.networks import ACTIVATIONS, MLP


@dataclasses.dataclass(frozen=True)
class Config:
    policy_lr: float = rl.hparam(7e-4, "learning rate of the policy's Adam")
    critic_lr: float = rl.hparam(1e-3, "learning rate of the critic's Adam")
    critic_steps: int = rl.hparam(4, "full-batch gradient steps of the critic per rollout")
    gamma: float = rl.hparam(0.99, "discount factor γ")
    gae_lambda: float = rl.hparam(0.95, "λ of GAE, for the critic's targets and the advantages")
    ent_coef: float = rl.hparam(0.01, "weight c_H of the entropy bonus")
    max_grad_norm: float = rl.hparam(0.5, "clip each learner's gradients to this global norm")
    hidden_sizes: tuple[int, ...] = rl.hparam((64, 64), "layer sizes of the policy and the critic")
    activation: str = rl.hparam("tanh", f"hidden-layer activation: {', '.join(ACTIVATIONS)}")

    def __post_init__(self) -> None:
        for name in ("policy_lr", "critic_lr"):
            validate.in_range(name, getattr(self, name), 0.0, 1.0, low_open=True)
        validate.positive_int("critic_steps", self.critic_steps)
        validate.in_range("gamma", self.gamma, 0.0, 1.0)
        validate.in_range("gae_lambda", self.gae_lambda, 0.0, 1.0)
        validate.non_negative("ent_coef", self.ent_coef)
        validate.non_negative("max_grad_norm", self.max_grad_norm)
        validate.layer_sizes("hidden_sizes", self.hidden_sizes)
        validate.choice("activation", self.activation, ACTIVATIONS)


class Trained(NamedTuple):
    """A learner's state: its parameters and its optimizer's state."""

    params: Any
    opt_state: optax.OptState


def value_network(hp: Config) -> nn.Module:
    """V_φ: ``[..., D] -> [..., 1]``."""
    return MLP(tuple(hp.hidden_sizes), 1, hp.activation, out_scale=1.0)


def critic_values(hp: Config, params: Any, observation: jax.Array) -> jax.Array:
    """``V_φ(s)`` ``[...]`` for observations ``[..., D]``."""
    return value_network(hp).apply(params, observation.astype(jnp.float32))[..., 0]


def advantages(hp: Config, critic: Any, traj: rl.Transition) -> tuple[jax.Array, jax.Array]:
    """GAE(γ, λ) advantages and returns ``[T, B]`` of a rollout under critic parameters
    ``critic``: bootstrapping on truncation, not on termination."""
    return losses.generalized_advantage_estimation(
        traj.reward,
        critic_values(hp, critic, traj.observation),
        critic_values(hp, critic, traj.next_observation),
        traj.terminated,
        traj.truncated,
        hp.gamma,
        hp.gae_lambda,
    )


def build(ctx: rl.AlgorithmContext[Config]) -> rl.Algorithm:
    hp = ctx.hparams
    obs = jnp.zeros(ctx.observation_space.shape, jnp.float32)
    policy_net = MLP(tuple(hp.hidden_sizes), ctx.action_space.n, hp.activation, out_scale=0.01)

    def adam(lr: float) -> optax.GradientTransformation:
        clipped = optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(lr))
        return ctx.optimizer(clipped)  # combines gradients where a placement must

    policy_tx, critic_tx = adam(hp.policy_lr), adam(hp.critic_lr)

    def act(state, inputs, key):
        logits = policy_net.apply(inputs["params"], inputs["observation"].astype(jnp.float32))
        return state, {"action": dist.categorical_sample(key, logits)}

    # -- the critic: fits V_φ, publishes φ -------------------------------------------------------

    def init_critic(key: jax.Array) -> Trained:
        params = value_network(hp).init(key, obs)
        return Trained(params, critic_tx.init(params))

    def fit_critic(state: Trained, inputs, key):
        del key
        traj = inputs["trajectory"]  # fields [T, B, ...]
        _, returns = advantages(hp, state.params, traj)  # targets from the critic before the fit

        def loss(params):
            return 0.5 * ((critic_values(hp, params, traj.observation) - returns) ** 2).mean()

        def gradient_step(trained: Trained, _):
            value_loss, grads = jax.value_and_grad(loss)(trained.params)
            updates, opt_state = critic_tx.update(grads, trained.opt_state, trained.params)
            return Trained(optax.apply_updates(trained.params, updates), opt_state), value_loss

        state, value_loss = jax.lax.scan(gradient_step, state, length=hp.critic_steps)
        value_mean = critic_values(hp, state.params, traj.observation).mean()
        return state, {"metrics": {"value_loss": value_loss.mean(), "value_mean": value_mean}}

    critic = rl.fragment(
        "critic",
        "learner",
        fit_critic,
        init=init_critic,
        inputs=("trajectory",),
        outputs=("metrics",),
        publish=lambda state: {"critic_params": state.params},
        published=("critic_params",),
    )

    # -- the policy learner: advantages under this iteration's critic ----------------------------

    def init_policy(key: jax.Array) -> Trained:
        params = policy_net.init(key, obs)
        return Trained(params, policy_tx.init(params))

    def learn(state: Trained, inputs, key):
        del key
        traj = inputs["trajectory"]
        advantage, _ = advantages(hp, inputs["critic_params"], traj)
        # One batch of T·B steps.
        observation = traj.observation.reshape(-1, *traj.observation.shape[2:])
        action, advantage = traj.action.reshape(-1), losses.normalize(advantage.reshape(-1))

        def loss(params):
            logits = policy_net.apply(params, observation.astype(jnp.float32))
            log_prob = dist.categorical_log_prob(logits, action)
            entropy = dist.categorical_entropy(logits).mean()
            policy_loss = -(log_prob * advantage).mean()
            return policy_loss - hp.ent_coef * entropy, {
                "policy_loss": policy_loss,
                "entropy": entropy,
            }

        grads, metrics = jax.grad(loss, has_aux=True)(state.params)
        updates, opt_state = policy_tx.update(grads, state.opt_state, state.params)
        state = Trained(optax.apply_updates(state.params, updates), opt_state)
        used = critic_values(hp, inputs["critic_params"], traj.observation).mean()
        return state, {"metrics": {**metrics, "value_mean": used}}

    learner = rl.fragment(
        "learner",
        "learner",
        learn,
        init=init_policy,
        inputs=("trajectory", "critic_params"),
        outputs=("metrics",),
        publish=lambda state: {"params": state.params},
        published=("params",),
    )
    actor = rl.fragment(
        "actor", "actor", act, inputs=("observation", "params"), outputs=("action",)
    )

    def greedy(params: Any, observation: jax.Array) -> jax.Array:
        return dist.categorical_mode(policy_net.apply(params, observation.astype(jnp.float32)))

    # The policy learner is declared before the critic; the edge critic_params orders them.
    return rl.Algorithm("separate-critic", actor, learner, policy=greedy, extra=(critic,))


def check(ctx: rl.AlgorithmContext[Config]) -> None:
    if not isinstance(ctx.action_space, Discrete):
        raise rl.ConfigError(
            "this actor-critic needs a Discrete action space, got "
            f"{type(ctx.action_space).__name__}"
        )
    if len(ctx.observation_space.shape) != 1:
        raise rl.ConfigError(
            f"this actor-critic's MLPs need flat observations, got {ctx.observation_space.shape}"
        )


SPEC = rl.AlgorithmSpec(
    "separate-critic",
    Config,
    build,
    check,
    summary="an actor-critic whose critic is a learner of its own, with its own optimizer",
    defaults=dict(env="CartPole-v1", total_steps=500_000, num_envs=8, rollout_len=32),
)


# -- running it -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument(
        "--fusion", default="step,fragment,iteration,scan", help="comma-separated fusion modes"
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.fusion.split(",") if m]
    config = rl.TrainConfig(algo=SPEC.name, total_steps=args.total_steps, out=None, progress=False)
    loop = rl.build_loop(rl.resolve(config, SPEC))
    print(loop.graph.describe())
    (first,) = [node for node in loop.graph.schedule.after if node.cadence == rl.ITERATION]
    print("after the rollout, every iteration:", " -> ".join(first.fragments))
    # Trained under each fusion mode; assert_modes_agree raises, naming the leaves that differ,
    # unless every run ends on the same bits (final state and metrics) as the first.
    results = testing.assert_modes_agree(config, SPEC, modes)
    for mode, result in results.items():
        m = result.metrics
        gap = np.max(np.abs(m["value_mean"] - m["critic/value_mean"]))
        print(
            f"{mode:>9}: final return {result.summary['final_return']:.1f}, critic value loss "
            f"{m['critic/value_loss'][-1]:.3f}, max |policy's V − critic's V| {gap:.1e}"
        )
    print("same state and metrics under every fusion mode")


if __name__ == "__main__":
    main()

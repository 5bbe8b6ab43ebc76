"""A V-trace actor-critic, written outside the library and run from the stock command line.

V-trace (Espeholt et al. 2018, "IMPALA", arXiv:1802.01561, section 4) corrects an actor-critic
for data collected by a policy μ other than the one being learned, π. With the truncated
importance weights ``ρ_t = min(ρ̄, π(a_t|x_t) / μ(a_t|x_t))`` and ``c_t = min(c̄, π/μ)``, the value
targets are

    v_s = V(x_s) + Σ_{t≥s} γ^{t−s} (Π_{s≤i<t} c_i) ρ_t (r_t + γ V(x_{t+1}) − V(x_t))

computed backwards as ``v_s − V(x_s) = δ_s + γ c_s (v_{s+1} − V(x_{s+1}))``; the policy follows
``ρ_s ∇ log π(a_s|x_s) (r_s + γ v_{s+1} − V(x_s))``. Episode ends cut the traces: ``γ`` is 0
after a termination, and a truncated episode bootstraps from the value of its last observation.

The actor records ``log μ(a|x)`` of what it did; the learner takes one gradient step per
rollout. Run as it is, actor and learner share the parameters (ρ = c = 1: n-step returns); with
``--policy-lag 1`` the learner trains on the rollout collected one iteration earlier, and the
weights correct for the lag.

    jaxrl-fdg train --algo examples/vtrace.py:SPEC --total-steps 100000 --checkpoint-every 20000
    jaxrl-fdg evaluate runs/<the run folder>
    jaxrl-fdg train --resume runs/<the run folder>

The run folder records ``algo`` as the absolute path of this file, so ``evaluate``, ``--resume``,
``plot`` and ``compare`` find it again from any folder.
"""

import dataclasses

import jax
import jax.numpy as jnp
import optax

import jaxrl_fdg as rl
from jaxrl_fdg.envs import Discrete
from jaxrl_fdg.fragments.networks import MLP


@dataclasses.dataclass(frozen=True)
class VTraceConfig:
    lr: float = rl.hparam(1e-3, "learning rate of Adam")
    gamma: float = rl.hparam(0.99, "discount factor γ")
    rho_bar: float = rl.hparam(1.0, "ρ̄, where the importance weights of δ_t are truncated")
    c_bar: float = rl.hparam(1.0, "c̄, where the trace weights are truncated")
    vf_coef: float = rl.hparam(0.5, "weight of the value loss")
    ent_coef: float = rl.hparam(0.01, "weight of the entropy bonus")
    max_grad_norm: float = rl.hparam(0.5, "global norm gradients are clipped to")
    hidden: int = rl.hparam(64, "width of the two hidden layers of each network")


def vtrace_targets(values, next_values, reward, terminated, truncated, rho, c, gamma):
    """V-trace value targets ``v_s`` and policy-gradient advantages, all ``[T, B]``.

    ``values = V(x_t)``; ``next_values = V(x'_t)``, the observation each step reached (an
    episode's last where it ended). Where ``terminated | truncated`` the next row of the
    trajectory starts another episode, so the trace stops there.
    """
    discount = gamma * (1.0 - terminated)
    carries_on = 1.0 - jnp.logical_or(terminated, truncated)
    delta = rho * (reward + discount * next_values - values)

    def backwards(acc, t):  # acc = v_{t+1} − V(x_{t+1}) of the same episode
        acc = delta[t] + discount[t] * c[t] * carries_on[t] * acc
        return acc, acc

    steps = jnp.arange(reward.shape[0])
    _, corrections = jax.lax.scan(backwards, jnp.zeros_like(reward[0]), steps, reverse=True)
    targets = values + corrections
    # v_{t+1} where the episode goes on in the trajectory; V(x'_t) where it ended or the
    # rollout did.
    following = jnp.concatenate([targets[1:], next_values[-1:]])
    next_targets = jnp.where(carries_on > 0, following, next_values)
    advantages = rho * (reward + discount * next_targets - values)
    return targets, advantages


def build(ctx: rl.AlgorithmContext[VTraceConfig]) -> rl.Algorithm:
    hp = ctx.hparams
    actions = ctx.action_space.n
    policy_net = MLP((hp.hidden, hp.hidden), actions, out_scale=0.01)
    value_net = MLP((hp.hidden, hp.hidden), 1)
    tx = ctx.optimizer(optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(hp.lr)))

    def log_policy(params, observation):
        return jax.nn.log_softmax(policy_net.apply(params["policy"], observation))

    def act(state, inputs, key):  # a ~ μ(·|x), recording log μ(a|x)
        log_probs = log_policy(inputs["params"], inputs["observation"])
        action = jax.random.categorical(key, log_probs).astype(jnp.int32)
        chosen = jnp.take_along_axis(log_probs, action[:, None], -1)[:, 0]
        return state, {"action": action, "log_prob": chosen}

    def init(key):
        k_policy, k_value = jax.random.split(key)
        example = jnp.zeros(ctx.observation_space.shape)
        params = {
            "policy": policy_net.init(k_policy, example),
            "value": value_net.init(k_value, example),
        }
        return params, tx.init(params)

    def loss(params, traj):
        log_probs = log_policy(params, traj.observation)  # [T, B, A]
        chosen = jnp.take_along_axis(log_probs, traj.action[..., None], -1)[..., 0]
        values = value_net.apply(params["value"], traj.observation)[..., 0]
        next_values = value_net.apply(params["value"], traj.next_observation)[..., 0]
        ratio = jax.lax.stop_gradient(jnp.exp(chosen - traj.extras["log_prob"]))
        targets, advantages = vtrace_targets(
            jax.lax.stop_gradient(values),
            jax.lax.stop_gradient(next_values),
            traj.reward,
            traj.terminated.astype(jnp.float32),
            traj.truncated.astype(jnp.float32),
            jnp.minimum(hp.rho_bar, ratio),
            jnp.minimum(hp.c_bar, ratio),
            hp.gamma,
        )
        policy_loss = -(chosen * jax.lax.stop_gradient(advantages)).mean()
        value_loss = 0.5 * ((jax.lax.stop_gradient(targets) - values) ** 2).mean()
        entropy = -(jnp.exp(log_probs) * log_probs).sum(-1).mean()
        total = policy_loss + hp.vf_coef * value_loss - hp.ent_coef * entropy
        return total, {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}

    def learn(state, inputs, key):
        del key  # one full-batch step: nothing random
        params, opt_state = state
        grads, metrics = jax.grad(loss, has_aux=True)(params, inputs["trajectory"])
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), {"metrics": metrics}

    actor = rl.fragment(
        "actor", "actor", act, inputs=("observation", "params"), outputs=("action", "log_prob")
    )
    learner = rl.fragment(
        "learner",
        "learner",
        learn,
        init=init,
        inputs=("trajectory",),
        outputs=("metrics",),
        publish=lambda state: {"params": state[0]},
        published=("params",),
    )

    def greedy(params, observation):  # the deterministic policy `evaluate` plays
        return jnp.argmax(log_policy(params, observation), -1).astype(jnp.int32)

    return rl.Algorithm("vtrace", actor, learner, policy=greedy)


def check(ctx: rl.AlgorithmContext[VTraceConfig]) -> None:
    if not isinstance(ctx.action_space, Discrete):
        raise rl.ConfigError(
            f"vtrace needs a Discrete action space, got {type(ctx.action_space).__name__}"
        )


SPEC = rl.AlgorithmSpec(
    "vtrace",
    VTraceConfig,
    build,
    check,
    summary="V-trace actor-critic (Espeholt et al. 2018), written outside the library",
    defaults=dict(env="CartPole-v1", total_steps=200_000, num_envs=8, rollout_len=32),
)

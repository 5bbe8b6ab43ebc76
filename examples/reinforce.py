"""A user-written algorithm: REINFORCE (Williams, 1992) as two fragments the library never heard of.

It plugs into the same graph as the built-in algorithms and runs under any fusion mode; here it
runs under two and checks that they agree.

    python examples/reinforce.py --total-steps 100000
"""

import argparse
import dataclasses

import jax
import jax.numpy as jnp
import optax

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.fragments.networks import MLP


def build(ctx: rl.AlgorithmContext) -> rl.Algorithm:
    policy = MLP(hidden_sizes=(64, 64), out_dim=ctx.action_space.n, out_scale=0.01)
    tx = ctx.optimizer(optax.adam(ctx.hparams.lr))  # combines gradients where a placement must
    gamma = ctx.hparams.gamma

    def act(state, inputs, key):  # actor: sample a ~ π(·|s)
        logits = policy.apply(inputs["params"], inputs["observation"])
        return state, {"action": jax.random.categorical(key, logits).astype(jnp.int32)}

    def init(key):  # learner state: (params, optimizer state)
        params = policy.init(key, jnp.zeros(ctx.observation_space.shape))
        return params, tx.init(params)

    def learn(state, inputs, key):
        traj = inputs["trajectory"]  # fields [T, B]
        done = jnp.logical_or(traj.terminated, traj.truncated)

        def discounted(g_next, step):  # G_t = r_t + γ (1 − done_t) G_{t+1}
            r, d = step
            g = r + gamma * (1.0 - d) * g_next
            return g, g

        _, returns = jax.lax.scan(
            discounted,
            jnp.zeros_like(traj.reward[0]),
            (traj.reward, done.astype(jnp.float32)),
            reverse=True,
        )
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)

        def loss(params):  # −E[log π(a_t|s_t) G_t]
            log_probs = jax.nn.log_softmax(policy.apply(params, traj.observation))
            chosen = jnp.take_along_axis(log_probs, traj.action[..., None], -1)[..., 0]
            return -(chosen * returns).mean()

        params, opt_state = state
        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state)
        return (optax.apply_updates(params, updates), opt_state), {"metrics": {"loss": value}}

    actor = rl.fragment(
        "actor", "actor", act, inputs=("observation", "params"), outputs=("action",)
    )
    learner = rl.fragment(
        "learner",
        "learner",
        learn,
        init=init,
        inputs=("trajectory",),
        outputs=("metrics",),
        publish=lambda s: {"params": s[0]},
        published=("params",),
    )
    return rl.Algorithm("reinforce", actor, learner)


@dataclasses.dataclass(frozen=True)
class Hyperparameters:  # the runner validates overrides against these and passes them to build()
    lr: float = rl.hparam(1e-3, "learning rate of Adam")
    gamma: float = rl.hparam(0.99, "discount factor γ of the returns")


SPEC = rl.AlgorithmSpec(
    "reinforce",
    Hyperparameters,
    build,
    check=lambda ctx: None,
    summary="REINFORCE, written outside the library",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    args = parser.parse_args()
    config = rl.TrainConfig(
        algo="reinforce",
        total_steps=args.total_steps,
        num_envs=8,
        rollout_len=64,
        out=None,
        progress=False,
    )
    # Trained under each fusion mode; assert_modes_agree raises, naming the leaves that differ,
    # unless both runs end on the same bits (final state and metrics).
    results = testing.assert_modes_agree(config, SPEC, ("scan", "fragment"))
    for fusion, result in results.items():
        s = result.summary
        print(
            f"{fusion:>9}: final return {s['final_return']:.1f}, "
            f"{s['steps_per_s']:,.0f} steps/s, compile {s['compile_s']:.1f} s"
        )
    print("same state and metrics under both fusion modes")


if __name__ == "__main__":
    main()

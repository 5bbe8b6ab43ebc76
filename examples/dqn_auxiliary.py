"""DQN with an auxiliary task every few iterations, on DQN's own replay and network.

Every ``aux_every`` iterations, once DQN has warmed up, a batch of its own is drawn from DQN's
replay and the Q-network's hidden layer learns, besides the Q-values, to predict each stored
transition's n-step reward from the state and the action taken:

    L_aux = mean_i w_i · (g([φ(s_i), onehot(a_i)]) − R_i)²

``φ`` is the Q-network's last hidden layer (the part ``features``), ``g`` a small head of the
extension's own. An auxiliary reward-prediction loss shapes the representation the Q-values
are read from (as UNREAL's reward prediction does, Jaderberg et al. 2016, arXiv:1611.05397).

Nothing of DQN is copied: the batch comes from a second sampler declared on DQN's replay
(``part("sampler")``), the learner's state is extended with the head and its optimizer
(``rl.extend``), and the update is a method of the extended learner with cadence
``every(aux_every, when=warmed_up)``: it neither runs nor counts before the warm-up.

    python examples/dqn_auxiliary.py --total-steps 50000
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.core.names import METRICS
from jaxrl_fdg.fragments.algorithms import dqn, offpolicy

AUX_BATCH = "aux_batch"  # the auxiliary task's batch, sampled from DQN's replay


@dataclasses.dataclass(frozen=True)
class AuxiliaryConfig(dqn.DQNConfig):
    aux_every: int = rl.hparam(4, "iterations between auxiliary updates")
    aux_batch_size: int = rl.hparam(64, "transitions per auxiliary update")
    aux_lr: float = rl.hparam(1e-4, "learning rate of the auxiliary updates")


class AuxiliaryState(NamedTuple):
    head: Any  # g's parameters
    opt_state: Any  # Adam's moments over (the Q-network's parameters, g's)


def auxiliary(ctx: rl.AlgorithmContext[AuxiliaryConfig], algorithm: rl.Algorithm):
    """The learner's extension: its state's ``init`` and the ``auxiliary`` method."""
    hp, actions = ctx.hparams, ctx.action_space.n
    features = algorithm.part("features")
    head, tx = nn.Dense(1), ctx.optimizer(optax.adam(hp.aux_lr))
    observation = jnp.zeros((1, *ctx.observation_space.shape), ctx.observation_space.dtype)

    def init(key: jax.Array) -> AuxiliaryState:
        q_params = jax.eval_shape(algorithm.part("network").init, key, observation)
        width = jax.eval_shape(features, q_params, observation).shape[-1]
        head_params = head.init(key, jnp.zeros((1, width + actions)))
        zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), q_params)
        return AuxiliaryState(head_params, tx.init((zeros, head_params)))

    def update(state: rl.Extended, inputs: dict, key: jax.Array):
        del key
        batch, learner, own = inputs[AUX_BATCH], state.base, state.extra
        exp = batch.transitions

        def loss(params):
            q_params, head_params = params
            taken = jax.nn.one_hot(exp.action, actions)
            x = jnp.concatenate([features(q_params, exp.observation), taken], axis=-1)
            predicted = head.apply(head_params, x)[..., 0]
            return jnp.mean(batch.weights * (predicted - exp.reward) ** 2)

        params = (learner.params, own.head)
        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, own.opt_state, params)
        q_params, head_params = optax.apply_updates(params, updates)
        extended = rl.Extended(
            learner._replace(params=q_params), AuxiliaryState(head_params, opt_state)
        )
        return extended, {METRICS: {"aux_loss": value}}

    cadence = rl.every(hp.aux_every, when=offpolicy.warmed_up(hp.learning_starts))
    method = rl.Method(
        "auxiliary", update, inputs=(AUX_BATCH,), outputs=(METRICS,), cadence=cadence
    )
    return init, method


def build(ctx: rl.AlgorithmContext[AuxiliaryConfig]) -> rl.Algorithm:
    algorithm = dqn.build(ctx)
    sample = algorithm.part("sampler")(
        "sample_aux", AUX_BATCH, batch_size=ctx.hparams.aux_batch_size
    )
    init, method = auxiliary(ctx, algorithm)
    learner = rl.extend(algorithm.fragment("learner"), method, init=init)
    replay = algorithm.fragment("replay").with_methods(sample)
    return algorithm.replace_fragment(learner).replace_fragment(replay)


SPEC = dqn.SPEC._replace(
    name="dqn-auxiliary",
    hparams=AuxiliaryConfig,
    build=build,
    summary="DQN with an auxiliary reward-prediction task every few iterations",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=50_000)
    parser.add_argument("--fusion", default="fragment,scan", help="comma-separated fusion modes")
    args = parser.parse_args()
    config = rl.TrainConfig(
        algo=SPEC.name,
        total_steps=args.total_steps,
        out=None,
        hparams={"learning_starts": 1_000},
    )
    print(rl.build_loop(rl.resolve(config, SPEC)).graph.describe())
    runs = testing.assert_modes_agree(config, SPEC, [m for m in args.fusion.split(",") if m])
    for mode, run in runs.items():
        s, aux = run.summary, run.metrics["learner/aux_loss"]
        print(f"{mode:>9}: final return {s['final_return']:.1f}, last aux loss {aux[-1]:.4f}")
    print("same bits under every fusion mode")


if __name__ == "__main__":
    main()

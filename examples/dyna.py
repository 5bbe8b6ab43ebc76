"""Dyna-style DQN: a learned model of the environment, and Q-updates on transitions it imagines.

Dyna (Sutton 1990, "Integrated Architectures for Learning, Planning, and Reacting Based on
Approximating Dynamic Programming") learns a model of the environment from real experience and
learns values from experience the model generates as well as from real experience. Here:

* **the model** ``m(s, a) -> (r̂, ŝ', ĉ)``, an MLP on the observation and the one-hot action,
  learns from batches of DQN's replay (reward, next observation and whether the episode goes
  on, ``ĉ``), once an iteration after DQN's warm-up;
* **planning**: ``planning_updates`` times an iteration, a batch of stored states and actions
  is drawn from the replay, the model imagines what follows, and DQN's own update runs on
  ``(s, a, r̂, γⁿ · [ĉ > ½], ŝ')``.

Nothing of DQN is copied: both batches come from samplers declared on DQN's replay
(``part("sampler")``), planning calls DQN's update (``part("update")``) from a method added to
DQN's learner (``rl.extend``), and the model is a fragment of its own. DQN's real updates run as
they do without the model; every fusion mode computes the same bits.

    python examples/dyna.py --total-steps 50000
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

import jaxrl_fdg as rl
from jaxrl_fdg import testing
from jaxrl_fdg.core.names import BATCH, METRICS
from jaxrl_fdg.fragments.algorithms import dqn, offpolicy
from jaxrl_fdg.fragments.networks import MLP

MODEL_BATCH = "model_batch"  # real transitions the model learns from
PLAN_BATCH = "plan_batch"  # stored states and actions planning starts from
IMAGINED = "imagined"  # the model's transitions from them, for DQN's update


@dataclasses.dataclass(frozen=True)
class DynaConfig(dqn.DQNConfig):
    model_hidden: int = rl.hparam(64, "width of the model's two hidden layers")
    model_lr: float = rl.hparam(1e-3, "learning rate of the model")
    model_batch_size: int = rl.hparam(64, "real transitions per model update")
    planning_updates: int = rl.hparam(2, "Q-updates on imagined transitions per iteration")


class ModelState(NamedTuple):
    params: Any
    opt_state: Any


def model(ctx: rl.AlgorithmContext[DynaConfig]) -> rl.Fragment:
    """The model fragment: learns from ``model_batch``; its ``imagine`` method writes the
    ``imagined`` batch from ``plan_batch``."""
    hp = ctx.hparams
    size, actions = math.prod(ctx.observation_space.shape), ctx.action_space.n
    net = MLP((hp.model_hidden, hp.model_hidden), size + 2, activation="relu")
    tx = ctx.optimizer(optax.adam(hp.model_lr))
    warmed = offpolicy.warmed_up(hp.learning_starts)

    def predict(params: Any, exp: Any):
        x = jnp.concatenate(
            [exp.observation.reshape(-1, size), jax.nn.one_hot(exp.action, actions)], -1
        )
        out = net.apply(params, x)
        following = exp.observation + out[:, :size].reshape(exp.observation.shape)
        return out[:, size], following, out[:, size + 1]  # reward, next observation, logit of ĉ

    def init(key: jax.Array) -> ModelState:
        params = net.init(key, jnp.zeros((1, size + actions)))
        return ModelState(params, tx.init(params))

    def learn(state: ModelState, inputs: dict, key: jax.Array):
        del key
        batch = inputs[MODEL_BATCH]
        exp = batch.transitions

        def loss(params):
            reward, following, goes_on = predict(params, exp)
            errors = jnp.mean((following - exp.next_observation).reshape(len(reward), -1) ** 2, -1)
            errors += (reward - exp.reward) ** 2
            errors += optax.sigmoid_binary_cross_entropy(
                goes_on, (exp.discount > 0).astype(jnp.float32)
            )
            return jnp.mean(batch.weights * errors)

        value, grads = jax.value_and_grad(loss)(state.params)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        return ModelState(optax.apply_updates(state.params, updates), opt_state), {
            METRICS: {"loss": value}
        }

    def imagine(state: ModelState, inputs: dict, key: jax.Array):
        del key
        start = inputs[PLAN_BATCH].transitions
        reward, following, goes_on = jax.lax.stop_gradient(predict(state.params, start))
        discount = jnp.where(goes_on > 0, hp.gamma**hp.n_step, 0.0)
        exp = start._replace(reward=reward, discount=discount, next_observation=following)
        return state, {IMAGINED: offpolicy.Batch(exp, jnp.ones_like(reward))}

    return rl.fragment(
        "model",
        rl.Role.LEARNER,
        learn,
        init=init,
        inputs=(MODEL_BATCH,),
        outputs=(METRICS,),
        cadence=rl.every(1, when=warmed),
        methods=(rl.Method("imagine", imagine, inputs=(PLAN_BATCH,), outputs=(IMAGINED,)),),
    )


def build(ctx: rl.AlgorithmContext[DynaConfig]) -> rl.Algorithm:
    hp = ctx.hparams
    algorithm = dqn.build(ctx)
    update, sampler = algorithm.part("update"), algorithm.part("sampler")

    def plan(state: Any, inputs: dict, key: jax.Array):
        state, outputs = update(state, {BATCH: inputs[IMAGINED]}, key)
        return state, {METRICS: outputs[METRICS]}  # no priorities: nothing imagined is stored

    planning = rl.rounds(hp.planning_updates, when=offpolicy.warmed_up(hp.learning_starts))
    learner = rl.extend(
        algorithm.fragment("learner"),
        rl.Method("plan", plan, inputs=(IMAGINED,), outputs=(METRICS,), cadence=planning),
    )
    replay = algorithm.fragment("replay").with_methods(
        sampler("sample_model", MODEL_BATCH, batch_size=hp.model_batch_size),
        sampler("sample_plan", PLAN_BATCH),
    )
    algorithm = algorithm.replace_fragment(learner).replace_fragment(replay)
    return algorithm.with_fragments(model(ctx))


SPEC = dqn.SPEC._replace(
    name="dyna-dqn",
    hparams=DynaConfig,
    build=build,
    summary="Dyna-style DQN: a learned model and Q-updates on the transitions it imagines",
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
        s, loss = run.summary, run.metrics["model/loss"]
        print(f"{mode:>9}: final return {s['final_return']:.1f}, last model loss {loss[-1]:.4f}")
    print("same bits under every fusion mode")


if __name__ == "__main__":
    main()

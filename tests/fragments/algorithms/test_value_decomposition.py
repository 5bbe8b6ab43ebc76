"""VDN and QMIX trained as PQN trains (fragments.algorithms.value_decomposition, ``pqn-vdn`` and
``pqn-qmix``): the team's value from its agents', the monotonic mixer, the settings they refuse,
and learning on MPE's simple spread."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.fragments.algorithms.value_decomposition import QMixer

pytest.importorskip("jaxmarl")

SPREAD = "jaxmarl/MPE_simple_spread_v3"
TINY = dict(
    env=SPREAD,
    total_steps=3 * 2 * 8,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    profile="off",
    hparams={"num_minibatches": 2, "update_epochs": 1, "hidden_sizes": (16,)},
)


def test_the_mixer_rises_with_every_agent_value():
    mixer = QMixer(num_agents=3, mixing_size=8, hypernet_size=16)
    states = jax.random.normal(jax.random.key(0), (64, 10))
    q = jax.random.normal(jax.random.key(1), (64, 3))
    params = mixer.init(jax.random.key(2), q[0], states[0])
    grads = jax.vmap(jax.grad(lambda q, s: mixer.apply(params, q, s)))(q, states)
    assert grads.shape == (64, 3) and bool(jnp.all(grads >= 0.0))
    # ... and depends on the state: the same values mix differently in two states.
    one = mixer.apply(params, q[0], states[0])
    other = mixer.apply(params, q[0], states[1])
    assert float(jnp.abs(one - other)) > 0.0


def test_pqn_qmix_asks_for_the_world_state_and_refuses_to_go_without():
    resolved = rl.resolve(rl.TrainConfig(algo="pqn-qmix"))
    assert resolved.config.env_options == {"world_state": True}
    with pytest.raises(rl.ConfigError, match="world_state"):
        rl.resolve(rl.TrainConfig(algo="pqn-qmix", env=SPREAD, env_options={"world_state": False}))


def test_minibatches_split_games_not_agents():
    # 2 games x 8 steps = 16 rows of games: 3 minibatches cannot split them (48 agent rows could).
    with pytest.raises(rl.ConfigError, match=r"num_envs \(games\)"):
        rl.resolve(rl.TrainConfig(algo="pqn-vdn", **{**TINY, "hparams": {"num_minibatches": 3}}))


def test_a_continuous_game_is_refused():
    with pytest.raises(rl.ConfigError, match="Discrete"):
        rl.resolve(
            rl.TrainConfig(
                algo="pqn-vdn",
                env="jaxmarl/MPE_simple_spread_v3",
                env_options={"action_type": "Continuous"},
            )
        )


@pytest.mark.parametrize("algo", ["pqn-vdn", "pqn-qmix"])
def test_tiny_runs_update_the_agents_and_the_mixer(algo):
    result = rl.train(rl.TrainConfig(algo=algo, **TINY))
    losses = np.asarray(result.metrics["loss"])
    assert losses.shape == (3,) and np.all(np.isfinite(losses))
    params = result.state.fragments["learner"].params["params"]
    assert set(params) == ({"agents", "mixer"} if algo == "pqn-qmix" else {"agents"})


@pytest.mark.slow
def test_pqn_vdn_learns_simple_spread():
    # A random team scores about -28 a game on simple spread; VDN reaches about -20 in 409,600
    # game steps (30 s here).
    result = rl.train(rl.TrainConfig(algo="pqn-vdn", total_steps=409_600, progress=False, out=None))
    returns = np.asarray(result.metrics["episode_return_sum"]) / np.maximum(
        np.asarray(result.metrics["episodes"]), 1
    )
    assert returns[-10:].mean() > -23.0, returns[-10:]

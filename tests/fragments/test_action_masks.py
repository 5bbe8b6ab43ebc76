"""Action masks: every discrete policy acts, learns and is evaluated over the legal actions only.

Minefield-v0 (``envs/classic/minefield.py``) publishes an action mask and ends an episode with
−1 where an illegal action steps onto a mine; its observation is a dict (an image and a vector),
so these runs also carry structured observations through actors, trajectories, replay and
learners. A run that respects the mask takes no illegal action and loses no episode; the same run
without the mask loses some (the control, so the audit can fail)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.core.algorithm import get as get_algorithm
from jaxrl_fdg.core.names import ACTION_MASK, METRICS, NEXT_ACTION_MASK, TRAJECTORY
from jaxrl_fdg.envs.base import Environment
from jaxrl_fdg.fragments import distributions as dist
from jaxrl_fdg.fragments import exploration

DISCRETE = ("ppo", "a2c", "impala", "dqn", "c51", "pqn")
# PPO's actor-critic and DQN's Q-learning in the default tier; the others share their code
# (actor_critic, dqn) and run in the slow tier.
SWEEP = [a if a in ("ppo", "dqn") else pytest.param(a, marks=pytest.mark.slow) for a in DISCRETE]


class UnmaskedMinefield(envs.Minefield):
    """Minefield without its mask: the same dynamics, every action offered."""

    name = "UnmaskedMinefield-v0"
    action_mask = Environment.action_mask


if "UnmaskedMinefield-v0" not in envs.registered():
    envs.register("UnmaskedMinefield-v0", UnmaskedMinefield)


def _audit(state, inputs, key):
    """Per rollout: actions the mask forbade, and episodes lost on a mine (reward −1)."""
    del key
    trajectory = inputs[TRAJECTORY]
    illegal = jnp.float32(0.0)
    if ACTION_MASK in trajectory.info:
        mask = trajectory.info[ACTION_MASK]
        taken = jnp.take_along_axis(mask, trajectory.action[..., None], axis=-1)[..., 0]
        illegal = jnp.sum(~taken, dtype=jnp.float32)
    mines = jnp.sum(trajectory.reward < 0, dtype=jnp.float32)
    return state, {METRICS: {"illegal": illegal, "mines": mines}}


def _audited(algo: str):
    """``algo`` with the audit, and an in-graph evaluation of its greedy policy every other
    iteration on 8 episodes."""
    spec = get_algorithm(algo)
    audit = rl.fragment("audit", "transform", _audit, inputs=(TRAJECTORY,), outputs=(METRICS,))

    def build(ctx):
        algorithm = spec.build(ctx)
        evaluator = rl.in_graph_evaluator(ctx, algorithm, every=2, episodes=8)
        return algorithm.with_fragments(audit, evaluator)

    return spec._replace(build=build)


def _run(algo: str, env: str = "Minefield-v0"):
    config = testing.tiny(algo, iterations=6, env=env, log_every=1)
    return rl.train(config, _audited(algo))


@pytest.mark.parametrize("algo", SWEEP)
def test_a_masked_policy_never_takes_an_illegal_action(algo):
    result = _run(algo)
    assert np.sum(result.metrics["audit/illegal"]) == 0
    assert np.sum(result.metrics["audit/mines"]) == 0
    # Evaluation's greedy policy respects the mask too: no lost episode, returns in [0, 1].
    runs = np.asarray(result.metrics["evaluator/runs"]) > 0
    evaluated = np.asarray(result.metrics["evaluator/eval_return"])[runs]
    assert evaluated.size and np.all(evaluated >= 0.0)


def test_without_the_mask_the_same_run_steps_onto_mines():
    result = _run("ppo", env="UnmaskedMinefield-v0")
    assert np.sum(result.metrics["audit/mines"]) > 0


def test_masked_runs_agree_across_fusion_modes():
    testing.assert_modes_agree(testing.tiny("ppo", env="Minefield-v0"), modes=("step", "scan"))


def test_the_env_reports_masks_of_the_observation_and_of_the_state_reached():
    env, params = envs.make("Minefield-v0")
    state, ts = env.reset_batch(jax.random.key(0), 8, params)
    assert ts.info[ACTION_MASK].dtype == jnp.bool_ and ts.info[ACTION_MASK].shape == (8, 5)
    for t in range(20):
        action = jnp.full((8,), 4, jnp.int32)  # right: onto a mine where one is next
        state, ts = env.step_batch(jax.random.key(t), state, action, params)
        ended = np.asarray(ts.terminated | ts.truncated)
        # Where no episode ended, the mask to act on is the mask of the state reached.
        np.testing.assert_array_equal(
            np.asarray(ts.info[ACTION_MASK])[~ended], np.asarray(ts.info[NEXT_ACTION_MASK])[~ended]
        )
    # Stay (action 0) is always legal.
    assert bool(jnp.all(ts.info[ACTION_MASK][:, 0]))


def test_wrappers_read_the_mask_of_the_wrapped_environment():
    env, params = envs.make("Minefield-v0")
    wrapped = envs.EpisodeStatistics(envs.TimeLimit(env, 7))
    assert wrapped.has_action_mask
    _, ts = wrapped.reset(jax.random.key(0), wrapped.default_params)
    _, raw = env.reset(jax.random.key(0), params)
    np.testing.assert_array_equal(ts.info[ACTION_MASK], raw.info[ACTION_MASK])
    assert not envs.EpisodeStatistics(envs.make("CartPole-v1")[0]).has_action_mask


def test_masked_categorical_is_the_distribution_over_legal_actions():
    logits = jnp.array([[0.3, -1.2, 2.0, 0.5], [1.0, 1.0, 1.0, 1.0]])
    mask = jnp.array([[True, False, True, True], [False, False, True, False]])
    masked = dist.mask_logits(logits, mask)
    legal = jnp.array([0.3, 2.0, 0.5])
    np.testing.assert_allclose(
        dist.categorical_entropy(masked)[0], dist.categorical_entropy(legal), rtol=1e-6
    )
    assert float(dist.categorical_entropy(masked)[1]) == 0.0  # one legal action: no entropy
    np.testing.assert_allclose(
        dist.categorical_log_prob(masked, jnp.array([2, 2]))[0],
        jax.nn.log_softmax(legal)[1],
        rtol=1e-6,
    )
    grad = jax.grad(lambda x: dist.categorical_entropy(dist.mask_logits(x, mask)).sum())(logits)
    assert bool(jnp.all(jnp.isfinite(grad))) and float(grad[0, 1]) == 0.0
    draws = jax.vmap(lambda k: dist.categorical_sample(k, masked))(
        jax.random.split(jax.random.key(0), 500)
    )
    assert bool(jnp.all(jnp.take_along_axis(mask, draws.T, axis=-1)))


def test_epsilon_greedy_explores_only_legal_actions():
    mask = jnp.array([[False, True, False, True, False]] * 64)
    q = jnp.zeros((64, 5)).at[:, 0].set(10.0)  # the best action is illegal
    keys = jax.random.split(jax.random.key(1), 50)
    actions = jax.vmap(lambda k: exploration.epsilon_greedy(k, q, 0.5, mask))(keys)
    assert set(np.unique(np.asarray(actions))) == {1, 3}

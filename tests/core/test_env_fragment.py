"""The graph's env fragment (``jaxrl_fdg.core.env_fragment``): a batch of environments stepped
in lock-step with running episode statistics, reset where an episode ends; the ended episode's
totals on the step's edges; ``observation`` and ``episode_step`` published; the same bits in
numpy as in JAX (a host simulator's step)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import envs, testing
from jaxrl_fdg.core.env_fragment import (
    ENV_OUTPUTS,
    EnvFragmentState,
    batched_env_fragment,
    env_fragment,
    publish,
    record_step,
)
from jaxrl_fdg.core.fragment import call, published
from jaxrl_fdg.envs.base import TimeStep

B = 3


def _counting(ends_at: tuple[int, ...]):
    """A simulator of ``B`` environments whose state counts steps; environment ``b`` ends its
    episodes (terminated) every ``ends_at[b]`` steps; rewards are 0.5 per step; the observation
    is the count (0 again after an end), the final one the count reached."""
    ends = jnp.array(ends_at)

    def init(key):
        return jnp.zeros(B, jnp.int32), jnp.zeros(B, jnp.float32)

    def step(count, action, key):
        reached = count + 1
        done = reached % ends == 0
        after = jnp.where(done, 0, reached)
        reward = jnp.full(B, 0.5, jnp.float32)
        ts = TimeStep(after * 1.0, reward, done, jnp.zeros(B, bool), reached * 1.0)
        return after, ts

    return batched_env_fragment("env", B, init, step)


def test_episode_statistics_run_and_reset_where_an_episode_ends():
    frag = _counting(ends_at=(2, 3, 100))
    state = frag.init(jax.random.key(0))
    testing.assert_same_bits(
        published(frag, state),
        {"observation": jnp.zeros(B), "episode_step": jnp.zeros(B, jnp.int32)},
    )
    rows = []
    for _ in range(3):
        state, out = call(frag, state, {"action": jnp.zeros(B)}, jax.random.key(0))
        assert set(out) == set(ENV_OUTPUTS)
        rows.append(out)
    # Env 0 ends at steps 2 (return 0.5 + 0.5, length 2), env 1 at step 3 (1.5, 3).
    np.testing.assert_array_equal(
        [r["terminated"] for r in rows], [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    )
    np.testing.assert_array_equal(rows[1]["episode_return"][0], 1.0)
    np.testing.assert_array_equal(rows[1]["episode_length"][0], 2)
    np.testing.assert_array_equal(rows[2]["episode_return"][1], 1.5)
    np.testing.assert_array_equal(rows[2]["episode_length"][1], 3)
    # After three steps: env 0 is 1 step into its second episode, env 1 just reset, env 2 at 3.
    np.testing.assert_array_equal(state.episode_length, [1, 0, 3])
    np.testing.assert_array_equal(state.episode_return, [0.5, 0.0, 1.5])
    np.testing.assert_array_equal(publish(state)["episode_step"], [1, 0, 3])
    np.testing.assert_array_equal(rows[2]["next_observation"], [1.0, 3.0, 3.0])  # before reset


def test_a_host_step_in_numpy_records_the_same_bits_as_in_jax():
    state = EnvFragmentState(
        None, np.zeros(2, np.float32), np.float32([0.25, 1.5]), np.int32([3, 7])
    )
    ts = TimeStep(
        np.float32([1, 2]),
        np.float32([0.125, 0.5]),
        np.array([True, False]),
        np.array([False, False]),
        np.float32([3, 4]),
    )
    in_numpy = record_step(state, None, ts, xp=np)
    in_jax = record_step(jax.tree.map(jnp.asarray, state), None, jax.tree.map(jnp.asarray, ts))
    testing.assert_same_bits(in_numpy, in_jax)
    np.testing.assert_array_equal(in_numpy[1]["episode_return"], [0.375, 2.0])
    np.testing.assert_array_equal(in_numpy[0].episode_return, [0.0, 2.0])  # env 0 ended


def test_env_fragment_wraps_a_jax_environment():
    env, params = envs.make("CartPole-v1")
    frag = env_fragment(env, params, num_envs=B)
    state = frag.init(jax.random.key(0))
    assert state.observation.shape == (B, 4) and frag.name == "env"
    state, out = call(frag, state, {"action": jnp.zeros(B, jnp.int32)}, jax.random.key(1))
    np.testing.assert_array_equal(out["reward"], np.ones(B))  # CartPole: 1 per step
    np.testing.assert_array_equal(state.episode_length, np.ones(B))


class _Flagged(envs.Minefield):
    """Minefield reporting whether the agent stands in the goal column."""

    def info_env(self, state, params):
        return {"crossed": (state.position[1] == params.size - 1).astype(jnp.float32)}


def test_env_info_reaches_the_trajectory_and_the_rows(tmp_path):
    if "Flagged-v0" not in envs.registered():
        envs.register("Flagged-v0", _Flagged)
    config = testing.tiny("ppo", env="Flagged-v0", iterations=6, log_every=1)
    result = rl.train(config.replace(out=str(tmp_path), run_name="f"))
    crossed = np.asarray(result.metrics["info_sum/crossed"])
    rows = [json.loads(line) for line in (tmp_path / "f" / "metrics.jsonl").open()]
    # Minefield's only positive return is the crossing: the fraction of episodes that ended
    # crossed is the mean return over episodes that did not step onto a mine (here: none do,
    # the mask forbids it).
    for row, total in zip(rows, crossed, strict=True):
        if row["episodes"]:
            assert row["crossed"] == pytest.approx(total / row["episodes"])
            assert row["crossed"] == pytest.approx(row["episode_return"])
        else:
            assert row["crossed"] is None
    assert crossed.sum() > 0

"""The user's own code failing, as a third hostile probe made it fail: an algorithm file that
raises as it is imported, in ``build`` or in ``init``, an actor whose action has the wrong shape,
and environments that break their own spaces (a reward of shape [2], ``Discrete(0)``, an empty
observation). Each is one line naming the file, line and function (or both shapes), exit 2, and
no run folder; ``--traceback`` shows the whole traceback."""

from pathlib import Path

import jax.numpy as jnp
import pytest
from faultkit import one_line_error

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.envs import Box, CartPole, Discrete, registry
from jaxrl_fdg.errors import ConfigError

REINFORCE = (Path(__file__).parents[2] / "examples" / "reinforce.py").read_text()
TINY = ["--total-steps", "256", "--num-envs", "4", "--rollout-len", "16", "--no-progress"]


def _algorithm(tmp_path: Path, name: str, old: str, new: str) -> str:
    assert old in REINFORCE
    (tmp_path / f"{name}.py").write_text(REINFORCE.replace(old, new, 1))
    return f"{tmp_path / name}.py:SPEC"


def _line_of(tmp_path: Path, name: str, text: str) -> int:
    lines = (tmp_path / f"{name}.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.mark.parametrize(
    "name, old, new, function",
    [
        (
            "at_import",
            "SPEC = rl.AlgorithmSpec(",
            "raise RuntimeError('boom')\nSPEC = rl.AlgorithmSpec(",
            "<module>",
        ),
        (
            "in_build",
            "    policy = MLP(",
            "    raise ValueError('boom')\n    policy = MLP(",
            "build",
        ),
        (
            "in_init",
            "        return params, tx.init(params)",
            "        raise KeyError('boom')",
            "init",
        ),
    ],
)
def test_an_algorithm_file_that_raises_is_one_line_naming_where(
    name, old, new, function, tmp_path, capsys
):
    algo = _algorithm(tmp_path, name, old, new)
    out = tmp_path / "runs"
    assert main(["train", "--algo", algo, *TINY, "--out", str(out)]) == 2
    line = _line_of(tmp_path, name, "boom")
    error = one_line_error(capsys)
    assert f"in your code {tmp_path / name}.py, line {line}, in {function}: " in error
    assert "Error: " in error and "boom" in error
    assert not out.exists() or list(out.iterdir()) == []


def test_a_bad_cadence_names_the_line_that_declared_it(tmp_path, capsys):
    algo = _algorithm(
        tmp_path,
        "cad",
        "        init=init,\n",
        "        init=init,\n        cadence=rl.every(0),\n",
    )
    assert main(["train", "--algo", algo, *TINY, "--out", str(tmp_path / "runs")]) == 2
    line = _line_of(tmp_path, "cad", "rl.every(0)")
    assert one_line_error(capsys) == (
        "jaxrl-fdg: error: every() takes a positive integer, got 0 (in your code "
        f"{tmp_path / 'cad'}.py, line {line}, in build)"
    )


def test_traceback_shows_the_whole_traceback(tmp_path):
    algo = _algorithm(
        tmp_path, "b", "    policy = MLP(", "    raise ValueError('boom')\n    policy = MLP("
    )
    with pytest.raises(ValueError, match="boom"):
        main(["--traceback", "train", "--algo", algo, *TINY, "--out", str(tmp_path / "runs")])


def test_an_action_of_the_wrong_shape_names_both_shapes(tmp_path, capsys):
    algo = _algorithm(
        tmp_path,
        "act",
        '{"action": jax.random.categorical(key, logits).astype(jnp.int32)}',
        '{"action": jnp.zeros((3, 7), jnp.int32)}',
    )
    out = tmp_path / "runs"
    assert main(["train", "--algo", algo, *TINY, "--out", str(out)]) == 2
    assert one_line_error(capsys) == (
        "jaxrl-fdg: error: the action reaching CartPole-v1 is int32 (3, 7); it takes an "
        "integer array of shape (4,) (num_envs = 4 x Discrete(2)): look at what writes the "
        "edge 'action'"
    )
    assert list(out.iterdir()) == []


class _TwoRewards(CartPole):
    def step_env(self, key, state, action, params):
        state, observation, reward, terminated = super().step_env(key, state, action, params)
        return state, observation, jnp.stack([reward, reward]), terminated


class _NoAction(CartPole):
    def action_space(self, params):
        return Discrete(0)


class _NothingToSee(CartPole):
    def observation_space(self, params):
        return Box(0.0, 1.0, (0,), jnp.float32)

    def reset_env(self, key, params):
        state, _ = super().reset_env(key, params)
        return state, jnp.zeros((0,), jnp.float32)

    def step_env(self, key, state, action, params):
        state, _, reward, terminated = super().step_env(key, state, action, params)
        return state, jnp.zeros((0,), jnp.float32), reward, terminated


@pytest.mark.parametrize(
    "env, message",
    [
        (_TwoRewards, "step returns reward of shape (2,); it must be one value per environment"),
        (_NoAction, "the action space Discrete(0) has no action (Discrete(n) needs n >= 1)"),
        (_NothingToSee, "holds no value: a policy has nothing to observe"),
    ],
    ids=["reward-of-two", "discrete-0", "empty-observation"],
)
def test_an_environment_that_breaks_its_spaces_is_refused_before_compiling(
    env, message, monkeypatch
):
    monkeypatch.setitem(registry._REGISTRY, "Broken-v0", env)
    with pytest.raises(ConfigError, match="^CartPole-v1: ") as caught:
        rl.config.resolve(rl.TrainConfig(env="Broken-v0"))
    assert message in str(caught.value)

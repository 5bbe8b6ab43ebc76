"""Bad configuration is rejected before compiling, with the value and the valid choices named."""

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import config as cfg
from jaxrl_fdg.errors import ConfigError


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"algo": "ppp"}, "unknown algorithm 'ppp'; did you mean 'ppo'"),
        ({"env": "CartPole-v0"}, "unknown environment 'CartPole-v0'; did you mean 'CartPole-v1'"),
        (
            {"fusion": "jit"},
            "unknown fusion mode 'jit' \\(valid: eager, step, fragment, iteration, scan\\)",
        ),
        ({"num_envs": 0}, "num_envs must be a positive integer, got 0"),
        ({"rollout_len": -3}, "rollout_len must be a positive integer, got -3"),
        ({"total_steps": 100}, "total_steps = 100 is less than one iteration"),
        ({"hparams": {"num_minibatches": 3}}, "512 does not divide into num_minibatches = 3"),
        ({"hparams": {"lrr": 0.1}}, "unknown ppo hyperparameter\\(s\\) lrr \\(valid: lr, "),
        ({"hparams": {"gamma": 1.5}}, "gamma must be in \\[0.0, 1.0\\], got 1.5"),
        ({"hparams": {"activation": "sigmoid"}}, "unknown activation 'sigmoid' \\(valid: tanh"),
        ({"hparams": {"update_epochs": 2.5}}, "update_epochs must be of type int, got 2.5"),
    ],
)
def test_resolve_rejects(changes, message):
    with pytest.raises(ConfigError, match=message):
        cfg.resolve(rl.TrainConfig(out=None, **changes))


def test_iterations_round_down_to_whole_iterations():
    config = rl.TrainConfig(total_steps=1000, num_envs=4, rollout_len=128)
    assert config.num_iterations == 1 and config.steps_per_iteration == 512


def test_boundaries_auto_and_explicit():
    assert rl.TrainConfig().boundary_every == 40  # 976 iterations / 25 boundaries, rounded up
    assert rl.TrainConfig(log_every=7).boundary_every == 7


def test_file_round_trip(tmp_path):
    original = rl.TrainConfig(
        seed=3, fusion="fragment", hparams={"lr": 1e-3, "hidden_sizes": (32,)}
    )
    path = tmp_path / "config.toml"
    path.write_text(cfg.dump_toml(cfg.to_mapping(cfg.resolve(original))))
    loaded = cfg.from_mapping(cfg.load(path), str(path))
    resolved = cfg.resolve(loaded)
    assert loaded.seed == 3 and loaded.fusion == "fragment"
    assert resolved.hparams == cfg.resolve(original).hparams
    assert resolved.hparams.hidden_sizes == (32,)


def test_file_errors_name_the_key_and_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('algo = "ppo"\nnum_env = 4\n')
    with pytest.raises(
        ConfigError, match="bad.toml: unknown key\\(s\\) num_env \\(valid: .*num_envs"
    ):
        cfg.from_mapping(cfg.load(path), str(path))
    path.write_text('num_envs = "four"\n')
    with pytest.raises(ConfigError, match="bad.toml: num_envs must be of type int, got 'four'"):
        cfg.from_mapping(cfg.load(path), str(path))
    path.write_text("num_envs = [\n")
    with pytest.raises(ConfigError, match="not valid toml"):
        cfg.load(path)
    with pytest.raises(ConfigError, match="does not exist"):
        cfg.load(tmp_path / "missing.toml")
    (tmp_path / "c.yaml").write_text("a: 1")
    with pytest.raises(ConfigError, match="must end in .toml or .json"):
        cfg.load(tmp_path / "c.yaml")

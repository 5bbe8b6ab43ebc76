"""Bad configuration is rejected before compiling, with the value and the valid choices named;
config files (TOML, JSON, YAML) name the file and the key; the persistent compilation cache."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest
import tomli_w
import yaml

import jaxrl_fdg as rl
from jaxrl_fdg import config as cfg
from jaxrl_fdg.cli import common, main
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import compile_cache

WRITERS = {"toml": tomli_w.dumps, "json": json.dumps, "yaml": yaml.safe_dump, "yml": yaml.safe_dump}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"algo": "ppp"}, "unknown algorithm 'ppp'; did you mean 'ppo'"),
        ({"env": "CartPole-v0"}, "unknown environment 'CartPole-v0'; did you mean 'CartPole-v1'"),
        (
            {"fusion": "jit"},
            "unknown fusion mode 'jit' \\(valid: eager, step, fragment, iteration, scan, auto\\)",
        ),
        ({"num_envs": 0}, "num_envs must be a positive integer, got 0"),
        ({"rollout_len": -3}, "rollout_len must be a positive integer, got -3"),
        ({"total_steps": 100}, "total_steps = 100 is less than one iteration"),
        ({"schedule_steps": 100}, "schedule_steps = 100 is less than one iteration"),
        ({"schedule_steps": 0}, "schedule_steps must be a positive integer, got 0"),
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


def test_schedules_span_the_budget_unless_schedule_steps_says_otherwise():
    config = rl.TrainConfig(total_steps=5120, num_envs=4, rollout_len=128, out=None)
    assert cfg.resolve(config).context.num_iterations == 10
    longer = cfg.resolve(config.replace(total_steps=10_240, schedule_steps=5120))
    assert (longer.config.num_iterations, longer.context.num_iterations) == (20, 10)


def test_boundaries_auto_and_explicit():
    ppo = cfg.resolve(rl.TrainConfig()).config
    assert ppo.boundary_every == 40  # 976 iterations / 25 boundaries, rounded up
    assert ppo.replace(log_every=7).boundary_every == 7


def test_unset_run_settings_take_the_algorithms_defaults():
    # SAC's default run is Pendulum-v1, 30,000 steps of 4 envs × 8
    # (fragments/algorithms/continuous.py).
    sac = cfg.resolve(rl.TrainConfig(algo="sac", out=None)).config
    assert (sac.env, sac.total_steps, sac.num_envs, sac.rollout_len) == (
        "Pendulum-v1",
        30_000,
        4,
        8,
    )
    assert sac.log_every == 0  # SAC names none: the framework's default
    # A value given wins over the algorithm's; the rest still come from it.
    given = cfg.resolve(rl.TrainConfig(algo="sac", num_envs=2, out=None)).config
    assert (given.num_envs, given.rollout_len, given.env) == (2, 8, "Pendulum-v1")
    # An unresolved config says what is missing instead of computing with None.
    with pytest.raises(ValueError, match="total_steps is unset"):
        _ = rl.TrainConfig(algo="sac").num_iterations


def test_the_run_folder_records_the_resolved_run_settings(tmp_path):
    mapping = cfg.to_mapping(cfg.resolve(rl.TrainConfig(algo="td3", out=str(tmp_path))))
    assert {k: mapping[k] for k in ("env", "total_steps", "num_envs", "rollout_len")} == {
        "env": "Pendulum-v1",
        "total_steps": 30_000,
        "num_envs": 4,
        "rollout_len": 8,
    }
    assert mapping["log_every"] == 0


def test_an_algorithm_cannot_default_a_setting_that_is_not_a_run_setting():
    with pytest.raises(ValueError, match="seed"):
        rl.TrainConfig().with_defaults({"seed": 3})


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


def test_env_options_reach_the_environment_and_the_run_folder(tmp_path):
    original = rl.TrainConfig(env="CartPole-v1", env_options={"max_steps": 50, "gravity": 5.0})
    resolved = cfg.resolve(original)
    assert (resolved.env_params.max_steps, resolved.env_params.gravity) == (50, 5.0)
    path = tmp_path / "config.toml"
    path.write_text(cfg.dump_toml(cfg.to_mapping(resolved)))
    loaded = cfg.from_mapping(cfg.load(path), str(path))
    assert loaded.env_options == {"max_steps": 50, "gravity": 5.0}


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--env-option", "bogus=1"], "unknown parameter(s) ['bogus'] for 'CartPole-v1'; valid: "),
        (["--env-option", "max_steps"], "--env-option takes KEY=VALUE"),
    ],
)
def test_bad_env_options_exit_2_before_compiling(flags, message, capsys):
    assert main(["train", "--env", "CartPole-v1", *flags, "--out", ""]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_env_option_values_read_as_toml_else_text():
    options = common.env_options(["a=200", "b=5.0", "c=True", "d=false", "e=NoFrameskip", 'f="x"'])
    assert options == {"a": 200, "b": 5.0, "c": True, "d": False, "e": "NoFrameskip", "f": "x"}


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
    (tmp_path / "c.txt").write_text("a: 1")
    with pytest.raises(ConfigError, match="must end in .toml, .json, .yaml, .yml"):
        cfg.load(tmp_path / "c.txt")


@pytest.mark.parametrize("suffix", WRITERS)
@pytest.mark.parametrize(
    "data, message",
    [
        ({"num_env": 4}, "unknown key(s) num_env (valid: "),
        ({"hparams": {"lrr": 0.1}}, "unknown ppo hyperparameter(s) lrr (valid: lr, "),
        ({"num_envs": "four"}, "num_envs must be of type int, got 'four'"),
        ({"hparams": {"update_epochs": 2.5}}, "update_epochs must be of type int, got 2.5"),
        ({"hparams": "fast"}, "hparams must be a table, got 'fast'"),
        ({"num_envs": 0}, "num_envs must be a positive integer, got 0"),
        ({"log_every": -1}, "log_every must be a non-negative number, got -1"),
        ({"fusion": "jit"}, "unknown fusion mode 'jit' (valid: "),
        ({"hparams": {"gamma": 1.5}}, "gamma must be in [0.0, 1.0], got 1.5"),
        ({"hparams": {"hidden_sizes": [64, 0]}}, "hidden_sizes entry must be a positive integer"),
    ],
)
def test_every_file_format_names_the_file_and_the_key(suffix, data, message, tmp_path):
    path = tmp_path / f"bad.{suffix}"
    path.write_text(WRITERS[suffix](data))
    with pytest.raises(ConfigError) as e:
        cfg.from_mapping(cfg.load(path), str(path))
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value)


def test_a_yaml_file_reads_as_its_toml_twin(tmp_path):
    data = {"fusion": "step", "seed": 3, "hparams": {"lr": 1e-3, "hidden_sizes": [32]}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    (tmp_path / "c.toml").write_text(tomli_w.dumps(data))
    from_yaml = cfg.from_mapping(cfg.load(tmp_path / "c.yaml"), "c.yaml")
    assert from_yaml == cfg.from_mapping(cfg.load(tmp_path / "c.toml"), "c.toml")
    assert cfg.resolve(from_yaml).hparams.hidden_sizes == (32,)
    (tmp_path / "empty.yml").write_text("")
    assert cfg.from_mapping(cfg.load(tmp_path / "empty.yml")) == rl.TrainConfig()
    (tmp_path / "null.yml").write_text("out: null\n")  # YAML and JSON can say "no run folder"
    assert cfg.from_mapping(cfg.load(tmp_path / "null.yml")).out is None


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("c.yaml", "fusion: [scan\nseed: 1\n", "is not valid yaml: "),
        ("c.json", '{"seed": }', "is not valid json: "),
        ("c.yaml", "- scan\n- step\n", "must hold a table of settings, got list"),
    ],
)
def test_unreadable_files_are_one_line_errors(name, text, message, tmp_path):
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as e:
        cfg.load(tmp_path / name)
    assert message in str(e.value) and "\n" not in str(e.value)


# -- the persistent compilation cache ------------------------------------------------------


@pytest.fixture
def no_cache_configured():
    """JAX's cache settings cleared for one test and restored after (nothing compiles inside)."""
    names = (
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
        "jax_enable_compilation_cache",
    )
    saved = {name: getattr(jax.config, name) for name in names}
    jax.config.update("jax_compilation_cache_dir", None)
    yield
    for name, value in saved.items():
        jax.config.update(name, value)


def test_enable_keeps_a_cache_directory_already_configured():
    configured = jax.config.jax_compilation_cache_dir  # tests/conftest.py sets one
    threshold = jax.config.jax_persistent_cache_min_compile_time_secs
    assert configured
    assert compile_cache.enable("/somewhere/else") == Path(configured)
    assert jax.config.jax_compilation_cache_dir == configured
    assert jax.config.jax_persistent_cache_min_compile_time_secs == threshold


def test_enable_uses_the_user_cache_directory(no_cache_configured, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.default_directory() == tmp_path / "jaxrl_fdg" / "xla"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compile_cache.default_directory() == Path.home() / ".cache" / "jaxrl_fdg" / "xla"
    assert compile_cache.enable(tmp_path / "xla") == tmp_path / "xla"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "xla")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == compile_cache.MIN_COMPILE_TIME_S


def test_enable_does_nothing_when_jax_caching_is_off(no_cache_configured):
    jax.config.update("jax_enable_compilation_cache", False)
    assert compile_cache.enable() is None
    assert jax.config.jax_compilation_cache_dir is None


def test_enable_keeps_JAX_COMPILATION_CACHE_DIR(tmp_path):
    code = "from jaxrl_fdg.run import compile_cache; print(compile_cache.enable())"
    env = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "mine"), "XDG_CACHE_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip() == str(tmp_path / "mine")

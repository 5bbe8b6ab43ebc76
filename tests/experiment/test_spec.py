"""Experiment files: every bad key or value stops before anything runs, with one line naming it;
pairs that cannot fit are left out and said so; suites load as files do."""

import pytest

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.experiment import spec, suites

SMALL = {
    "algos": ["ppo", "dqn"],
    "envs": ["CartPole-v1", "Acrobot-v1"],
    "seeds": 3,
    "total_steps": 50000,
}


def test_the_smallest_file_makes_one_cell_per_pair_with_its_seeds_as_lanes():
    cells, left_out = spec.cells(spec.parse(SMALL))
    assert [c.name for c in cells] == [
        "ppo-CartPole-v1",
        "ppo-Acrobot-v1",
        "dqn-CartPole-v1",
        "dqn-Acrobot-v1",
    ]
    assert not left_out
    config = cells[0].config
    assert (config.num_seeds, config.seed, config.total_steps) == (3, 0, 50000)
    assert config.checkpoint_every == 5000  # ten checkpoints over the budget by default
    assert cells[0].digest() == spec.cells(spec.parse(SMALL))[0][0].digest()
    changed = spec.cells(spec.parse({**SMALL, "total_steps": 60000}))[0][0]
    assert changed.digest() != cells[0].digest()


def test_a_pair_whose_algorithm_cannot_act_in_the_env_is_left_out_with_the_reason():
    cells, left_out = spec.cells(spec.parse({**SMALL, "envs": ["CartPole-v1", "Pendulum-v1"]}))
    assert "dqn-Pendulum-v1" not in [c.name for c in cells]
    assert [(x.name, x.reason) for x in left_out] == [
        ("dqn-Pendulum-v1", "dqn needs a Discrete action space, got Box")
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"algo": ["ppo"]}, "unknown key(s) algo (valid: name, suite, algos"),
        ({"algos": ["ppo", "nope"]}, "algos: unknown algorithm 'nope'"),
        ({"seeds": 0}, "seeds must be a whole number >= 1, got 0"),
        ({"seeds": "3"}, "seeds must be a whole number >= 1, got '3'"),
        ({"total_steps": {"CartPole-v1": 1000}}, "total_steps has no budget for Acrobot-v1"),
        ({"envs": ["CartPole-v1", "CartPole-v1"]}, "envs names CartPole-v1 more than once"),
        ({"envs": ["NoSuchEnv-v0"]}, "NoSuchEnv-v0"),
        ({"settings": {"sac": {"lr": 1e-3}}}, "settings.sac names an algorithm not in algos"),
        ({"settings": {"ppo": {"lr": -1.0}}}, "ppo on CartPole-v1: "),
        ({"settings": {"ppo": {"no_such_hparam": 1}}}, "no_such_hparam"),
        ({"settings": {"ppo": {"total_steps": 5}}}, "settings.ppo.total_steps is set by the"),
        ({"run": {"num_seeds": 5}}, "run.num_seeds is set by the experiment's grid"),
        ({"run": {"fusoin": "step"}}, "run.fusoin is not a run setting"),
        ({"run": {"num_processes": 2}}, "run.num_processes: an experiment's cell runs in one"),
        ({"normalize": {"CartPole-v1": [500, 0]}}, "normalize.CartPole-v1 must be [random, ref"),
        ({"suite": "atari"}, "suite 'atari' is not one of classic, minatar, brax"),
        ({"settings": {"ppo": [{"lr": 1e-3}]}}, "settings.ppo[0] needs a name"),
    ],
)
def test_a_bad_key_or_value_is_one_line_naming_it(change, message):
    data = {**SMALL, **change}
    with pytest.raises(ConfigError) as error:
        spec.cells(spec.parse(data, source="exp.toml"))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_missing_key_names_what_it_is_for():
    with pytest.raises(ConfigError, match="'seeds' is missing"):
        spec.parse({k: v for k, v in SMALL.items() if k != "seeds"})


def test_named_settings_make_a_cell_each_and_a_config_file_is_read_relative_to_the_file(tmp_path):
    (tmp_path / "tuned.toml").write_text('algo = "ppo"\nnum_envs = 8\n[hparams]\nlr = 0.001\n')
    data = {
        **SMALL,
        "algos": ["ppo"],
        "envs": ["CartPole-v1"],
        "settings": {
            "ppo": [{"name": "tuned", "config": "tuned.toml"}, {"name": "slow", "lr": 1e-5}]
        },
    }
    experiment = spec.parse(data, base=tmp_path)
    cells, _ = spec.cells(experiment)
    assert [c.name for c in cells] == ["ppo-CartPole-v1-tuned", "ppo-CartPole-v1-slow"]
    assert cells[0].config.num_envs == 8 and cells[0].config.hparams["lr"] == 0.001
    assert cells[0].config.total_steps == 50000  # the grid's budget, not the file's
    assert cells[1].config.hparams["lr"] == 1e-5
    (tmp_path / "other.toml").write_text('algo = "dqn"\n')
    data["settings"] = {"ppo": {"config": "other.toml"}}
    with pytest.raises(ConfigError, match="is a config of dqn, not ppo"):
        spec.parse(data, base=tmp_path)


def test_a_suite_is_a_file_of_its_own_keys_which_a_file_overrides(tmp_path):
    assert spec.load("minatar").envs == suites.SUITES["minatar"].envs
    narrowed = spec.parse({"suite": "minatar", "algos": ["pqn"], "total_steps": 500000})
    assert list(narrowed.settings) == ["pqn"]  # the suite's PPO setting goes with PPO
    assert narrowed.settings["pqn"][0].values["num_envs"] == 128
    path = tmp_path / "mine.toml"
    path.write_text('suite = "classic"\nalgos = ["ppo"]\ntotal_steps = 1000\nseeds = 2\n')
    experiment = spec.load(path)
    assert experiment.name == "mine" and experiment.suite == "classic"
    assert experiment.algos == ("ppo",) and experiment.envs == suites.SUITES["classic"].envs
    assert set(experiment.total_steps.values()) == {1000}
    assert experiment.normalize == suites.SUITES["classic"].normalize
    with pytest.raises(ConfigError, match="does not exist"):
        spec.load(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("algos = [")
    with pytest.raises(ConfigError, match="not a TOML file"):
        spec.load(tmp_path / "bad.toml")


def test_the_classic_suite_runs_every_built_in_algorithm_that_fits_each_env():
    cells, left_out = spec.cells(spec.load("classic"))
    by_env = {}
    for cell in cells:
        by_env.setdefault(cell.env, set()).add(cell.algo)
    assert by_env["CartPole-v1"] == {"a2c", "c51", "dqn", "impala", "ppo", "pqn"}
    assert by_env["Pendulum-v1"] >= {"ppo", "sac", "td3", "ddpg", "a2c"}
    assert all("action space" in x.reason for x in left_out)


def test_the_tutorial_names_every_key_of_the_file():
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "tutorials" / "experiments.md").read_text()
    table = page.split("Every key a file may hold:")[1].split("## Suites")[0]
    for key in spec.KEYS:
        assert f"`{key}`" in table or f"`[{key}" in table, key


def test_an_algorithm_given_by_file_names_its_cell_by_its_own_name():
    from pathlib import Path

    reference = f"{Path(__file__).parents[2] / 'examples' / 'reinforce.py'}:SPEC"
    cells, _ = spec.cells(spec.parse({**SMALL, "algos": [reference], "envs": ["CartPole-v1"]}))
    assert [c.name for c in cells] == ["reinforce-CartPole-v1"]
    assert cells[0].config.algo == reference

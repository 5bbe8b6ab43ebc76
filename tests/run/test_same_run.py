"""A resume is the same run (``jaxrl_fdg.run.same_run``): a configuration other than the one its
newest intact checkpoint stored (or its ``config.toml``) is refused, naming each changed key;
settings that change nothing computed are not compared; other versions are a warning; a budget
below the iterations done is refused. Checked against a stand-in for the checkpointer (the
runs that resume: tests/run/test_checkpoint.py, tests/faults/test_checkpoint_faults.py)."""

import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve, to_mapping
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import same_run, versions
from jaxrl_fdg.run.run_folder import RunFolder

RESOLVED = resolve(testing.tiny("ppo"))  # 3 iterations
CURRENT = to_mapping(RESOLVED)


class Checkpoints:
    """A checkpointer's answers: ``stored`` ``{iteration: (config, versions)}``, ``damaged``
    the iterations whose checkpoint does not read."""

    def __init__(self, stored, damaged=(), now=None):
        self.stored, self.damaged = stored, set(damaged)
        self.versions = now or versions.current()

    def steps(self):
        return sorted(self.stored)

    def damage(self, step):
        return "damaged" if step in self.damaged else None

    def stored_config(self, step):
        return self.stored[step][0]

    def stored_versions(self, step):
        return self.stored[step][1]


def test_changed_keys_names_every_computed_setting_that_differs():
    saved = {
        "seed": 0,
        "out": "runs",  # not computed: never compared
        "hparams": {"lr": 0.1, "clip": 0.2, "epochs": [1, 2]},
        "num_envs": 2,
    }
    current = {
        "seed": 1,
        "out": "elsewhere",
        "hparams": {"lr": 0.1, "clip": 0.3, "epochs": (1, 2), "newer": 5},  # a tuple is a list
        "num_envs": 2,
        "policy_lag": 0,  # newer than the checkpoint: it had its default then, 0
    }
    assert same_run.changed_keys(saved, current) == [
        ("hparams.clip", 0.2, 0.3),
        ("seed", 0, 1),
    ]
    assert same_run.changed_keys(saved, {**current, "policy_lag": 1}) == [
        ("hparams.clip", 0.2, 0.3),
        ("policy_lag", 0, 1),
        ("seed", 0, 1),
    ]


def test_a_configuration_other_than_the_newest_intact_checkpoints_is_refused(tmp_path):
    edited = {**CURRENT, "seed": 5}
    checkpoints = Checkpoints({2: (edited, None), 3: (CURRENT, None)}, damaged={3})
    with pytest.raises(ConfigError) as refused:
        same_run.check(tmp_path, checkpoints, RESOLVED)
    assert str(refused.value) == (
        f"cannot resume {str(tmp_path)!r} with a configuration other than its checkpoint at "
        "iteration 2's (seed: 5 -> 0)"
    )


def test_without_a_stored_config_the_folders_config_toml_is_compared(tmp_path):
    RunFolder(tmp_path).write_config({**CURRENT, "num_envs": 4})
    with pytest.raises(ConfigError, match=r"other than its config.toml's \(num_envs: 4 -> 2\)"):
        same_run.check(tmp_path, Checkpoints({}), RESOLVED)


def test_other_versions_are_a_warning_and_the_same_run_goes_on(tmp_path, capsys):
    checkpoints = Checkpoints({2: (CURRENT, {"jax": "0.0.1"})}, now={"jax": "0.0.2"})
    same_run.check(tmp_path, checkpoints, RESOLVED)
    assert capsys.readouterr().err == (
        f"jaxrl-fdg: warning: resuming {str(tmp_path)!r} under other versions or settings than "
        "its checkpoint at iteration 2's (jax 0.0.1 -> 0.0.2): the same bits are promised for "
        "the same versions, settings and code only\n"
    )


def test_a_budget_below_the_iterations_done_is_refused(tmp_path):
    checkpoints = Checkpoints({4: (CURRENT, None)})
    with pytest.raises(ConfigError, match="has done 4 iterations .*total_steps = 48 is fewer"):
        same_run.check(tmp_path, checkpoints, RESOLVED)

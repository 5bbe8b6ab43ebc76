"""Bad input a second hostile probe found: metrics lines of the wrong kind, a file where a
folder belongs, a config key given twice, flags a resume cannot take, a step budget that is not
whole iterations, a comparison of runs without evaluation, one seed counted twice. Each is one
line (exit 2 for bad input) or a run that says what it did, never a traceback."""

import json
from pathlib import Path

import pytest
from faultkit import copy_run, one_line_error, rows

import jaxrl_fdg as rl
from jaxrl_fdg import config as cfg
from jaxrl_fdg import plots
from jaxrl_fdg.cli import main
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import runner


def _run_folder(path: Path, rows_: list, **changes) -> Path:
    """A run folder as the runner lays it out: its config.toml and these metrics lines."""
    path.mkdir(parents=True)
    config = rl.TrainConfig(**{"out": str(path.parent), **changes})
    (path / "config.toml").write_text(cfg.dump_toml(cfg.to_mapping(cfg.resolve(config))))
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows_]
    (path / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
    return path


def _rows(*returns) -> list[dict]:
    return [{"step": 16 * (i + 1), "episode_return": r} for i, r in enumerate(returns)]


@pytest.mark.parametrize("line", ["[1, 2]", "3", '"text"', "null", "true"])
@pytest.mark.parametrize("command", ["plot", "compare"])
def test_a_metrics_line_that_is_not_an_object_is_named(command, line, tmp_path, capsys):
    run = _run_folder(tmp_path / "r", [*_rows(1.0), line])
    assert main([command, str(run), "--out", str(tmp_path / "o.png")]) == 2
    assert "metrics.jsonl' line 2 is not a metrics row (a JSON object" in one_line_error(capsys)


@pytest.mark.parametrize("command", ["plot", "compare"])
def test_a_string_in_one_row_is_named_where_it_is(command, tmp_path, capsys):
    run = _run_folder(tmp_path / "r", [*_rows(1.0), {"step": 32, "episode_return": "high"}])
    argv = [command, str(run), "--metric", "episode_return", "--out", str(tmp_path / "o.png")]
    assert main(argv) == 2
    err = one_line_error(capsys)
    assert "metric 'episode_return' is not a number in row 2 of" in err and "'high'" in err


def test_plot_of_a_file_names_its_run_folder(tmp_path, capsys):
    run = _run_folder(tmp_path / "r", _rows(1.0))
    assert main(["plot", str(run / "metrics.jsonl")]) == 2
    err = one_line_error(capsys)
    assert "metrics.jsonl' is a file, not a run folder (give its folder" in err


@pytest.mark.parametrize(
    "name, text, key",
    [
        ("c.json", '{"num_envs": 2, "num_envs": 4}', "num_envs"),
        ("c.json", '{"hparams": {"lr": 0.1, "lr": 0.2}}', "lr"),
        ("c.yaml", "num_envs: 2\nnum_envs: 4\n", "num_envs"),
    ],
)
def test_a_config_key_given_twice_is_refused(name, text, key, tmp_path, capsys):
    (tmp_path / name).write_text(text)
    assert main(["train", "--config", str(tmp_path / name), "--out", str(tmp_path)]) == 2
    assert f"the key {key!r} is given twice" in one_line_error(capsys)
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_yaml_merge_keys_may_be_overridden(tmp_path):
    (tmp_path / "c.yaml").write_text("base: &b\n  lr: 1\nhparams:\n  <<: *b\n  lr: 2\n")
    assert cfg.load(tmp_path / "c.yaml")["hparams"] == {"lr": 2}


def test_total_steps_that_are_not_whole_iterations_say_what_runs(tmp_path, capsys, monkeypatch):
    def stop(*args, **kwargs):
        raise ConfigError("stopped before compiling")

    monkeypatch.setattr(runner, "_train", stop)
    argv = ["train", "--total-steps", "1000", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        "total_steps = 1,000 is not a multiple of num_envs × rollout_len = 512: the run takes 1 "
        "iteration, 512 env steps (give 512 or 1,024 to say which)"
    ) in err
    # A budget the iterations meet within 1% (100,000 -> 99,840) runs without a word.
    assert main(["train", "--total-steps", "100000", "--out", str(tmp_path)]) == 2
    assert "not a multiple" not in capsys.readouterr().err


def test_an_algorithms_default_budget_rounds_down_without_a_word(tmp_path, capsys, monkeypatch):
    def stop(*args, **kwargs):
        raise ConfigError("stopped before compiling")

    monkeypatch.setattr(runner, "_train", stop)
    # PPO's default 500,000 steps are 976.56 iterations of 512: only a budget given is named.
    assert main(["train", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "jaxrl-fdg: error: stopped before compiling\n"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--num-seeds", "2"], "with a configuration other than its checkpoint at iteration 12's"),
        (["--algo", "ppo"], "was trained with --algo dqn; a resumed run keeps its algorithm"),
        (["--out", "elsewhere"], "--out and --run-name name a new run's folder (leave them out"),
        (["--run-name", "other"], "--out and --run-name name a new run's folder (leave them out"),
    ],
)
def test_a_resume_with_flags_it_cannot_take_names_them(flags, message, reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    assert main(["train", "--resume", str(run), *flags, "--no-progress"]) == 2
    err = one_line_error(capsys)
    assert message in err
    assert rows(run) == rows(reference[0]) and not (run / "seed-0").exists()


def test_compare_of_runs_without_evaluation_compares_episode_return(tmp_path, capsys):
    runs = tmp_path / "runs"
    for seed in (0, 1):
        _run_folder(runs / f"s{seed}", _rows(1.0, 10.0 + seed), seed=seed, num_seeds=1)
    assert main(["compare", str(runs), "--out", str(tmp_path / "c.png")]) == 0
    out, err = capsys.readouterr()
    assert "comparing episode_return: not every run has eval_return" in err
    assert "episode_return: 95% stratified bootstrap intervals" in out


def test_two_runs_of_one_seed_count_as_one(tmp_path, capsys):
    runs = tmp_path / "runs"
    _run_folder(runs / "a", _rows(1.0, 2.0))
    _run_folder(runs / "b", _rows(1.0, 2.0, 3.0))  # the same run, made again, longer
    _run_folder(runs / "c", _rows(5.0), seed=1)
    (group,) = plots.group_runs(plots.find_runs([runs]))
    assert sorted(run.path.name for run in group.runs) == ["b", "c"]
    assert "are one experiment with seed 0, with other results: counted once, as" in (
        capsys.readouterr().err
    )


def test_the_same_run_made_again_counts_once_and_says_nothing(tmp_path, capsys):
    # The README's install line and its tour both run `jaxrl-fdg train`: the same numbers twice,
    # at other speeds.
    runs = tmp_path / "runs"
    rows = _rows(1.0, 2.0)
    _run_folder(runs / "first", rows)
    _run_folder(runs / "again", [{**row, "wall_s": 9.0, "steps_per_s": 1.0} for row in rows])
    (group,) = plots.group_runs(plots.find_runs([runs]))
    assert len(group.runs) == 1
    assert capsys.readouterr().err == ""


def test_a_column_named_with_a_line_separator_is_said_in_one_line(tmp_path, capsys):
    # Found by fuzzing: str.splitlines() (and a terminal) break a line at U+001E.
    run = _run_folder(tmp_path / "r", [*_rows(1.0), {"step": 32, "\x1e": 1.0}])
    assert main(["plot", str(run), "--metric", "nope", "--out", str(tmp_path / "o.png")]) == 2
    assert "unknown metric 'nope' (valid: step, episode_return, \\x1e)" in one_line_error(capsys)

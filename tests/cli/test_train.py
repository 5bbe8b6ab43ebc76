"""``jaxrl-fdg train``: the flags over a config file over the algorithm's defaults, the run folder
it writes, and bad input of every kind exiting 2 with one line, before anything is written."""

import json
import tomllib
import types

import pytest

from jaxrl_fdg.cli import main
from jaxrl_fdg.cli import train as train_command

TINY = [
    "--total-steps",
    "48",
    "--num-envs",
    "2",
    "--rollout-len",
    "8",
    "--log-every",
    "2",
    "--num-minibatches",
    "2",
    "--update-epochs",
    "2",
    "--no-progress",
]


def summary_line(run) -> str:
    summary = json.loads((run / "summary.json").read_text())
    return (
        f"completed: {summary['env_steps']:,} env steps in {summary['run_s']:.2f} s "
        f"(+{summary['compile_s']:.2f} s compile)"
    )


def test_verbose_adds_where_the_time_went(tmp_path, capsys):
    argv = ["train", *TINY, "--out", str(tmp_path), "--run-name", "v", "--verbose"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "where the time went (profile: host)" in out and "waiting on the device" in out


def test_a_run_of_several_lanes_says_each_lanes_final_return(tmp_path, capsys):
    # Found by a probe: a population printed only the lanes' mean, unlabelled.
    argv = ["train", *TINY, "--num-seeds", "3", "--out", str(tmp_path), "--run-name", "s"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("final return over")]
    assert line.startswith("final return over 3 lanes (the line above is their mean): best ")
    assert "(seed-" in line and ", median " in line and ", worst " in line


def test_unknown_flag_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--num-env", "4"])
    assert exc.value.code == 2


def test_train_writes_a_run_folder_that_reruns_identically(tmp_path, capsys):
    assert (
        main(["train", *TINY, "--out", str(tmp_path / "a"), "--run-name", "first", "--seed", "5"])
        == 0
    )
    out = capsys.readouterr().out
    # What a person reads: how it ended, the return, the folder; the timing table on request.
    assert out.splitlines()[0] == summary_line(tmp_path / "a" / "first")
    assert "final return" in out and "waiting on the device" not in out
    assert out.rstrip().endswith(f"run folder: {tmp_path / 'a' / 'first'}")
    run = tmp_path / "a" / "first"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["env_steps"] == 48
    assert summary["compile_s"] > 0 and summary["run_s"] > 0 and summary["steps_per_s"] > 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [32, 48]
    for key in (
        "step",
        "wall_s",
        "episode_return",
        "loss",
        "policy_loss",
        "value_loss",
        "steps_per_s",
    ):
        assert key in rows[0]
    config = tomllib.loads((run / "config.toml").read_text())
    assert config["seed"] == 5 and config["hparams"]["num_minibatches"] == 2

    assert (
        main(
            [
                "train",
                "--config",
                str(run / "config.toml"),
                "--out",
                str(tmp_path / "b"),
                "--run-name",
                "again",
            ]
        )
        == 0
    )
    again = [
        json.loads(line)
        for line in (tmp_path / "b" / "again" / "metrics.jsonl").read_text().splitlines()
    ]
    assert config["compile_cache"] is True
    timing = {"wall_s", "steps_per_s"}
    for a, b in zip(rows, again, strict=True):
        assert set(a) == set(b)
        for key in set(a) - timing:
            assert a[key] == b[key], key


def test_command_line_overrides_config_file(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('fusion = "step"\nseed = 1\n[hparams]\nlr = 0.001\n')
    assert (
        main(
            [
                "train",
                "--config",
                str(path),
                *TINY,
                "--seed",
                "2",
                "--out",
                str(tmp_path),
                "--run-name",
                "r",
            ]
        )
        == 0
    )
    config = tomllib.loads((tmp_path / "r" / "config.toml").read_text())
    assert (config["fusion"], config["seed"], config["hparams"]["lr"]) == ("step", 2, 0.001)


@pytest.fixture
def train_calls(monkeypatch):
    """The configs ``jaxrl-fdg train`` would train, without training."""
    calls = []

    def fake_train(config, **_):
        calls.append(config)
        summary = {"status": "completed", "env_steps": 0, "run_s": 0.0, "compile_s": 0.0}
        summary.update(final_return=None, steps_per_s=None)
        return types.SimpleNamespace(run_dir=None, summary=summary)

    monkeypatch.setattr(train_command, "train", fake_train)
    return calls


def test_no_compile_cache_flag_reaches_the_config(train_calls):
    assert main(["train", "--out", ""]) == 0
    assert main(["train", "--out", "", "--no-compile-cache"]) == 0
    assert [c.compile_cache for c in train_calls] == [True, False]
    assert train_calls[0].out is None


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("c.yaml", "fusion: step\nnum_envs: 0\n", "c.yaml: num_envs must be a positive integer"),
        ("c.json", '{"hparams": {"gamma": 2}}', "c.json: gamma must be in [0.0, 1.0], got 2"),
        ("c.toml", 'algo = "ppp"\n', "c.toml: unknown algorithm 'ppp'"),
        ("c.yml", "hparams:\n  lrr: 0.1\n", "c.yml: unknown ppo hyperparameter(s) lrr"),
    ],
)
def test_a_bad_config_file_is_named_in_the_error(name, text, message, tmp_path, capsys):
    (tmp_path / name).write_text(text)
    assert main(["train", "--config", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_bad_flag_is_not_blamed_on_the_config_file(tmp_path, capsys, train_calls):
    (tmp_path / "c.yaml").write_text("fusion: step\nhparams:\n  lr: 0.001\n")
    assert main(["train", "--config", str(tmp_path / "c.yaml"), "--gamma", "1.5"]) == 2
    assert "command line: gamma must be in [0.0, 1.0], got 1.5" in capsys.readouterr().err
    assert main(["train", "--config", str(tmp_path / "c.yaml"), "--seed", "4"]) == 0
    (config,) = train_calls
    assert (config.fusion, config.seed, config.hparams) == ("step", 4, {"lr": 0.001})


def test_run_lifecycle_flags_reach_the_config(train_calls):
    argv = ["train", "--out", "", "--checkpoint-every", "1000", "--keep", "2", "--debug-nans"]
    assert main([*argv, "--eval-every", "500", "--eval-episodes", "4"]) == 0
    (config,) = train_calls
    assert (config.checkpoint_every, config.keep, config.debug_nans) == (1000, 2, True)
    assert (config.eval_every, config.eval_episodes) == (500, 4)


@pytest.mark.parametrize(
    "text, message",
    [
        ("num_envs = 4.0\n", "num_envs must be of type int, got 4.0"),
        ("total_steps = 1e26\n", "total_steps must be of type int, got 1e+26"),
        (
            "total_steps = 100000000000000000000000000\n",
            "makes more than 2,147,483,647 iterations",
        ),
        ("seed = 99999999999999999999999\n", "seed must be in [0, 4294967295]"),
        ('run_name = "../../x"\n', "run_name must be a plain folder name"),
    ],
)
def test_bad_values_in_a_config_file_exit_2_and_leave_no_folder(text, message, tmp_path, capsys):
    (tmp_path / "c.toml").write_text(text)
    out = tmp_path / "runs"
    assert main(["train", "--config", str(tmp_path / "c.toml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seed", "99999999999999999999999"], "seed must be in [0, 4294967295]"),
        (["--seed", "-1"], "seed must be in [0, 4294967295], got -1"),
        (["--run-name", "../../x"], "run_name must be a plain folder name"),
        (["--run-name", "/tmp/abs"], "run_name must be a plain folder name"),
        (["--run-name", "a/b"], "run_name must be a plain folder name"),
    ],
)
def test_bad_run_flags_exit_2_and_leave_no_folder(args, message, tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["train", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_files_that_are_no_config_exit_2(tmp_path, capsys):
    (tmp_path / "bin.toml").write_bytes(b"\x80\x81\xfe\xff\x00seed = 1")
    assert main(["train", "--config", str(tmp_path / "bin.toml")]) == 2
    assert "is not UTF-8 text" in capsys.readouterr().err
    (tmp_path / "dir.toml").mkdir()
    assert main(["train", "--config", str(tmp_path / "dir.toml")]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_out_that_is_a_file_or_not_writable_exits_2(tmp_path, capsys, monkeypatch):
    (tmp_path / "file").write_text("")
    argv = ["train", *TINY, "--run-name", "r"]
    assert main([*argv, "--out", str(tmp_path / "file")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err

    real_mkdir = type(tmp_path).mkdir

    def read_only(self, *args, **kwargs):  # as a user without write permission sees it
        if self.parent == tmp_path / "ro":
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(type(tmp_path), "mkdir", read_only)
    assert main([*argv, "--out", str(tmp_path / "ro")]) == 2
    err = capsys.readouterr().err
    assert "cannot create a run folder in" in err and "Permission denied" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1

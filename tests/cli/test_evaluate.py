"""``jaxrl-fdg evaluate``: a run's checkpoint, through the command line; a folder that is no run
exits 2."""

from jaxrl_fdg.cli import main


def test_resume_and_evaluate_need_a_run_folder(tmp_path, capsys):
    assert main(["train", "--resume", str(tmp_path)]) == 2
    assert "is not a run folder (it has no config.toml)" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "is not a run folder" in capsys.readouterr().err


def test_train_resume_evaluate_through_the_command_line(tmp_path, capsys):
    flags = ["--algo", "dqn", "--total-steps", "128", "--num-envs", "4", "--rollout-len", "4"]
    flags += ["--learning-starts", "32", "--batch-size", "16", "--buffer-size", "128"]
    flags += ["--out", str(tmp_path), "--run-name", "r", "--no-progress", "--eval-every", "64"]
    assert main(["train", *flags]) == 0
    assert main(["train", "--resume", str(tmp_path / "r"), "--no-progress"]) == 0
    assert main(["evaluate", str(tmp_path / "r"), "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "iteration 8 (128 env steps), 2 episodes: return" in out

"""``jaxrl-fdg experiment`` and ``jaxrl-fdg report`` end to end, at a small size: cells run once,
a second command skips them, a changed cell is refused unless asked, and the report holds the
statistics with their intervals."""

import json

import pytest

from jaxrl_fdg.cli import main
from jaxrl_fdg.experiment import folder as folders

FILE = """
algos = ["ppo", "a2c"]
envs = ["CartPole-v1"]
seeds = 2
total_steps = 2048
checkpoints = 2

[run]
num_envs = 4
rollout_len = 16
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """An experiment run once: its file and folder."""
    root = tmp_path_factory.mktemp("experiment")
    path = root / "small.toml"
    path.write_text(FILE)
    assert main(["experiment", str(path), "--out", str(root / "out")]) == 0
    return path, root / "out"


def test_every_cell_runs_once_and_a_second_command_runs_none(experiment, capsys):
    path, out = experiment
    experiment_folder = folders.ExperimentFolder(out)
    assert [r["state"] for r in experiment_folder.status()] == ["done", "done"]
    attempts = experiment_folder.attempts()
    assert len([a for a in attempts if "exit" in a]) == 2
    record = json.loads((out / "experiment.json").read_text())
    assert list(record["cells"]) == ["ppo-CartPole-v1", "a2c-CartPole-v1"]
    assert record["file"]["seeds"] == 2
    for name in record["cells"]:
        assert (out / "configs" / f"{name}.toml").is_file()
        lanes = sorted(p.name for p in (out / "cells" / name).iterdir() if p.is_dir())
        assert "lanes" in lanes or len(lanes) >= 1
    capsys.readouterr()
    assert main(["experiment", str(path), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "2 cells (2 done, 0 to resume, 0 to start)" in said
    assert len(folders.ExperimentFolder(out).attempts()) == len(attempts)
    assert main(["experiment", "status", str(out)]) == 0
    assert "2 done" in capsys.readouterr().out


def test_the_report_holds_normalised_aggregates_profiles_and_improvement(experiment, capsys):
    _, out = experiment
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "Aggregate scores" in capsys.readouterr().out
    result = json.loads((out / "report.json").read_text())
    assert result["aggregate_scale"] == "normalised"
    assert result["normalization"]["CartPole-v1"] == [20.2, 500.0]
    for label in ("ppo", "a2c"):
        per_env = result["per_env"][label]["CartPole-v1"]
        assert per_env["runs"] == 2
        iqm = result["aggregates"][label]["iqm"]
        assert iqm["low"] <= iqm["point"] <= iqm["high"]
        expected = [(s - 20.2) / (500 - 20.2) for s in per_env["scores"]]
        assert result["aggregates"][label]["mean"]["point"] == pytest.approx(sum(expected) / 2)
    assert {(p["x"], p["y"]) for p in result["improvement"]} == {("ppo", "a2c"), ("a2c", "ppo")}
    forward = {(p["x"], p["y"]): p["point"] for p in result["improvement"]}
    assert forward["ppo", "a2c"] + forward["a2c", "ppo"] == pytest.approx(1.0)
    assert len(result["sample_efficiency"]["env_steps"]) == 25
    for name in ("aggregates", "profiles", "improvement", "sample_efficiency", "curves"):
        assert (out / result["figures"][name]).is_file()
    text = (out / "report.md").read_text()
    assert "## Probability of improvement" in text and result["stamp"]["date"] in text
    assert "<table>" in (out / "report.html").read_text()


def test_a_changed_cell_is_refused_unless_new_which_sets_the_old_folder_aside(
    experiment, tmp_path, capsys
):
    _, out = experiment  # after the report's test, which reads the folder as first run
    changed = tmp_path / "changed.toml"
    changed.write_text(
        FILE.replace('algos = ["ppo", "a2c"]', 'algos = ["ppo"]').replace(
            "total_steps = 2048", "total_steps = 1024"
        )
    )
    capsys.readouterr()
    assert main(["experiment", str(changed), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "(ppo-CartPole-v1: " in error and "total_steps 2048 -> 1024" in error
    assert "--new" in error
    assert main(["experiment", str(changed), "--out", str(out), "--new"]) == 0
    assert [p.name.startswith("ppo-CartPole-v1-") for p in (out / "replaced").iterdir()] == [True]
    rows = {r["cell"]: r for r in folders.ExperimentFolder(out).status()}
    assert list(rows) == ["ppo-CartPole-v1"] and rows["ppo-CartPole-v1"]["env_steps"] == 1024


def test_a_bad_file_stops_before_anything_runs(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(FILE.replace("seeds = 2", "seeds = 0"))
    assert main(["experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert "seeds must be a whole number >= 1, got 0" in error and error.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert main(["experiment", str(path)]) == 2
    assert "--out DIR" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    path.write_text(FILE)
    argv = ["experiment", str(path), "--out", str(tmp_path / "out"), "--executor", "slurm"]
    if __import__("shutil").which("sbatch") is None:
        assert main(argv) == 2
        assert "sbatch and srun" in capsys.readouterr().err
        assert not (tmp_path / "out").exists()
    assert main([*argv[:-1], "nowhere"]) == 2
    assert "--executor 'nowhere' is not one of local, submitit-local, slurm" in (
        capsys.readouterr().err
    )


def test_a_cell_held_by_another_process_is_waited_for_then_refused(tmp_path, monkeypatch):
    import threading

    from jaxrl_fdg.errors import ConfigError
    from jaxrl_fdg.experiment import runner
    from jaxrl_fdg.run.lock import FolderLock

    experiment = folders.ExperimentFolder(tmp_path)
    run = experiment.run_dir("ppo-CartPole-v1")
    run.mkdir(parents=True)
    held = FolderLock.acquire(run, "train")  # as a cell of a killed experiment, still saving
    said = []
    threading.Timer(0.6, held.release).start()
    states = runner._states_once_released(experiment, ["ppo-CartPole-v1"], said.append)
    assert states == {"ppo-CartPole-v1": "missing"}
    assert said == ["waiting for ppo-CartPole-v1: another process holds them (a cell stopping?)"]
    held = FolderLock.acquire(run, "train")  # held for good: refused once the wait is over
    monkeypatch.setattr(runner, "RELEASE_WAIT_S", 0.3)
    with pytest.raises(ConfigError, match="are held by another process"):
        runner._states_once_released(experiment, ["ppo-CartPole-v1"], said.append)
    held.release()

"""Learning curves: runs that differ only in their seed form one group, labels name what differs
between groups, seeds are averaged on the union of their steps; bad input exits 2."""

import sys
from pathlib import Path

import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import config as cfg
from jaxrl_fdg import plots
from jaxrl_fdg.cli import main
from jaxrl_fdg.run.run_folder import RunFolder


def _settings(**changes):
    """A run folder's config.toml contents, as the runner writes them."""
    config = rl.TrainConfig(**{"out": "runs", **changes})
    return cfg.to_mapping(cfg.resolve(config))


def _run(name, rows=(), **changes):
    return plots.Run(Path(name), plots._flatten(_settings(**changes)), list(rows))


def _write_run(parent, name, returns, steps=(16, 32, 48), **changes):
    folder = RunFolder(parent / name)
    folder.path.mkdir(parents=True)
    folder.write_config(_settings(out=str(parent), **changes))
    for step, value in zip(steps, returns, strict=True):
        folder.append_metrics({"step": step, "episode_return": value, "loss": 1.0})
    folder.close()
    return folder.path


@pytest.fixture
def no_tensorboard(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)


def test_runs_differing_only_in_seed_form_one_group():
    runs = [
        _run(f"runs/{fusion}-s{seed}", fusion=fusion, seed=seed, out=f"runs{seed}")
        for fusion in ("scan", "step")
        for seed in (0, 1)
    ]
    groups = plots.group_runs(runs)
    assert [g.label for g in groups] == ["fusion=scan", "fusion=step"]
    assert [[r.path.name for r in g.runs] for g in groups] == [
        ["scan-s0", "scan-s1"],
        ["step-s0", "step-s1"],
    ]


def test_labels_name_every_setting_that_differs_and_only_those():
    runs = [
        _run("a", fusion="scan", hparams={"lr": 1e-3}),
        _run("b", fusion="scan", hparams={"lr": 1e-3}, seed=4),
        _run("c", fusion="step", hparams={"lr": 1e-3}),
        _run("d", fusion="step", hparams={"lr": 3e-4, "hidden_sizes": (32,)}),
    ]
    labels = [g.label for g in plots.group_runs(runs)]
    assert labels == [
        "fusion=scan, lr=0.001, hidden_sizes=(64, 64)",
        "fusion=step, lr=0.001, hidden_sizes=(64, 64)",
        "fusion=step, lr=0.0003, hidden_sizes=(32)",
    ]
    assert [g.label for g in plots.group_runs(runs[:2])] == [""]  # one group: nothing differs


def test_seeds_are_averaged_on_the_union_of_their_steps():
    rows = [
        [{"step": 0, "r": 0.0}, {"step": 10, "r": 10.0}, {"step": 20, "r": 20.0}],
        [{"step": 0, "r": 2.0}, {"step": 5, "r": None}, {"step": 20, "r": 22.0}],
        [{"step": 0, "r": 4.0}, {"step": 10, "r": 8.0}],  # stopped early: absent at 20
    ]
    curve = plots.curve([plots.Run(Path(f"s{i}"), {}, r) for i, r in enumerate(rows)], "r", "step")
    np.testing.assert_array_equal(curve.x, [0, 10, 20])  # step 5 only had an empty value
    np.testing.assert_allclose(curve.mean, [2.0, 10.0, 21.0])  # seed 2 at 10: 12, interpolated
    np.testing.assert_allclose(curve.std, [np.std([0, 2, 4]), np.std([10, 12, 8]), 1.0])
    np.testing.assert_array_equal(curve.seeds, [3, 3, 2])


def test_runs_of_several_environments_get_a_panel_each(tmp_path, monkeypatch, no_tensorboard):
    # Found by a probe: CartPole's and Pendulum's returns were drawn on one axis.
    runs = tmp_path / "runs"
    for env, scale in (("CartPole-v1", 100.0), ("Pendulum-v1", -1000.0)):
        for algo in ("ppo", "a2c"):
            _write_run(runs, f"{algo}-{env}", [None, scale, 2 * scale], env=env, algo=algo)
    drawn = {}
    real = plots._draw

    def spy(curves, metric, x, title, path):
        drawn["panels"] = [group.runs[0].config["env"] for group, _ in curves]
        return real(curves, metric, x, title, path)

    monkeypatch.setattr(plots, "_draw", spy)
    output = plots.plot_runs([runs])
    assert output == runs / "learning_curve.png" and output.is_file()
    assert sorted(set(drawn["panels"])) == ["CartPole-v1", "Pendulum-v1"]
    groups = plots.group_runs(plots.find_runs([runs]))
    cartpole = [g for g in groups if g.runs[0].config["env"] == "CartPole-v1"]
    assert plots.short_labels(cartpole, skip=("env",)) == ["algo=a2c", "algo=ppo"]


def test_plot_two_groups_of_two_seeds(tmp_path, monkeypatch, no_tensorboard):
    runs = tmp_path / "runs"
    for fusion in ("scan", "step"):
        for seed in (0, 1):
            returns = [None, 10.0 + seed, 20.0]
            _write_run(runs, f"{fusion}-s{seed}", returns, fusion=fusion, seed=seed)
    output = plots.plot_runs([runs], output=tmp_path / "out" / "curve.png")
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.chdir(tmp_path)  # several runs: the default output is in the folder they share
    several = plots.plot_runs([runs / "scan-s0", runs / "step-s1"])
    assert several == runs / "learning_curve.png" and several.is_file()
    assert not (tmp_path / "learning_curve.png").exists()
    one = plots.plot_runs([runs / "scan-s0"], metric="loss")  # one run: next to its files
    assert len(plots.find_runs([runs, runs / "scan-s0"])) == 4  # named twice, counted once
    assert one == runs / "scan-s0" / "learning_curve.png" and one.is_file()


def test_a_row_still_being_written_is_left_out(tmp_path, no_tensorboard):
    path = _write_run(tmp_path, "r", [1.0, 2.0, 3.0])
    with open(path / "metrics.jsonl", "a") as f:
        f.write('{"step": 64, "episode_ret')
    assert [r["step"] for r in plots.load_run(path).rows] == [16, 32, 48]


@pytest.mark.parametrize(
    "args, message",
    [
        (["no/such/run"], "run folder 'no/such/run' does not exist"),
        (["{tmp}"], "is not a run folder (no metrics.jsonl) nor holds one"),
        (["{run}", "--metric", "retrun"], "unknown metric 'retrun' (valid: step, episode_return"),
        (["{run}", "--x", "time"], "unknown x-axis column 'time' (valid: step, episode_return"),
        (["{run}", "--output", "{tmp}/c.xyz"], "cannot write an image to"),
        (["{empty}"], "has no values yet"),
    ],
)
def test_bad_plot_input_exits_2_with_one_line(args, message, tmp_path, capsys, no_tensorboard):
    run = _write_run(tmp_path / "runs", "r", [1.0, 2.0, 3.0])
    empty = _write_run(tmp_path / "runs", "e", [None, None, None])
    (tmp_path / "plain").mkdir()
    args = [a.format(tmp=tmp_path / "plain", run=run, empty=empty) for a in args]
    assert main(["plot", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1

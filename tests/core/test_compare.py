"""``jaxrl-fdg compare`` and ``plot --ci iqm`` on run folders written by hand, laid out as the
runner lays them out: the per-seed folders of a ``--num-seeds`` run and the lanes of a sweep."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import compare, plots, stats
from jaxrl_fdg import config as cfg
from jaxrl_fdg.cli import main

PPO = [480.0, 500.0, 455.0, 500.0, 20.0]  # final eval_return of seeds 0..4; seed 4 failed
A2C = [300.0, 120.0, 500.0, 250.0, 410.0]


def _write(path: Path, returns, **changes) -> None:
    """A run folder: its config.toml and one metrics row per value of ``returns``."""
    path.mkdir(parents=True)
    config = rl.TrainConfig(**{"out": str(path.parent), **changes})
    (path / "config.toml").write_text(cfg.dump_toml(cfg.to_mapping(cfg.resolve(config))))
    rows = [
        {"step": 16 * (i + 1), "episode_return": 9.0, "eval_return": value}
        for i, value in enumerate(returns)
    ]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _seeds_run(parent: Path, name: str, finals, **changes) -> Path:
    """A ``--num-seeds`` run: its own rows average the seeds; ``seed-<s>/`` hold each seed's."""
    run = parent / name
    _write(run, [None, float(np.mean(finals))], num_seeds=len(finals), **changes)
    for seed, final in enumerate(finals):
        _write(run / f"seed-{seed}", [None, final], seed=seed, **changes)
    return run


@pytest.fixture
def runs(tmp_path):
    ppo = _seeds_run(tmp_path, "ppo", PPO)
    a2c = _seeds_run(tmp_path, "a2c", A2C, algo="a2c")
    return ppo, a2c


def test_groups_score_their_seeds_last_values(runs):
    result = compare.compare(runs, "eval_return", normalize=(0.0, 500.0), resamples=500)
    assert [(g.label, g.runs) for g in result.groups] == [("algo=ppo", 5), ("algo=a2c", 5)]
    ppo = result.groups[0]
    np.testing.assert_allclose(ppo.strata["CartPole-v1"], np.array(PPO) / 500)
    # IQM of 20, 455, 480, 500, 500: 1.25 runs cut from each end (scipy trims whole runs: 1),
    # mean(455, 480, 500) / 500 = 0.9566...; mean 391 / 500; gap 1 − 0.782.
    assert ppo.estimates["iqm"].point == pytest.approx(1435 / 3 / 500)
    assert ppo.estimates["mean"].point == pytest.approx(0.782)
    assert ppo.estimates["optimality_gap"].point == pytest.approx(0.218)
    expected = stats.interval_estimates([np.array(PPO) / 500], resamples=500)
    assert ppo.estimates == expected


def test_sweep_lanes_are_groups(tmp_path):
    sweep = tmp_path / "sweep"
    _write(sweep, [1.0], hparams={"lr": [1e-3, 3e-4]}, num_seeds=2)
    for lr, finals in ((0.001, (10.0, 20.0)), (0.0003, (30.0, 50.0))):
        for seed, final in enumerate(finals):
            _write(sweep / f"lr={lr}-seed-{seed}", [final], seed=seed, hparams={"lr": lr})
    result = compare.compare([sweep], resamples=200)
    assert [g.label for g in result.groups] == ["lr=0.0003", "lr=0.001"]  # lanes by their numbers
    assert [g.estimates["mean"].point for g in result.groups] == [40.0, 15.0]
    assert "optimality_gap" not in result.groups[0].estimates  # only for normalized scores


def test_compare_command_prints_a_table_and_writes_a_png(runs, tmp_path, capsys):
    out = tmp_path / "figs" / "cmp.png"
    assert main(["compare", *map(str, runs), "--normalize", "0:500", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    for needle in ("algo=ppo", "algo=a2c", "IQM", "Median", "Mean", "Optimality gap", "0.957"):
        assert needle in text
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size < 200_000


@pytest.mark.parametrize(
    "args, message",
    [
        (["{tmp}/none"], "run folder '{tmp}/none' does not exist"),
        (["{tmp}/plain"], "is not a run folder (no metrics.jsonl) nor holds one"),
        (["{ppo}", "--metric", "eval_retrun"], "unknown metric 'eval_retrun' (valid: step,"),
        (["{ppo}", "--normalize", "0-500"], "--normalize takes MIN:MAX (e.g. 0:500), got '0-500'"),
        (["{ppo}", "--normalize", "500:0"], "--normalize needs finite MIN < MAX, got '500:0'"),
        (["{ppo}", "--out", "{tmp}/c.xyz"], "cannot write an image to"),
        (["{ppo}", "--metric", "episode_return", "--normalize", "a:b"], "takes MIN:MAX"),
    ],
)
def test_bad_compare_input_exits_2_with_one_line(args, message, runs, tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    fill = {"tmp": tmp_path, "ppo": runs[0]}
    assert main(["compare", *[a.format(**fill) for a in args]]) == 2
    err = capsys.readouterr().err
    assert message.format(**fill) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_run_without_a_value_is_named(tmp_path, capsys):
    _write(tmp_path / "r", [None, None])
    assert main(["compare", str(tmp_path / "r")]) == 2
    assert "has no value of 'eval_return' yet" in capsys.readouterr().err


def test_nan_and_infinite_values_are_left_out_with_a_warning(tmp_path, capsys):
    # Found by a probe: plot printed numpy's warnings, and compare kept a copy of a run whose
    # last value was NaN over the identical good run.
    _write(tmp_path / "runs" / "good", [100.0, 200.0])
    _write(tmp_path / "runs" / "copy", [100.0, float("nan")])
    _write(tmp_path / "other" / "r", [float("inf"), 50.0], seed=1)
    (result,) = compare.compare([tmp_path / "runs", tmp_path / "other"]).groups
    assert sorted(float(v) for v in result.strata["CartPole-v1"]) == [50.0, 200.0]
    err = capsys.readouterr().err
    good, copy = tmp_path / "runs" / "good", tmp_path / "runs" / "copy"
    assert (
        f"{copy} and {str(good)!r} are one experiment with seed 0, with other results: counted once"
        in err
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's "invalid value" would raise
        plots.plot_runs([tmp_path / "other"], metric="eval_return")
    assert "eval_return is NaN or infinite at step 16; left out" in (capsys.readouterr().err)


def test_plot_iqm_band_is_the_bootstrap_interval_at_each_step(runs, tmp_path):
    (group,) = plots.group_runs(plots.find_runs([runs[0]]))
    band = plots.band(group.runs, "eval_return", "step", ci="iqm")
    np.testing.assert_array_equal(band.x, [32])  # the first row has no value
    expected = stats.interval_estimates([np.array(PPO)], ("iqm",), resamples=1000)["iqm"]
    assert (band.center[0], band.low[0], band.high[0]) == expected
    std = plots.band(group.runs, "eval_return", "step")
    assert std.center[0] == np.mean(PPO) and std.high[0] == np.mean(PPO) + np.std(PPO)
    out = tmp_path / "iqm.png"
    assert (
        main(["plot", str(runs[0]), "--metric", "eval_return", "--ci", "iqm", "--output", str(out)])
        == 0
    )
    assert out.is_file()


def test_plot_titles_say_what_the_band_is():
    runs = [plots.Run(Path("a"), {"algo": "ppo", "env": "CartPole-v1"}, [])]
    assert plots._title(runs, "std", 1) == "ppo on CartPole-v1: one seed"
    assert plots._title(runs, "std", 3) == "ppo on CartPole-v1: mean ± 1 std over seeds"
    assert plots._title(runs, "iqm", 3).endswith("IQM, 95% bootstrap interval over seeds")


def test_unknown_band_exits_2(runs, capsys):
    assert main(["plot", str(runs[0]), "--ci", "sem"]) == 2
    assert "unknown band 'sem' (valid: std, iqm)" in capsys.readouterr().err

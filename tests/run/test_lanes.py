"""The lanes' rows of a run of several lanes: a run folder per lane, or, beyond
``LANE_FOLDERS_MAX`` lanes, one table (``lanes.json``, ``lane_metrics.jsonl``) that every reader
takes for the same runs, and that a resume keeps."""

import json
import shutil

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg import plots, testing
from jaxrl_fdg.cli import main
from jaxrl_fdg.run import lanes

# Three seeds × two learning rates, four iterations of 2 envs × 8 steps, a checkpoint at 2 and 4.
SWEEP = rl.TrainConfig(
    total_steps=4 * 16,
    num_envs=2,
    rollout_len=8,
    num_seeds=3,
    progress=False,
    log_every=1,
    checkpoint_every=2 * 16,
    hparams={"num_minibatches": 2, "update_epochs": 2, "lr": "1e-3,3e-4"},
)
CLOCKS = ("wall_s", "steps_per_s")


def _computed(run: plots.Run) -> tuple:
    rows = [{k: v for k, v in row.items() if k not in CLOCKS} for row in run.rows]
    return run.path.name, run.config, rows


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The same run written with a folder per lane and, under a limit of 4 lanes, as a table."""
    out = tmp_path_factory.mktemp("lanes")
    folders = rl.train(SWEEP.replace(out=str(out), run_name="folders"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lanes, "LANE_FOLDERS_MAX", 4)
        table = rl.train(SWEEP.replace(out=str(out), run_name="table"))
    return out, folders, table


def test_more_lanes_than_the_limit_write_one_table_that_reads_as_the_folders(both):
    out, folders, table = both
    testing.assert_same_bits(table.state.fragments, folders.state.fragments)
    assert sorted(p.name for p in (out / "table").iterdir() if p.is_dir()) == ["checkpoints"]
    index = json.loads((out / "table" / lanes.INDEX).read_text())["lanes"]
    assert [(lane["lane"], lane["seed"]) for lane in index] == [(i, i % 3) for i in range(6)]
    assert index[3]["point"] == {"lr": 0.0003}
    by_table = [_computed(run) for run in plots.find_runs([out / "table"])]
    by_folders = [_computed(run) for run in plots.find_runs([out / "folders"])]
    assert sorted(by_table, key=str) == sorted(by_folders, key=str) and len(by_table) == 6


def test_plot_and_compare_read_the_table(both, tmp_path, capsys):
    out, _, _ = both
    assert main(["plot", str(out / "table"), "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").is_file()
    assert main(["compare", str(out / "table"), "--out", str(tmp_path / "compare.png")]) == 0
    assert "lr=0.001" in capsys.readouterr().out


def test_a_run_with_a_table_resumes_and_keeps_its_layout(both, tmp_path, monkeypatch):
    out, _, table = both
    run = shutil.copytree(out / "table", tmp_path / "table")
    shutil.rmtree(run / "checkpoints" / "4")  # as if it had died after iteration 2's checkpoint
    monkeypatch.setattr(lanes, "LANE_FOLDERS_MAX", 64)  # the layout is the run's, not the limit's
    resumed = rl.train(SWEEP.replace(out=str(tmp_path), run_name="table"), resume=run)
    testing.assert_same_bits(resumed.state.fragments, table.state.fragments)
    assert sorted(p.name for p in run.iterdir() if p.is_dir()) == ["checkpoints"]
    rows = [json.loads(line) for line in (run / f"{lanes.TABLE}.jsonl").open()]
    assert [(r["iteration"], r["lane"]) for r in rows] == [
        (i, j) for i in (1, 2, 3, 4) for j in range(6)
    ]
    again = [_computed(r) for r in plots.find_runs([run])]
    assert again == [_computed(r) for r in plots.find_runs([out / "table"])]

"""The run folder: metrics.csv mirrors metrics.jsonl row by row; TensorBoard event files when
tensorboardX is installed, nothing otherwise; importing the library pulls in neither plotting nor
TensorBoard."""

import csv
import json
import struct
import subprocess
import sys

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.run import compile_cache
from jaxrl_fdg.run.run_folder import RunFolder

ROWS = [
    {"iteration": 1, "step": 16, "wall_s": 0.25, "episode_return": None, "loss": 0.1 / 3},
    {"iteration": 2, "step": 32, "wall_s": 0.5, "episode_return": 12.0, "loss": 1e-9},
    {"iteration": 3, "step": 48, "wall_s": 0.75, "episode_return": 9.5, "loss": -2.0},
]


def _jsonl(folder):
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


def _csv_as_text(folder):
    with open(folder / "metrics.csv", newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _expected_csv(rows):
    """What the CSV must hold for ``rows``: a header, then each value as Python prints it and
    None as an empty cell (so a float reads back exactly)."""
    return [list(rows[0])] + [["" if v is None else str(v) for v in r.values()] for r in rows]


def _scalars(folder):
    """``{tag: [(step, value)]}`` from the TensorBoard event files: TFRecord framing (length,
    its CRC, the record, its CRC) around serialized ``Event`` protos."""
    from tensorboardX.proto import event_pb2

    scalars = {}
    for path in folder.glob("events.out.tfevents.*"):
        data, i = path.read_bytes(), 0
        while i < len(data):
            (length,) = struct.unpack("<Q", data[i : i + 8])
            event = event_pb2.Event.FromString(data[i + 12 : i + 12 + length])
            i += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_csv_holds_the_jsonl_rows_after_every_row(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # the text files alone
    folder = RunFolder(tmp_path)
    for n in range(1, len(ROWS) + 1):
        folder.append_metrics(ROWS[n - 1])
        # Both files are complete after each row, before the folder is closed.
        assert _jsonl(tmp_path) == ROWS[:n]
        assert _csv_as_text(tmp_path) == _expected_csv(ROWS[:n])
    folder.close()


def test_no_event_files_without_tensorboardX(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # `import tensorboardX` fails
    folder = RunFolder(tmp_path)
    for row in ROWS:
        folder.append_metrics(row)
    folder.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.csv", "metrics.jsonl"]


def test_event_files_hold_every_numeric_column_at_its_step(tmp_path):
    pytest.importorskip("tensorboardX")
    folder = RunFolder(tmp_path)
    for row in ROWS:
        folder.append_metrics(row)
    folder.close()
    scalars = _scalars(tmp_path)
    assert set(scalars) == {"iteration", "wall_s", "episode_return", "loss"}
    assert scalars["episode_return"] == [(32, 12.0), (48, 9.5)]  # None is no point
    assert [s for s, _ in scalars["loss"]] == [16, 32, 48]
    assert [v for _, v in scalars["loss"]] == pytest.approx([r["loss"] for r in ROWS], rel=1e-6)


def test_a_training_run_writes_csv_and_events(tiny, tmp_path, monkeypatch):
    pytest.importorskip("tensorboardX")
    enabled = []
    monkeypatch.setattr(compile_cache, "enable", lambda: enabled.append(True))
    run_dir = rl.train(tiny.replace(out=str(tmp_path), run_name="r")).run_dir
    assert enabled == [True]  # train() turns the persistent compilation cache on
    rows = _jsonl(run_dir)
    assert [r["step"] for r in rows] == [32, 48]
    assert _csv_as_text(run_dir) == _expected_csv(rows)
    scalars = _scalars(run_dir)
    assert [step for step, _ in scalars["loss"]] == [32, 48]
    numeric = {k for k, v in rows[0].items() if isinstance(v, int | float) and k != "step"}
    assert numeric <= set(scalars)


def test_importing_the_library_imports_neither_matplotlib_nor_tensorboardX():
    code = (
        "import sys, jaxrl_fdg, jaxrl_fdg.cli, jaxrl_fdg.plots, jaxrl_fdg.run.compile_cache; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'tensorboardX'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"

"""Loggers: ``--logger`` is checked before compiling; TensorBoard can be turned off; a W&B run
(offline, nothing leaves the machine) holds the config, every row against env steps, the
summary, the timing table and the learning curve, and a resumed run continues it."""

import json
import struct
import sys
import time

import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.run import loggers
from jaxrl_fdg.run.run_folder import RunFolder

_BLOCK = 32 * 1024  # the .wandb log: LevelDB-style 32 KiB blocks after a 7-byte file header


def _records(path):
    """The ``Record`` protos of a ``.wandb`` file: each chunk has a 7-byte header (CRC32, length,
    kind: 1 whole, 2 first, 3 middle, 4 last), and a block's tail too short for a header is
    padding."""
    from wandb.proto import wandb_internal_pb2

    data, i, pending = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while i + 7 <= len(data):
        if _BLOCK - i % _BLOCK < 7:
            i += _BLOCK - i % _BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", data[i : i + 7])
        if i + 7 + length > len(data):  # a chunk still being written
            return
        pending += data[i + 7 : i + 7 + length]
        i += 7 + length
        if kind in (1, 4):
            yield wandb_internal_pb2.Record.FromString(pending)
            pending = b""


def _read(path, timeout=30.0):
    """The config, history rows and summary recorded in a ``.wandb`` file, once its ``exit``
    record is there: W&B's service process writes the file behind the run's ``finish``."""
    deadline = time.monotonic() + timeout
    while not any(r.WhichOneof("record_type") == "exit" for r in _records(path)):
        assert time.monotonic() < deadline, f"{path} has no exit record"
        time.sleep(0.1)
    config, history, summary = {}, [], {}
    for record in _records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            config.update({u.key: json.loads(u.value_json) for u in record.run.config.update})
        elif kind == "history":
            items = {".".join(i.nested_key) or i.key: i.value_json for i in record.history.item}
            history.append({k: json.loads(v) for k, v in items.items() if not k.startswith("_")})
        elif kind == "summary":
            summary.update(
                {
                    ".".join(u.nested_key) or u.key: json.loads(u.value_json)
                    for u in record.summary.update
                }
            )
    return config, history, summary


@pytest.fixture
def offline(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "wandb-dir").mkdir()
    return tmp_path / "wandb-dir" / "wandb"


@pytest.mark.parametrize(
    "logger, message",
    [
        (
            "tensorbord",
            "unknown logger 'tensorbord' in 'tensorbord' (valid: tensorboard, wandb, none)",
        ),
        ("tensorboard,mlflow", "unknown logger 'mlflow' in 'tensorboard,mlflow'"),
    ],
)
def test_bad_logger_exits_2_before_compiling(logger, message, capsys):
    assert main(["train", "--logger", logger, "--out", ""]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_wandb_is_named_with_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(rl.ConfigError, match=r"pip install 'jaxrl-fdg\[wandb\]'"):
        rl.resolve(rl.TrainConfig(logger="tensorboard,wandb"))


def test_wandb_that_cannot_start_exits_2_before_compiling(tmp_path, offline, monkeypatch, capsys):
    import wandb

    def refuse(**_):
        raise wandb.errors.UsageError("No API key configured.\nUse `wandb login` to log in.")

    monkeypatch.setattr(wandb, "init", refuse)
    args = ["train", "--total-steps", "48", "--num-envs", "2", "--rollout-len", "8"]
    assert main([*args, "--out", str(tmp_path / "runs"), "--logger", "wandb"]) == 2
    err = capsys.readouterr().err
    assert "logger 'wandb' could not start a run: No API key configured. Use `wandb login`" in err
    assert len(err.strip().splitlines()) == 1


def test_logger_names():
    assert rl.TrainConfig().loggers == ("tensorboard",)  # the default: as before
    assert rl.TrainConfig(logger=" wandb, tensorboard,wandb").loggers == ("wandb", "tensorboard")
    assert rl.TrainConfig(logger="none").loggers == ()


def test_logger_none_writes_no_event_files(tmp_path):
    pytest.importorskip("tensorboardX")
    folder = RunFolder(tmp_path)
    loggers.attach(rl.TrainConfig(logger="none"), folder, [])
    folder.append_metrics({"iteration": 1, "step": 16, "loss": 1.0})
    folder.close()
    assert (tmp_path / "metrics.jsonl").is_file() and not list(tmp_path.glob("events.*"))


def test_wandb_run_holds_the_run_and_a_resume_continues_it(tiny, tmp_path, offline):
    config = tiny.replace(out=str(tmp_path / "runs"), run_name="r", logger="wandb", profile="sync")
    result = rl.train(config)
    run_id = (result.run_dir / loggers.WANDB_ID_FILE).read_text().strip()
    (first,) = offline.glob(f"offline-run-*-{run_id}")
    config_seen, history, summary = _read(first / f"run-{run_id}.wandb")

    assert config_seen["algo"] == "ppo" and config_seen["hparams"]["num_minibatches"] == 2
    rows = [json.loads(line) for line in (result.run_dir / "metrics.jsonl").open()]
    logged = [h for h in history if "loss" in h]
    assert [h["step"] for h in logged] == [r["step"] for r in rows] == [32, 48]
    assert [h["loss"] for h in logged] == pytest.approx([r["loss"] for r in rows])
    assert summary["status"] == "completed" and summary["env_steps"] == 48
    assert summary["timing/run_s"] == pytest.approx(result.summary["timing"]["run_s"])
    (table,) = (first / "files" / "media" / "table").glob("timing_*.table.json")
    parts = [row[0] for row in json.loads(table.read_text())["data"]]
    assert "compile: scan" in parts and "host: waiting on the device" in parts
    images = first / "files" / "media" / "images"
    assert list(images.glob("learning_curve_*.png")) and list(images.glob("profile_*.png"))
    assert not list(tmp_path.glob("**/events.out.tfevents.*"))  # tensorboard was not named

    # A resumed run attaches its loggers to the folder it reopens, as this does (a resume of a
    # finished run would compile only to log the end again).
    folder = RunFolder.open(result.run_dir)
    loggers.attach(config, folder, [])
    folder.append_metrics({**rows[-1], "loss": 0.5})
    folder.write_summary(result.summary)
    folder.close()
    runs = sorted(offline.glob("offline-run-*"))
    assert len(runs) == 2 and all(r.name.endswith(f"-{run_id}") for r in runs)
    _, history, resumed = _read(runs[-1] / f"run-{run_id}.wandb")
    assert [h["loss"] for h in history if "loss" in h] == [0.5]
    assert resumed["status"] == "completed" and resumed["step"] == 48


@pytest.mark.slow
def test_resume_through_the_command_line_continues_the_wandb_run(tmp_path, offline, capsys):
    tiny = ["--total-steps", "48", "--num-envs", "2", "--rollout-len", "8", "--log-every", "2"]
    tiny += ["--num-minibatches", "2", "--update-epochs", "2", "--no-progress"]
    out = tmp_path / "runs"
    args = ["train", *tiny, "--out", str(out), "--run-name", "r", "--logger", "tensorboard,wandb"]
    assert main(args) == 0
    # Extended past its budget: a resume of a completed run would run (and log) nothing.
    resume = ["train", "--resume", str(out / "r"), "--total-steps", "96"]
    assert main([*resume, "--logger", "tensorboard,wandb"]) == 0
    run_id = (out / "r" / loggers.WANDB_ID_FILE).read_text().strip()
    runs = sorted(offline.glob("offline-run-*"))
    assert len(runs) == 2 and all(r.name.endswith(f"-{run_id}") for r in runs)
    assert list((out / "r").glob("events.out.tfevents.*"))

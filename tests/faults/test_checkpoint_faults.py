"""Damaged checkpoints, edited configs and a second writer: a resume or an evaluation either
goes on from the newest intact checkpoint, bit for bit, or stops with one line and exit 2."""

import json
import shutil
import sys
import threading
import tomllib
from pathlib import Path

import jax
import orbax.checkpoint as ocp
import pytest
from faultkit import DQN, assert_same_state, copy_run, one_line_error, rows

import jaxrl_fdg as rl
from jaxrl_fdg.cli import main
from jaxrl_fdg.run import versions
from jaxrl_fdg.run.checkpoint import Checkpointer
from jaxrl_fdg.run.lock import FolderLock
from jaxrl_fdg.run.run_folder import RunFolder


def _truncate_latest(checkpoints):
    for f in (checkpoints / "12").rglob("*"):
        if f.is_file() and f.stat().st_size > 64 and f.parent.name == "d":
            f.write_bytes(f.read_bytes()[:64])


def _empty_latest(checkpoints):
    shutil.rmtree(checkpoints / "12")
    (checkpoints / "12").mkdir()


def _stray_folder(checkpoints):
    (checkpoints / "99").mkdir()


@pytest.mark.parametrize(
    "damage, skipped, resumed_from",
    [(_truncate_latest, "12", 8), (_empty_latest, "12", 8), (_stray_folder, "99", 12)],
    ids=["truncated", "emptied", "stray"],
)
def test_resume_skips_damaged_checkpoints_and_equals_the_uninterrupted_run(
    reference, tmp_path, capsys, damage, skipped, resumed_from
):
    full, final = reference
    run = copy_run(full, tmp_path / "r")
    damage(run / "checkpoints")
    result = rl.train(DQN.replace(out=str(tmp_path), run_name="r"), resume=run)
    err = capsys.readouterr().err
    assert f"skipped checkpoint {skipped} (" in err and f"using iteration {resumed_from}" in err
    assert_same_state(result.state, final)
    # The damaged one is gone and written afresh; keep = 3 counts intact checkpoints only.
    assert sorted(int(p.name) for p in (run / "checkpoints").iterdir()) == [4, 8, 12]
    assert [r["loss"] for r in rows(run)] == [r["loss"] for r in rows(full)]
    if resumed_from == 8:  # the clock goes on: wall_s never steps back, run time is the run's
        walls = [r["wall_s"] for r in rows(run)]
        assert walls == sorted(walls)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["run_s"] > rows(run)[3]["wall_s"] > 0  # row 4 = iteration 8
        assert summary["run_s"] > summary["segment_run_s"]
        assert summary["steps_per_s"] == pytest.approx(summary["env_steps"] / summary["run_s"])


def test_a_checkpoint_cut_short_everywhere_costs_one_warning_and_no_library_log(
    reference, tmp_path, capsys, caplog
):
    # Every file of the newest checkpoint cut short, orbax's own metadata included: orbax's
    # manager logged an ERROR for each metadata file it could not parse as it started, before
    # the resume's own warning; a resume refused by another's lock printed it too.
    run = copy_run(reference[0], tmp_path / "r")
    for f in (run / "checkpoints" / "12").rglob("*"):
        if f.is_file() and f.stat().st_size > 64:
            f.write_bytes(f.read_bytes()[:64])
    caplog.set_level("INFO")
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "skipped checkpoint 12 (" in err and "using iteration 8" in err
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


def test_evaluate_skips_a_damaged_checkpoint_and_names_the_ones_there(reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    _truncate_latest(run / "checkpoints")
    assert main(["evaluate", str(run), "--episodes", "2"]) == 0
    out, err = capsys.readouterr()
    assert "skipped checkpoint 12 (" in err and "iteration 8 (128 env steps)" in out
    assert main(["evaluate", str(run), "--iteration", "5"]) == 2
    assert "no checkpoint at iteration 5" in one_line_error(capsys)
    assert main(["evaluate", str(run), "--iteration", "12"]) == 2
    assert "the checkpoint at iteration 12 is damaged" in one_line_error(capsys)


def test_evaluate_lists_the_checkpoints_there(reference, tmp_path, capsys):
    assert main(["evaluate", str(reference[0]), "--iteration", "5"]) == 2
    assert "(checkpoints: 4, 8, 12)" in one_line_error(capsys)


@pytest.mark.parametrize(
    "edit, named",
    [
        (("lr = 0.00025", "lr = 0.001"), "hparams.lr: 0.00025 -> 0.001"),
        (("num_envs = 4", "num_envs = 2"), "num_envs: 4 -> 2"),
        (("hidden_sizes = [", "hidden_sizes = [ 7,"), "hparams.hidden_sizes"),
    ],
    ids=["lr", "num_envs", "hidden_sizes"],
)
def test_resume_refuses_an_edited_config_naming_what_changed(
    reference, tmp_path, capsys, edit, named
):
    run = copy_run(reference[0], tmp_path / "r")
    text = (run / "config.toml").read_text()
    assert edit[0] in text
    (run / "config.toml").write_text(text.replace(edit[0], edit[1], 1))
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    err = one_line_error(capsys)
    assert "its checkpoint at iteration 12" in err and named in err
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"  # untouched


def test_a_flag_that_changes_nothing_computed_may_differ_on_resume(reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    assert main(["train", "--resume", str(run), "--no-progress", "--profile", "off"]) == 0


def test_a_second_writer_is_refused_naming_the_holder(reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    held = FolderLock.acquire(run, "train")
    try:
        assert main(["train", "--resume", str(run), "--no-progress"]) == 2
        err = one_line_error(capsys)
        assert "is in use by pid" in err and "(train, since" in err
        assert main(["evaluate", str(run)]) == 2
        assert "is in use by pid" in one_line_error(capsys)
    finally:
        held.release()
    assert rows(run) == rows(reference[0])  # nothing was written twice


def test_a_flipped_byte_marks_a_checkpoint_damaged(reference, tmp_path):
    run = copy_run(reference[0], tmp_path / "r")
    data = max((run / "checkpoints" / "12").rglob("*"), key=lambda f: f.stat().st_size)
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    data.write_bytes(bytes(raw))
    checkpointer = Checkpointer(run / "checkpoints")
    try:
        assert "changed since it was written" in checkpointer.damage(12)
        assert checkpointer.damage(8) is None
    finally:
        checkpointer.close()


def test_a_damaged_metrics_file_stops_the_resume_in_one_line(reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1][:20] + "\n"
    (run / "metrics.jsonl").write_text("".join(lines))
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    assert "metrics.jsonl' line 2 is not a metrics row" in one_line_error(capsys)


def test_a_partial_last_metrics_row_is_dropped(tmp_path):
    folder = RunFolder(tmp_path)
    rows = [{"iteration": i, "step": 16 * i, "wall_s": 0.1 * i} for i in (2, 4)]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path / "metrics.jsonl").write_text(text + '{"iteration": 6, "st')
    assert folder.read_metrics() == rows
    assert folder.truncate_metrics(6) == rows
    assert (tmp_path / "metrics.jsonl").read_text() == text


# -- metrics and checkpoints that disagree -----------------------------------------------------


def test_resume_without_metrics_jsonl_reads_its_rows_back_from_metrics_csv(
    reference, tmp_path, capsys
):
    run = copy_run(reference[0], tmp_path / "r")
    (run / "metrics.jsonl").unlink()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    assert "6 row(s) that metrics.csv holds (iterations 2-12)" in capsys.readouterr().err
    assert rows(run) == rows(reference[0])  # every value, read back from the CSV
    assert (run / "metrics.csv").read_text() == (reference[0] / "metrics.csv").read_text()
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["iterations"], summary["env_steps"]) == (12, 192)


def test_resume_with_no_rows_trusts_the_checkpoint_and_says_so(reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    (run / "metrics.jsonl").unlink()
    (run / "metrics.csv").unlink()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "the checkpoint is trusted, and iterations 1-12 have no rows" in err
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["iterations"], summary["env_steps"]) == (
        "completed",
        12,
        192,
    )
    assert sorted(int(p.name) for p in (run / "checkpoints").iterdir()) == [4, 8, 12]


def test_checkpoints_that_is_a_file_stops_the_resume_in_one_line(reference, tmp_path, capsys):
    run = copy_run(reference[0], tmp_path / "r")
    shutil.rmtree(run / "checkpoints")
    (run / "checkpoints").write_text("not a folder")
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    assert "checkpoints' is a file, not a folder of checkpoints" in one_line_error(capsys)
    assert rows(run) == rows(reference[0])
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"


def test_a_checkpoint_folder_that_cannot_be_made_leaves_no_thread_waiting(reference, tmp_path):
    before = set(threading.enumerate())
    checkpointer = Checkpointer(tmp_path / "checkpoints")
    shutil.rmtree(tmp_path / "checkpoints")  # taken away, a file in its place
    (tmp_path / "checkpoints").write_text("")
    with pytest.raises(OSError, match="cannot write the checkpoint at iteration 12: Not a dir"):
        checkpointer.save(reference[1])
    checkpointer.close()
    # orbax's asynchronous saving left four threads waiting 300 s for a folder never made
    new = [t for t in set(threading.enumerate()) - before if not t.daemon]
    for thread in new:  # threads of earlier tests' work may still be ending
        thread.join(timeout=5)
    assert [t.name for t in new if t.is_alive()] == []


# -- versions --------------------------------------------------------------------------------


def _other_jax(monkeypatch):
    real = versions.current()
    monkeypatch.setattr(versions, "current", lambda config=None: {**real, "jax": "9.9.9"})
    return real


def test_the_run_folder_and_its_checkpoints_record_the_versions(reference):
    (stretch,) = json.loads((reference[0] / "versions.json").read_text())
    now = versions.current()
    assert stretch == {"from_iteration": 0, "versions": now}
    assert now["jax"] == jax.__version__ and now["device"].startswith(jax.default_backend())
    assert {"jaxrl-fdg", "jaxlib", "flax", "optax", "orbax-checkpoint"} <= set(now)
    checkpointer = Checkpointer(reference[0] / "checkpoints")
    try:
        assert checkpointer.stored_versions(12) == now
    finally:
        checkpointer.close()


def test_a_resume_under_other_versions_warns_and_records_them(
    reference, tmp_path, capsys, monkeypatch
):
    run = copy_run(reference[0], tmp_path / "r")
    shutil.rmtree(run / "checkpoints" / "12")  # iterations 9 to 12 run again
    real = _other_jax(monkeypatch)
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "under other versions or settings than its checkpoint at iteration 8's (jax " in err
    assert f"jax {real['jax']} -> 9.9.9" in err
    stretches = json.loads((run / "versions.json").read_text())
    assert [(s["from_iteration"], s["versions"]["jax"]) for s in stretches] == [
        (0, real["jax"]),
        (8, "9.9.9"),
    ]


def test_a_resume_under_other_xla_flags_warns_and_records_them(
    reference, tmp_path, capsys, monkeypatch
):
    # Found by a probe: XLA_FLAGS=--xla_cpu_enable_fast_math=true on --resume changed the losses
    # and said nothing. (Set here after XLA started, the flag itself changes nothing computed.)
    run = copy_run(reference[0], tmp_path / "r")
    shutil.rmtree(run / "checkpoints" / "12")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    (warning,) = [line for line in capsys.readouterr().err.splitlines() if "settings" in line]
    assert "(XLA_FLAGS (unset) -> --xla_cpu_enable_fast_math=true)" in warning
    stretches = json.loads((run / "versions.json").read_text())
    assert [s["versions"]["XLA_FLAGS"] for s in stretches] == [
        "",
        "--xla_cpu_enable_fast_math=true",
    ]
    assert stretches[0]["versions"]["jax_threefry_partitionable"] in ("True", "False")


def test_a_resume_of_a_completed_run_says_so_and_writes_nothing(reference, tmp_path, capsys):
    # Found by a probe: it recompiled and overwrote profile.json and the summary's timing with
    # those of a run of no iteration.
    run = copy_run(reference[0], tmp_path / "r")
    before = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    err = capsys.readouterr().err.strip()
    assert err == (
        f"jaxrl-fdg: {str(run)!r} is already complete (12 iterations, 192 env steps): nothing "
        "was run or written (--total-steps beyond that extends it)"
    )
    assert {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()} == before
    result = rl.train(DQN.replace(out=str(tmp_path), run_name="r"), resume=run)
    assert_same_state(result.state, reference[1])  # the final checkpoint, read back
    assert result.summary == json.loads((run / "summary.json").read_text())


def test_settings_given_on_resume_are_recorded_in_config_toml(reference, tmp_path):
    # Found by a probe: --keep, --eval-every and --checkpoint-every took effect on resume, and
    # config.toml kept the old values.
    run = copy_run(reference[0], tmp_path / "r")
    shutil.rmtree(run / "checkpoints" / "12")
    flags = ["--keep", "5", "--checkpoint-every", "32", "--profile", "off", "--no-progress"]
    assert main(["train", "--resume", str(run), *flags]) == 0
    recorded = tomllib.loads((run / "config.toml").read_text())
    assert (recorded["keep"], recorded["checkpoint_every"], recorded["profile"]) == (5, 32, "off")
    assert sorted(int(p.name) for p in (run / "checkpoints").iterdir()) == [4, 8, 10, 12]


def _user_algorithm_run(tmp_path: Path) -> tuple[Path, Path]:
    algo = tmp_path / "algo.py"
    algo.write_text((Path(__file__).parents[2] / "examples" / "reinforce.py").read_text())
    argv = ["train", "--algo", f"{algo}:SPEC", "--total-steps", "1024", "--num-envs", "2"]
    argv += ["--rollout-len", "64", "--checkpoint-every", "512", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path), "--run-name", "r"]) == 0
    return algo, tmp_path / "r"


def _forget_user_modules() -> None:
    """As a fresh process would: the next run loads the algorithm file as it is now."""
    for name in [n for n in sys.modules if n.startswith("jaxrl_fdg_user_")]:
        del sys.modules[name]


def test_a_resume_after_the_algorithm_file_changed_warns_or_refuses_in_one_line(tmp_path, capsys):
    algo, run = _user_algorithm_run(tmp_path)
    shutil.rmtree(run / "checkpoints" / "8")  # resume from iteration 4
    # Logic changed, shapes the same: the file's digest, not its path, tells.
    algo.write_text(algo.read_text().replace("out_scale=0.01", "out_scale=0.02"))
    _forget_user_modules()
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    (warning,) = [line for line in capsys.readouterr().err.splitlines() if "settings" in line]
    assert "(algo code algo.py sha256:" in warning and "-> algo.py sha256:" in warning
    # Shapes changed: one line naming the first array that differs, and the checkpoints kept.
    shutil.rmtree(run / "checkpoints" / "8")
    algo.write_text(algo.read_text().replace("hidden_sizes=(64, 64)", "hidden_sizes=(32, 32)"))
    _forget_user_modules()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err) and len(err) == 2, err  # the warning, the error
    assert (
        "the checkpoint at iteration 4 holds a state unlike the one this run makes (state" in err[1]
    )
    assert "(32,) float32 now; " in err[1] and "its algorithm or environment code changed" in err[1]
    assert sorted(int(p.name) for p in (run / "checkpoints").iterdir()) == [4]


def test_a_checkpoint_other_versions_cannot_read_is_refused_and_kept(
    reference, tmp_path, capsys, monkeypatch
):
    run = copy_run(reference[0], tmp_path / "r")
    _other_jax(monkeypatch)

    def unreadable(self, step, *args, **kwargs):
        raise ValueError("unknown checkpoint format")

    monkeypatch.setattr(ocp.CheckpointManager, "restore", unreadable)
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "under other versions" in err[0]  # the warning, then the error
    assert "checkpoint at iteration 12 cannot be read: ValueError: unknown checkpoint" in err[1]
    assert "(versions changed since it was written: jax " in err[1]
    assert sorted(int(p.name) for p in (run / "checkpoints").iterdir()) == [4, 8, 12]

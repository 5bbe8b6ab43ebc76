"""Property-based fuzzing of every other subcommand's arguments (``evaluate``, ``plot``,
``compare``, ``profile``, ``graph``, ``list``) and of damaged run folders (metrics lines of every
JSON type, bytes, missing and extra files, files where folders belong and folders where files
belong) under ``train --resume``, ``evaluate``, ``plot`` and ``compare``: whatever they hold, the
command succeeds or stops with one line (after any warnings) and exit 1 or 2, never a
traceback; a resume that succeeds computes the uninterrupted run bit for bit.

``profile``'s runs are replaced by what it does before training (resolve every mode), and
``plot`` and ``compare`` draw nothing (their figures are tested elsewhere), so each example
costs milliseconds; a resume or an evaluation compiles (about a second). The example counts
are small here; ``benchmarks/soak_faults.py`` raises them through ``JAXRL_FDG_FUZZ_EXAMPLES``."""

import itertools
import json
import os
import shutil
import string
from pathlib import Path

import pytest
from faultkit import assert_same_state, final_checkpoint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxrl_fdg import compare, plots
from jaxrl_fdg.cli import main
from jaxrl_fdg.cli import profile as profile_command

EXAMPLES = int(os.environ.get("JAXRL_FDG_FUZZ_EXAMPLES", "25"))
SLOW_EXAMPLES = max(1, EXAMPLES // 5)  # examples that compile (a resume, an evaluation)


def _settings(n: int):
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


_fresh = itertools.count()


def _outcome(argv: list[str], capsys) -> int:
    """Run the command: it succeeds, or stops with one line (after any warnings), never a
    traceback."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's usage error (2), or a stubbed run starting (0)
        assert e.code in (0, 2), (argv, e.code)
        capsys.readouterr()
        return e.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, (argv, err)
    lines = [x for x in err.strip().splitlines() if not x.startswith("jaxrl-fdg: warning:")]
    if code == 0:
        return code
    assert code in (1, 2), (argv, code, err)
    assert len(lines) == 1 and lines[0].startswith(("jaxrl-fdg: error:", "jaxrl-fdg: stopped:")), (
        argv,
        err,
    )
    return code


@pytest.fixture
def no_figures(monkeypatch):
    monkeypatch.setattr(plots, "_draw", lambda *args, **kwargs: None)
    monkeypatch.setattr(compare, "draw", lambda *args, **kwargs: None)


@pytest.fixture
def pre_training(monkeypatch):
    """``profile`` up to where its first run would train."""

    def train(resolved, *args, **kwargs):
        raise SystemExit(0)

    monkeypatch.setattr(profile_command, "train", train)


# -- arguments ----------------------------------------------------------------------------

text = st.text(alphabet=string.ascii_letters + string.digits + ",.:/_-= ", max_size=12)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=-3, max_value=40).map(str),
    st.floats().map(str),
)
words = st.one_of(text, numbers)


def _flags(vocabulary: dict[str, st.SearchStrategy]) -> st.SearchStrategy:
    pairs = st.lists(st.sampled_from(sorted(vocabulary)), max_size=4).flatmap(
        lambda names: st.tuples(*[st.tuples(st.just(n), vocabulary[n]) for n in names])
    )
    return pairs.map(lambda ps: [x for flag, value in ps for x in (flag, value)])


def _paths(tmp_path: Path, run: Path) -> st.SearchStrategy:
    return st.sampled_from(
        [
            str(run),
            str(run.parent),
            str(run / "metrics.jsonl"),
            str(tmp_path / "none"),
            str(tmp_path / "plain"),
            "",
            ".",
        ]
    )


def _images(tmp_path: Path) -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from(["a.png", "a.pdf", "a.xyz", "a", "d/a.svg"]).map(
            lambda n: str(tmp_path / n)
        ),
        st.just(str(tmp_path / "plain")),
        text,
    )


class _Reference:
    """The suite's reference run (folder, final state), shown in a failing example by name."""

    def __init__(self, reference):
        self.path, self.state = reference

    def __repr__(self) -> str:
        return "<the fault suite's reference run>"


@pytest.fixture
def ref(reference) -> _Reference:
    return _Reference(reference)


@pytest.fixture
def reference_copy(ref, tmp_path):
    (tmp_path / "plain").mkdir()
    return shutil.copytree(ref.path, tmp_path / "runs" / "run")


@_settings(EXAMPLES)
@given(data=st.data())
def test_any_plot_compare_graph_list_or_profile_arguments_succeed_or_fail_in_one_line(
    data, reference_copy, tmp_path, capsys, no_figures, pre_training, monkeypatch
):
    _command_arguments(data, reference_copy, tmp_path, capsys, monkeypatch)


@pytest.mark.slow
@_settings(EXAMPLES * 20)
@given(data=st.data())
def test_many_arguments_of_every_other_command(
    data, reference_copy, tmp_path, capsys, no_figures, pre_training, monkeypatch
):
    _command_arguments(data, reference_copy, tmp_path, capsys, monkeypatch)


def _command_arguments(data, run: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # default figure files land here
    paths = _paths(tmp_path, run)
    columns = st.sampled_from(["episode_return", "loss", "step", "iteration", "eval_return"])
    metric = st.one_of(columns, text)
    command = data.draw(st.sampled_from(["plot", "compare", "graph", "list", "profile"]))
    if command == "plot":
        runs = data.draw(st.lists(paths, min_size=1, max_size=3))
        vocabulary = {
            "--metric": metric,
            "--x": metric,
            "--ci": st.one_of(st.sampled_from(["std", "iqm"]), text),
            "--out": _images(tmp_path),
        }
        argv = ["plot", *runs, *data.draw(_flags(vocabulary))]
    elif command == "compare":
        runs = data.draw(st.lists(paths, min_size=1, max_size=3))
        normalize = st.one_of(st.sampled_from(["0:500", "500:0", "0:0", "nan:1", "-1:inf"]), text)
        vocabulary = {"--metric": metric, "--normalize": normalize, "--out": _images(tmp_path)}
        argv = ["compare", *runs, *data.draw(_flags(vocabulary))]
    elif command == "graph":
        algos = st.one_of(
            st.sampled_from(["ppo", "dqn", "sac", "c51", "examples/vtrace.py:SPEC", "x.py:S"]),
            text,
        )
        envs = st.one_of(
            st.sampled_from(["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "gym/Nope-v0"]),
            text,
        )
        vocabulary = {"--env": envs, "--num-envs": numbers, "--rollout-len": numbers}
        argv = ["graph", data.draw(algos), *data.draw(_flags(vocabulary))]
    elif command == "list":
        argv = ["list", *data.draw(st.lists(words, max_size=2))]
    else:
        vocabulary = {
            "--algo": st.one_of(st.sampled_from(["ppo", "dqn", "sac"]), text),
            "--env": st.one_of(st.sampled_from(["CartPole-v1", "Pendulum-v1"]), text),
            "--fusion": st.one_of(st.sampled_from(["scan", "step,scan", ",", "auto"]), text),
            "--profile": st.one_of(st.sampled_from(["host", "sync", "trace", "off"]), text),
            "--total-steps": numbers,
            "--num-envs": numbers,
            "--rollout-len": numbers,
            "--seed": numbers,
            "--out": st.one_of(paths, text),
        }
        argv = ["profile", *data.draw(_flags(vocabulary))]
    _outcome(argv, capsys)


evaluate_flags = _flags(
    {
        "--episodes": st.one_of(st.integers(1, 3).map(str), numbers, text),
        "--iteration": st.one_of(st.sampled_from(["4", "8", "12", "5"]), numbers, text),
    }
)


@_settings(SLOW_EXAMPLES)
@given(flags=evaluate_flags)
def test_any_evaluate_arguments_succeed_or_fail_in_one_line(
    flags, reference_copy, tmp_path, capsys
):
    for run in (reference_copy, tmp_path / "none", tmp_path / "plain"):
        _outcome(["evaluate", str(run), *flags], capsys)


@pytest.mark.slow
@_settings(SLOW_EXAMPLES * 12)
@given(flags=evaluate_flags)
def test_many_evaluate_arguments(flags, reference_copy, tmp_path, capsys):
    _outcome(["evaluate", str(reference_copy), *flags], capsys)


# -- damaged run folders -------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
FILES = [
    "config.toml",
    "metrics.jsonl",
    "metrics.csv",
    "summary.json",
    "versions.json",
    ".lock",
    "checkpoints/12/jaxrl_fdg_manifest.json",
    "checkpoints/12/_CHECKPOINT_METADATA",
    "checkpoints/8/default/_METADATA",
]
FOLDERS = ["checkpoints", "checkpoints/12", "checkpoints/4/default", "checkpoints/8/default/d"]
damages = st.one_of(
    st.tuples(st.just("line"), st.integers(0, 6), json_values.map(json.dumps)),
    st.tuples(st.just("bytes"), st.integers(0, 6), st.binary(max_size=24)),
    st.tuples(st.just("delete"), st.sampled_from(FILES + FOLDERS), st.none()),
    st.tuples(
        st.just("extra"),
        st.sampled_from(["x.tmp", "seed-0", "checkpoints/99", "checkpoints/x", "evaluation.json"]),
        st.binary(max_size=16),
    ),
    st.tuples(st.just("file for folder"), st.sampled_from(FOLDERS), st.binary(max_size=8)),
    st.tuples(st.just("folder for file"), st.sampled_from(FILES), st.none()),
)


def _damage(run: Path, how: str, where, what) -> None:
    """Apply one damage; one that an earlier damage left no place for (a file where its folder
    was) is left out."""
    try:
        _apply(run, how, where, what)
    except (FileExistsError, NotADirectoryError):
        pass


def _apply(run: Path, how: str, where, what) -> None:
    if how in ("line", "bytes"):
        if not (run / "metrics.jsonl").is_file():  # deleted or replaced by an earlier damage
            return
        lines = (run / "metrics.jsonl").read_bytes().split(b"\n")
        line = what.encode() if how == "line" else what.replace(b"\n", b" ")
        lines[min(where, len(lines) - 1)] = line
        (run / "metrics.jsonl").write_bytes(b"\n".join(lines))
        return
    path = run / where
    if how == "extra":
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            path.write_bytes(what)
        return
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    if how == "file for folder":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(what)
    elif how == "folder for file":
        path.mkdir(parents=True, exist_ok=True)


hurts = st.lists(damages, min_size=1, max_size=3)
commands = st.sampled_from(["resume", "evaluate", "plot", "compare"])


@_settings(SLOW_EXAMPLES)
@given(hurt=hurts, command=commands)
def test_any_damaged_run_folder_resumes_or_fails_in_one_line(
    hurt, command, ref, tmp_path, capsys, no_figures
):
    _damaged_folder(hurt, command, ref, tmp_path, capsys)


@pytest.mark.slow
@_settings(SLOW_EXAMPLES * 16)
@given(hurt=hurts, command=commands)
def test_many_damaged_run_folders(hurt, command, ref, tmp_path, capsys, no_figures):
    _damaged_folder(hurt, command, ref, tmp_path, capsys)


def _damaged_folder(hurt, command: str, ref: _Reference, tmp_path: Path, capsys) -> None:
    run = shutil.copytree(ref.path, tmp_path / f"run-{next(_fresh)}")
    for how, where, what in hurt:
        _damage(run, how, where, what)
    argv = {
        "resume": ["train", "--resume", str(run), "--no-progress"],
        "evaluate": ["evaluate", str(run), "--episodes", "2"],
        "plot": ["plot", str(run), "--out", str(tmp_path / "c.png")],
        "compare": ["compare", str(run), "--out", str(tmp_path / "c.png")],
    }[command]
    code = _outcome(argv, capsys)
    if command == "resume" and code == 0:  # what it resumed is the uninterrupted run
        assert_same_state(final_checkpoint(run, ref.state), ref.state)
    if command in ("plot", "compare") and code == 0:
        assert len(plots.find_runs([run])) == 1

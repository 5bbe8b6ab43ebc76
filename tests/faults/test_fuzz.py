"""Property-based fuzzing of config files and command-line arguments: whatever they hold, the
command either starts a run or stops with one line and exit 2, never a traceback.

The run itself is replaced by what ``train`` does before compiling (resolve, the initial key,
the graph, the resolved config as TOML), so each example costs milliseconds; what compiling
and running add is covered by the rest of the suite."""

import dataclasses
import json
import os
import string

import pytest
import tomli_w
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxrl_fdg as rl
from jaxrl_fdg import config as cfg
from jaxrl_fdg.cli import common, main
from jaxrl_fdg.cli import train as train_command
from jaxrl_fdg.run import build_loop

FIELDS = [
    f.name for f in dataclasses.fields(rl.TrainConfig) if f.name not in ("hparams", "env_options")
]
ENV_OPTIONS = ["max_steps", "gravity", "euler", "length", "nope"]
HPARAMS = ["lr", "gamma", "num_minibatches", "update_epochs", "hidden_sizes", "clip_eps", "nope"]
SETTINGS = settings(
    # A few seconds in CI; benchmarks/soak_faults.py raises it through the environment.
    max_examples=int(os.environ.get("JAXRL_FDG_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(alphabet=string.printable, max_size=12),
    st.sampled_from(["scan", "step", "ppo", "dqn", "CartPole-v1", "../x", "", "4.0", "1e26"]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3))
configs = st.fixed_dictionaries(
    {},
    optional={
        **{name: values for name in FIELDS},
        "hparams": st.dictionaries(st.sampled_from(HPARAMS), values, max_size=3),
        # Environment options of every type: CartPole's own parameters and one it lacks.
        "env_options": st.one_of(
            st.dictionaries(st.sampled_from(ENV_OPTIONS), values, max_size=3), values
        ),
        "bogus": values,
    },
)


@pytest.fixture
def pre_compile(monkeypatch):
    """``train`` up to the point where it would compile."""

    def train(config, **_):
        resolved = cfg.resolve(config)
        resolved.placement.initial_key(resolved.request)
        build_loop(resolved)
        cfg.dump_toml(cfg.to_mapping(resolved))
        raise SystemExit(0)  # a run would start here

    monkeypatch.setattr(train_command, "train", train)


def _outcome(argv, capsys) -> int:
    try:
        code = main(argv)
    except SystemExit as e:  # the run would start (0), or argparse's own usage error (2)
        code = e.code
        assert code in (0, 2)
        capsys.readouterr()
        return code
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv, code, err)
    assert err.startswith("jaxrl-fdg: error: ") and len(err.splitlines()) == 1, err
    return code


def _write(path, data, form):
    if form == "json":
        path.write_text(json.dumps(data))
    elif form == "yaml":
        path.write_text(yaml.safe_dump(data))
    else:
        path.write_text(tomli_w.dumps(data))


@SETTINGS
@given(data=configs, form=st.sampled_from(["toml", "json", "yaml"]))
def test_any_config_file_runs_or_fails_in_one_line(data, form, tmp_path, capsys, pre_compile):
    path = tmp_path / f"c.{'yml' if form == 'yaml' else form}"
    try:
        _write(path, data, form)
    except (TypeError, ValueError, OverflowError):  # not expressible in that format
        return
    _outcome(["train", "--config", str(path), "--out", str(tmp_path / "runs")], capsys)


@SETTINGS
@given(raw=st.binary(max_size=64), suffix=st.sampled_from([".toml", ".json", ".yaml", ".txt"]))
def test_any_bytes_as_a_config_file_fail_in_one_line(raw, suffix, tmp_path, capsys, pre_compile):
    path = tmp_path / f"c{suffix}"
    path.write_bytes(raw)
    _outcome(["train", "--config", str(path), "--out", str(tmp_path / "runs")], capsys)


FLAGS = [common.flag(name) for name in common.RUN_FLAGS] + [
    "--lr",
    "--gamma",
    "--num-minibatches",
    "--hidden-sizes",
    "--no-progress",
    "--resume",
    "--config",
]
words = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats().map(str),
    st.text(alphabet=string.ascii_letters + string.digits + ",.-/_ ", max_size=10),
)


@SETTINGS
@given(args=st.lists(st.tuples(st.sampled_from(FLAGS), words), max_size=5))
def test_any_train_arguments_run_or_fail_in_one_line(args, tmp_path, capsys, pre_compile):
    argv = ["train", "--out", str(tmp_path / "runs")]
    for flag, word in args:
        argv += [flag] if flag == "--no-progress" else [flag, word]
    _outcome(argv, capsys)

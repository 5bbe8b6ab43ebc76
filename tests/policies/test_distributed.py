"""A data-parallel run across two processes on the loopback address
(``jaxrl_fdg.policies.distributed``): each process has 2 forced CPU devices, the mesh spans all 4,
and gradients are averaged by a cross-process all-reduce (gloo over TCP). It must compute what one
process with 4 shards computes (the vmap backend, the reference of
tests/policies/test_data_parallel.py), and only process 0 writes the run folder. Plus the process
fields' validation, which needs no second process."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import jaxrl_fdg as rl

# The same tolerance as the single-process multi-device test: the runs differ only in the
# summation order of the gradient all-reduce.
TOLERANCE = 1e-6
DEADLINE_S = 240  # a process that hangs (a peer that never connects) fails the test, not CI

_CONFIG = dict(
    algo="ppo",
    env="CartPole-v1",
    total_steps=8 * 8 * 3,
    num_envs=8,
    rollout_len=8,
    fusion="iteration",
    log_every=1,
    progress=False,
    compile_cache=False,
    placement="data_parallel",
    devices=4,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)

_WORKER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import jaxrl_fdg as rl
    from jaxrl_fdg.policies import distributed

    process_id, coordinator, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    config = rl.TrainConfig(
        **json.loads(sys.argv[4]), out=out, coordinator=coordinator, num_processes=2,
        process_id=process_id,
    )
    result = rl.train(config)
    import jax
    learner = distributed.host_values(result.state.fragments["learner"])  # every process calls
    leaves = [np.asarray(x, np.float64) for x in jax.tree.leaves(learner)]  # [4 shards, ...]
    report = {
        "process_count": jax.process_count(),
        "device_count": jax.device_count(),
        "local_devices": jax.local_device_count(),
        "learner": [x[0].tolist() for x in leaves],
        "learner_spread": max(float(np.max(np.abs(x - x[:1]))) for x in leaves),
        "metrics": {k: np.asarray(v, np.float64).tolist() for k, v in result.metrics.items()},
        "run_dir": None if result.run_dir is None else str(result.run_dir),
    }
    print("REPORT", json.dumps(report))
    """
)


def _cpu_collectives_missing() -> str | None:
    """Why this JAX cannot run collectives across CPU processes, or ``None`` if it can."""
    try:
        jax.config.jax_cpu_collectives_implementation  # noqa: B018
    except AttributeError:
        return (
            f"JAX {jax.__version__} has no cross-process collectives for CPU devices "
            "(no jax_cpu_collectives_implementation option)"
        )
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    missing = _cpu_collectives_missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    coordinator = f"127.0.0.1:{_free_port()}"
    # Output goes to files, not pipes: a process blocked on a full pipe would hold the other at
    # JAX's shutdown barrier.
    logs = tmp_path_factory.mktemp("logs")
    procs = []
    for i in range(2):
        with open(logs / f"{i}.out", "w") as stdout, open(logs / f"{i}.err", "w") as stderr:
            command = [sys.executable, "-c", _WORKER, str(i), coordinator, str(out)]
            procs.append(
                subprocess.Popen(
                    [*command, json.dumps(_CONFIG)], env=env, stdout=stdout, stderr=stderr
                )
            )
    # Meanwhile, the reference: one process, 4 shards vmapped on its one device.
    reference = rl.train(rl.TrainConfig(**_CONFIG, out=None, dp_backend="vmap"))
    try:
        for proc in procs:
            proc.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    reports = []
    for i, proc in enumerate(procs):
        stderr = (logs / f"{i}.err").read_text()[-3000:]
        assert proc.returncode == 0, f"process {i} exited with {proc.returncode}:\n{stderr}"
        stdout = (logs / f"{i}.out").read_text()
        line = next(x for x in stdout.splitlines() if x.startswith("REPORT "))
        reports.append(json.loads(line[len("REPORT ") :]))
    return reports, reference, out


def test_two_processes_equal_one_process_with_as_many_shards(two_processes):
    reports, reference, _ = two_processes
    for report in reports:  # the mesh really spans both processes
        assert (report["process_count"], report["device_count"], report["local_devices"]) == (
            2,
            4,
            2,
        )
    expected = [
        np.asarray(x, np.float64) for x in jax.tree.leaves(reference.state.fragments["learner"])
    ]
    for report in reports:
        learner = [np.asarray(x) for x in report["learner"]]
        assert len(learner) == len(expected)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(learner, expected, strict=True))
        assert diff <= TOLERANCE, diff
        assert all(np.isfinite(a).all() for a in learner)
        assert report["learner_spread"] == 0.0  # every shard's copy of the learner is the same
        for key, values in reference.metrics.items():
            np.testing.assert_allclose(report["metrics"][key], values, rtol=1e-5, atol=1e-6)
    # Both processes read back the same metrics, from their own copy of the reduced values.
    assert reports[0]["metrics"] == reports[1]["metrics"]


def test_process_zero_alone_writes_the_run_folder_and_every_process_its_shards(two_processes):
    reports, _, out = two_processes
    assert reports[1]["run_dir"] is None
    folders = list(out.iterdir())
    assert [str(f) for f in folders] == [reports[0]["run_dir"]]
    written = {p.name for p in folders[0].iterdir()}
    assert {"config.toml", "metrics.jsonl", "summary.json", "checkpoints"} <= written
    # The checkpoint at the end: each process wrote the shards on its own devices into it.
    last = folders[0] / "checkpoints" / "3"
    assert (last / "jaxrl_fdg_manifest.json").is_file()
    assert {p.name for p in (last / "default").glob("ocdbt.process_*")} == {
        "ocdbt.process_0",
        "ocdbt.process_1",
    }
    rows = (folders[0] / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == _CONFIG["total_steps"] // (_CONFIG["num_envs"] * _CONFIG["rollout_len"])


def test_bad_process_fields_are_rejected_before_compiling():
    base = rl.TrainConfig(out=None, progress=False, placement="data_parallel", devices=1)
    across = base.replace(num_processes=2, coordinator="127.0.0.1:12355")
    with pytest.raises(rl.ConfigError, match="num_processes must be a positive integer, got 0"):
        rl.resolve(base.replace(num_processes=0))
    with pytest.raises(rl.ConfigError, match=r"process_id must be an integer in 0\.\.1, got 2"):
        rl.resolve(across.replace(process_id=2))
    with pytest.raises(rl.ConfigError, match="num_processes = 2 needs a coordinator"):
        rl.resolve(across.replace(coordinator=None))
    with pytest.raises(rl.ConfigError, match="coordinator must be host:port .* got 'localhost'"):
        rl.resolve(across.replace(coordinator="localhost"))
    with pytest.raises(rl.ConfigError, match="needs placement 'data_parallel' with dp_backend"):
        rl.resolve(across.replace(dp_backend="pmap"))
    with pytest.raises(rl.ConfigError, match=r"num_processes = 2 but JAX runs 1 process"):
        rl.resolve(across)  # this process never joined a second one
    rl.resolve(base.replace(coordinator="127.0.0.1:12355"))  # unused with one process

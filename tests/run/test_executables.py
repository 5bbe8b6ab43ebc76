"""The executable cache: a run of a configuration seen before loads its programs as StableHLO
instead of tracing them, and computes the same bits; what changes a program misses.

The in-process tests run the same configuration twice in this process, with the cache folder a
temporary one; the fresh-process test (full tier) changes a user's algorithm file between runs.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.config import resolve, to_mapping
from jaxrl_fdg.run import executables
from jaxrl_fdg.testing import assert_same_bits

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache on, in a folder of this test's own."""
    monkeypatch.setenv(executables.SWITCH, "1")
    folder = tmp_path / "executables"
    monkeypatch.setattr(executables, "directory", lambda _: folder)
    # The modules the key holds beyond the framework's: none of the other tests' (some of which
    # rewrite a file they imported, which would turn the cache off in this process).
    monkeypatch.setattr(executables, "_SEEN", ())
    return folder


def assert_same_state(a, b) -> None:
    assert_same_bits((a.fragments, a.key, a.iteration), (b.fragments, b.key, b.iteration))


def test_a_second_run_loads_its_programs_and_computes_the_same_bits(cache, tiny, monkeypatch):
    first = rl.train(tiny)
    second = rl.train(tiny)
    assert (first.summary["executables"], second.summary["executables"]) == ("stored", "loaded")
    assert_same_state(first.state, second.state)
    assert_same_bits(first.metrics, second.metrics)
    assert len(list(cache.glob(f"*{executables.SUFFIX}"))) == 1
    monkeypatch.setenv(executables.SWITCH, "0")  # and as a run without the cache computes
    off = rl.train(tiny)
    assert off.summary["executables"] == "traced"
    assert_same_state(first.state, off.state)


_SMALL = {"num_envs": 2, "rollout_len": 8, "out": None, "progress": False}
_REPLAY = {"batch_size": 8, "buffer_size": 64, "learning_starts": 16}
_PPO = {"num_minibatches": 2, "update_epochs": 1}
# Two seeds run as lanes of the population, whose programs also hold its seed as a constant.
VARIANTS = {
    "dqn": {"algo": "dqn", "total_steps": 64, "log_every": 2, "hparams": _REPLAY},
    "sac": {"algo": "sac", "total_steps": 64, "log_every": 2, "hparams": _REPLAY},
    "evaluation": {"total_steps": 64, "eval_every": 32, "eval_episodes": 2, "hparams": _PPO},
    "population": {
        "total_steps": 96, "num_seeds": 2, "pbt_every": 32, "hparams": {**_PPO, "lr": (1e-4, 1e-3)}
    },
}  # fmt: skip


@pytest.mark.full
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_other_algorithms_evaluation_and_populations_load_the_same_bits(
    variant, cache, monkeypatch
):
    config = rl.TrainConfig(**{**_SMALL, **VARIANTS[variant]})
    first, second = rl.train(config), rl.train(config)
    monkeypatch.setenv(executables.SWITCH, "0")
    off = rl.train(config)
    made = [r.summary["executables"] for r in (first, second, off)]
    assert made == ["stored", "loaded", "traced"]
    for other in (second, off):
        assert_same_state(first.state, other.state)
        assert_same_bits(first.metrics, other.metrics)


def test_a_program_that_cannot_be_exported_compiles_as_usual_and_stores_nothing(
    cache, tiny, monkeypatch
):
    from jaxrl_fdg.policies import exported

    def refuse(fn, args):
        raise ValueError("a custom call jax.export does not allow")

    monkeypatch.setattr(exported.Exported, "of", refuse)
    result = rl.train(tiny)
    assert result.summary["executables"] == "not stored" and result.summary["status"] == "completed"
    assert not cache.exists()


@pytest.fixture
def fresh_jax_cache(tmp_path, monkeypatch):
    """JAX's persistent cache in a folder of this test's own, empty: the first compile of a
    program is XLA's, not a load of an earlier test session's."""
    from jax._src import compilation_cache

    before = (
        jax.config.jax_compilation_cache_dir,
        jax.config.jax_persistent_cache_min_compile_time_secs,
    )
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "xla"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # every program kept
    compilation_cache.reset_cache()
    yield
    jax.config.update("jax_compilation_cache_dir", before[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", before[1])
    compilation_cache.reset_cache()


def _entry(folder: Path) -> executables.Entry:
    (path,) = folder.glob(f"*{executables.SUFFIX}")
    return executables.ExecutableCache(folder, path.name.removesuffix(executables.SUFFIX)).load()


def test_an_executable_compiled_here_is_kept_and_loaded_with_the_initial_state(
    cache, tiny, fresh_jax_cache, monkeypatch
):
    from jax._src.lax import linalg

    # A learning rate no other test compiles: the scan program is compiled here, by XLA.
    config = tiny.replace(hparams={**tiny.hparams, "lr": 1.2345e-4})
    first = rl.train(config)
    entry = _entry(cache)
    assert set(entry.compiled) == {"scan"}  # init is compiled with options of its own: not kept
    assert entry.initial is not None
    assert entry.programs["scan"]._calls_lapack is False  # read when stored, not when loaded
    # PPO's iteration calls no LAPACK kernel: its load does not set them up (init's QR does).
    monkeypatch.setattr(linalg, "initialize_lapack", lambda: pytest.fail("set up LAPACK"))
    second = rl.train(config)  # starts from the kept state and runs the kept executable
    assert second.summary["executables"] == "loaded"
    assert "init" not in second.summary["timing"]["programs"]
    assert_same_state(first.state, second.state)
    assert_same_bits(first.metrics, second.metrics)


def test_an_executable_xla_did_not_compile_here_is_not_kept(
    cache, tiny, fresh_jax_cache, monkeypatch
):
    # JAX's persistent cache answers the second run's compiles, not XLA, and the entry keeps
    # StableHLO only (XLA:CPU serializes an executable that cache loaded again without its
    # kernels). An initial state larger than allowed is not kept either: init runs again.
    from jaxrl_fdg.policies import plan

    monkeypatch.setattr(plan, "INITIAL_STATE_BYTES", 0)
    rl.train(tiny)  # fills JAX's persistent cache
    for path in cache.iterdir():
        path.unlink()
    first = rl.train(tiny)
    entry = _entry(cache)
    assert (entry.compiled, entry.initial) == ({}, None)
    second = rl.train(tiny)
    assert second.summary["executables"] == "loaded"
    assert "init" in second.summary["timing"]["programs"]
    assert_same_state(first.state, second.state)


def test_evaluate_after_a_run_loads_the_evaluation_program_the_run_compiled(
    cache, tiny, fresh_jax_cache, tmp_path
):
    # A run the executable cache holds compiles its evaluation from the StableHLO it exported;
    # evaluate compiles that same program, so JAX's persistent cache answers it.
    config = tiny.replace(eval_every=32, eval_episodes=2, out=str(tmp_path / "runs"))
    trained = rl.train(config.replace(run_name="r"))
    assert trained.summary["executables"] == "stored"
    before = sorted(p.name for p in (tmp_path / "xla").iterdir())
    result = rl.evaluate(tmp_path / "runs" / "r")
    assert sorted(p.name for p in (tmp_path / "xla").iterdir()) == before
    assert result["iteration"] == 3 and result["episodes"] == 2


def test_only_a_run_the_cache_misses_checks_its_environment(cache, tiny, monkeypatch):
    from jaxrl_fdg.run import runner

    checked = []
    real = runner.check_environment
    monkeypatch.setattr(runner, "check_environment", lambda *a: checked.append(real(*a)))
    assert rl.train(tiny).summary["executables"] == "stored" and len(checked) == 1
    assert rl.train(tiny).summary["executables"] == "loaded" and len(checked) == 1
    monkeypatch.setenv(executables.SWITCH, "0")  # no cache: always checked
    assert rl.train(tiny).summary["executables"] == "traced" and len(checked) == 2


def test_a_changed_hyperparameter_misses(cache, tiny):
    assert rl.train(tiny).summary["executables"] == "stored"
    changed = tiny.replace(hparams={**tiny.hparams, "clip_eps": 0.1})
    assert rl.train(changed).summary["executables"] == "stored"
    assert len(list(cache.glob(f"*{executables.SUFFIX}"))) == 2


def test_an_entry_that_does_not_read_is_removed_and_the_run_traces(cache, tiny):
    rl.train(tiny)
    (entry,) = cache.glob(f"*{executables.SUFFIX}")
    entry.write_bytes(entry.read_bytes()[:100])
    again = rl.train(tiny)
    assert again.summary["executables"] == "stored"  # traced, and written again whole
    assert rl.train(tiny).summary["executables"] == "loaded"


def test_a_cache_folder_that_cannot_be_written_costs_only_the_trace(cache, tiny, monkeypatch):
    rl.train(tiny)
    (entry,) = cache.glob(f"*{executables.SUFFIX}")
    entry.write_bytes(b"damaged")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "unlink", refuse)
    monkeypatch.setattr(Path, "write_bytes", refuse)
    monkeypatch.setattr(os, "utime", refuse)
    again = rl.train(tiny)
    assert (again.summary["status"], again.summary["executables"]) == ("completed", "not stored")


def test_the_key_changes_with_jaxlib_jax_settings_xla_flags_and_the_config(tiny, monkeypatch):
    mapping = to_mapping(resolve(tiny))
    key = executables.key_of(mapping)
    assert executables.key_of(mapping) == key
    assert executables.key_of({**mapping, "out": "elsewhere"}) == key
    assert executables.key_of({**mapping, "seed": 1}) != key
    assert executables.key_of({**mapping, "eval_every": 64}) != key
    installed = executables.library_versions()
    monkeypatch.setattr(executables, "library_versions", lambda: {**installed, "jaxlib": "0.0.1"})
    assert executables.key_of(mapping) != key
    monkeypatch.undo()
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    assert executables.key_of(mapping) != key
    monkeypatch.delenv("XLA_FLAGS")
    with jax.default_matmul_precision("highest"):
        assert executables.key_of(mapping) != key


def test_runs_the_key_cannot_describe_are_not_cached(cache, tiny, monkeypatch):
    resolved = resolve(tiny)
    assert executables.for_run(resolved) is not None
    assert executables.for_run(resolve(tiny.replace(profile="trace"))) is None
    spec = rl.algorithm.get("ppo")._replace(name="ppo-registered-here")
    monkeypatch.setitem(rl.algorithm._REGISTRY, spec.name, spec)
    assert executables.for_run(resolve(tiny.replace(algo=spec.name))) is None
    monkeypatch.setenv(executables.SWITCH, "0")
    assert executables.for_run(resolved) is None


def test_a_file_changed_after_import_turns_the_cache_off(cache, tiny, tmp_path, monkeypatch):
    module = tmp_path / "changed_helper.py"
    module.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # Python's default: keep bytecode
    __import__("changed_helper")  # written after the package was imported: that alone is fine
    monkeypatch.setattr(executables, "_SEEN", ("changed_helper",))
    monkeypatch.setattr(executables, "_framework_files", list)  # this module alone is looked at
    try:
        assert executables.for_run(resolve(tiny)) is not None
        module.write_text("X = 2  # edited after the import, not reloaded\n")
        assert executables.for_run(resolve(tiny)) is None
    finally:
        sys.modules.pop("changed_helper", None)


_RUN = """
import json, sys
import jaxrl_fdg as rl
result = rl.train(rl.TrainConfig(algo=sys.argv[1] + ":SPEC", env="CartPole-v1",
    total_steps=2 * 8 * 2, num_envs=2, rollout_len=8, out=None, progress=False))
print(json.dumps(result.summary["executables"]))
"""


@pytest.mark.full
def test_a_changed_algorithm_file_misses_in_a_fresh_process(tmp_path):
    algorithm = tmp_path / "vtrace.py"
    shutil.copy(ROOT / "examples" / "vtrace.py", algorithm)
    env = {**os.environ, executables.SWITCH: "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)

    def run() -> str:
        proc = subprocess.run(
            [sys.executable, "-c", _RUN, str(algorithm)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    assert run() == "stored"
    assert run() == "loaded"
    algorithm.write_text(algorithm.read_text() + "\n# a comment: the file changed\n")
    assert run() == "stored"


_TINY = """
import json, sys
import jaxrl_fdg as rl
result = rl.train(rl.TrainConfig(total_steps=2 * 8 * 2, num_envs=2, rollout_len=8, out=None,
    progress=False, hparams={"num_minibatches": 2, "update_epochs": 1}))
print(json.dumps([result.summary["executables"], result.summary["final_return"],
                  sorted(result.summary["timing"]["programs"])]))
"""


@pytest.mark.full
def test_fresh_processes_load_the_executables_xla_compiled_and_only_those(tmp_path):
    env = {**os.environ, executables.SWITCH: "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)

    def run() -> list:
        proc = subprocess.run(
            [sys.executable, "-c", _TINY], capture_output=True, text=True, env=env,
            cwd=tmp_path, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    made, final, _ = run()  # XLA compiles: the entry keeps the executable and the state
    assert made == "stored"
    assert run() == ["loaded", final, ["scan"]]  # neither init nor a compile
    folder = next((tmp_path / "cache").rglob("*-executables"))
    assert set(_entry(folder).compiled) == {"scan"}
    shutil.rmtree(folder)
    # JAX's persistent cache serves the compiles now: the entry keeps no executable (one that
    # cache loaded would be kept without its kernels), and the next run lowers the program.
    assert run()[0] == "stored"
    assert _entry(folder).compiled == {}
    assert run() == ["loaded", final, ["scan"]]

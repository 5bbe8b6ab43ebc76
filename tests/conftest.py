"""Shared test set-up: JAX's persistent compilation cache and small run configurations."""

import json
import os
import subprocess
import sys
from pathlib import Path

# The suite runs in two worker processes: on a GPU, each must not take 75% of its memory up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import pytest  # noqa: E402

_CACHE = Path(
    os.environ.get("JAXRL_FDG_TEST_CACHE", Path.home() / ".cache" / "jaxrl_fdg" / "xla-tests")
)
jax.config.update("jax_compilation_cache_dir", str(_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
# The executable cache (jaxrl_fdg.run.executables) is keyed by code on disk, and tests change
# code in memory (monkeypatched fragments, injected faults): off here, and in the processes the
# tests start, except where tests/run/test_executables.py turns it on.
os.environ["JAXRL_FDG_EXECUTABLE_CACHE"] = "0"


# The slowest test files of both tiers, measured cold (`pytest --durations`), longest first; each
# tier meets its own in this order. Whole files go to the two workers in collection order
# (`--dist loadfile`), and files are collected by name, so a long file collected last would run
# alone at the end. Collected first, the long files spread over both workers and short ones fill
# the end.
_LONGEST_FIRST = (
    "tests/docs/test_readme.py",  # the slow tier's longest: every README command, 4 minutes
    "tests/docs/test_tutorials.py",
    "tests/fragments/algorithms/test_c51.py",
    "tests/envs/test_playground.py",
    "tests/policies/test_fusion.py",
    "tests/fragments/algorithms/test_dqn.py",
    "tests/tuning/test_population.py",
    "tests/envs/test_brax_adapter.py",
    "tests/examples/test_extensions.py",
    "tests/policies/test_actor_learner.py",
    "tests/examples/test_topologies.py",
    "tests/policies/test_data_parallel.py",
    "tests/run/test_checkpoint.py",
    "tests/fragments/algorithms/test_continuous_control.py",
    "tests/envs/test_envpool.py",
    "tests/fragments/test_normalization.py",
    "tests/fragments/test_recurrent.py",
    "tests/fragments/algorithms/test_offpolicy_normalization.py",
    "tests/envs/test_brax_learning.py",
    "tests/fragments/algorithms/test_a2c.py",
    "tests/fragments/algorithms/test_ppo.py",
)

# A hang fails after 10 minutes (pyproject.toml); a slow-tier test, whose learning runs take
# minutes and share the machine with the other worker, after 25.
SLOW_TIMEOUT_S = 1500

# The tiers (docs/contributing.md). `python -m pytest` (the README's command) runs the default
# tier: the core contracts (fusion modes and placements computing the same bits, checkpoints and
# resumes, faults and bad input, the command line, every algorithm's updates), about 9 minutes
# cold on 2 cores. `-m quick` runs the part of it below, about 2 minutes. `-m full` runs these
# files, which CI runs after it with the slow tier (`-m "full or slow"`): the adapters of other
# suites, check-env, videos, populations, the examples, the multi-device and host placements,
# and the cross-products of the features above.
_QUICK = (
    "tests/config/test_config.py",
    "tests/cli/test_main.py",
    "tests/cli/test_train.py",
    "tests/cli/test_common.py",
    "tests/core/test_graph.py",
    "tests/core/test_names.py",
    "tests/core/test_record.py",
    "tests/core/test_step.py",
    "tests/core/test_loop.py",
    "tests/core/test_env_fragment.py",
    "tests/envs/test_cartpole.py",
    "tests/faults/test_input_faults.py",
    "tests/faults/test_config_faults.py",
    "tests/fragments/test_losses.py",
    "tests/fragments/test_layout.py",
    "tests/fragments/algorithms/test_ppo.py",
    "tests/policies/test_fusion.py",
    "tests/run/test_metrics.py",
    "tests/run/test_session.py",
    "tests/run/test_lock.py",
    "tests/docs/test_readme.py",
    "tests/test_import_graph.py",
)
_FULL = (
    "tests/experiment/test_interrupted.py",
    "tests/envs/test_suites.py",
    "tests/envs/test_check.py",
    "tests/cli/test_check_env.py",
    "tests/run/test_video.py",
    "tests/envs/test_brax_adapter.py",
    "tests/run/test_brax_checkpoint.py",
    "tests/envs/test_envpool.py",
    "tests/envs/test_gymnax.py",
    "tests/envs/test_batch.py",
    "tests/envs/test_registry.py",
    "tests/envs/test_wrappers.py",
    "tests/envs/test_host.py",
    "tests/tuning/test_population.py",
    "tests/run/test_lanes.py",
    "tests/run/test_autotune.py",
    "tests/run/test_extension.py",
    "tests/examples/test_extensions.py",
    "tests/examples/test_topologies.py",
    "tests/examples/test_vtrace.py",
    "tests/core/test_rng.py",
    "tests/policies/test_actor_learner.py",
    "tests/policies/test_data_parallel.py",
    "tests/policies/test_gradient_path.py",
    "tests/policies/test_replication.py",
    "tests/policies/test_distributed.py",
    "tests/policies/test_host_env.py",
    "tests/policies/test_double_buffer.py",
    "tests/profiling/test_runner_profile.py",
    "tests/fragments/test_action_masks.py",
    "tests/fragments/test_structured_observations.py",
    "tests/fragments/test_own_networks.py",
    "tests/fragments/test_privileged_critic.py",
    "tests/fragments/test_normalization.py",
    "tests/fragments/algorithms/test_offpolicy_normalization.py",
    "tests/fragments/algorithms/test_value_torsos.py",
    "tests/fragments/replay/test_frames.py",
)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the markers given here
def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable
    quick, full = set(_QUICK), set(_FULL)
    root = Path(__file__).parents[1]
    missing = sorted(p for p in quick | full if not (root / p).is_file())
    if missing:  # a file renamed or removed would otherwise leave its tier silently
        raise pytest.UsageError(f"tests/conftest.py names test files that do not exist: {missing}")
    for item in items:
        path = item.nodeid.split("::")[0]
        slow = item.get_closest_marker("slow")
        if slow and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
        if path in full and not slow:
            item.add_marker(pytest.mark.full)
        if path in quick and not slow:
            item.add_marker(pytest.mark.quick)


@pytest.fixture
def tiny():
    """A configuration that compiles and runs in seconds: 3 iterations of 2 envs × 8 steps."""
    import jaxrl_fdg as rl

    return rl.TrainConfig(
        total_steps=2 * 8 * 3,
        num_envs=2,
        rollout_len=8,
        out=None,
        progress=False,
        log_every=2,
        hparams={"num_minibatches": 2, "update_epochs": 2},
    )


@pytest.fixture(scope="session")
def report_on_devices():
    """``run(script, devices, timeout, args=())``: run ``script`` (``sys.argv[1:]`` = ``args``)
    in a fresh Python whose JAX sees ``devices`` forced CPU devices (the count is fixed when JAX
    starts), and return the JSON it printed on its ``REPORT `` line."""

    def run(script: str, devices: int, timeout: float, args: list[str] = ()) -> dict:
        flags = f"--xla_force_host_platform_device_count={devices}"
        out = subprocess.run(
            [sys.executable, "-c", script, *args],
            env={**os.environ, "XLA_FLAGS": flags},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        line = next(x for x in out.stdout.splitlines() if x.startswith("REPORT "))
        return json.loads(line[len("REPORT ") :])

    return run


@pytest.fixture
def resumed_after_first_iteration(tmp_path):
    """``resume(config)``: train ``config`` (3 iterations, a checkpoint after each) into a run
    folder, delete every checkpoint but the first, resume, and return the resumed run's result."""
    import shutil

    import jaxrl_fdg as rl

    def resume(config):
        per_iteration = config.num_envs * config.rollout_len
        config = config.replace(
            out=str(tmp_path), run_name="part", checkpoint_every=per_iteration, log_every=1
        )
        rl.train(config)
        for late in ("2", "3"):
            shutil.rmtree(tmp_path / "part" / "checkpoints" / late)
        return rl.train(config, resume=tmp_path / "part")

    return resume


def _run_time_imports(path: Path, package: str = "") -> list[tuple[int, list[str]]]:
    """Each import statement of the module at ``path`` that runs (those under ``if
    TYPE_CHECKING:`` do not; those inside functions do): its line and the modules it names, a
    ``from m import a`` naming ``m`` and ``m.a``, relative ones resolved against ``package``."""
    import ast

    tree = ast.parse(path.read_text())
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.append((node.lineno, [alias.name for alias in node.names]))
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level and package else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.append((node.lineno, [module, *(f"{module}.{a.name}" for a in node.names)]))
    return found


@pytest.fixture(scope="session")
def run_time_imports():
    """``imports(path, package="")``: the import statements of a source file that run, each as
    ``(line, modules named)``; relative imports resolved against ``package``."""
    return _run_time_imports

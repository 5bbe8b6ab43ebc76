"""Shared test set-up: JAX's persistent compilation cache and small run configurations."""

import os
from pathlib import Path

import jax
import pytest

_CACHE = Path(
    os.environ.get("JAXRL_FDG_TEST_CACHE", Path.home() / ".cache" / "jaxrl_fdg" / "xla-tests")
)
jax.config.update("jax_compilation_cache_dir", str(_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


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

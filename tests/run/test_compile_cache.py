"""JAX's persistent compilation cache (``jaxrl_fdg.run.compile_cache``): on in the user cache
directory unless a cache is configured already or switched off, which are left as they are;
``compile_cache = false`` leaves JAX alone, in training and in the run's evaluations."""

from pathlib import Path

import jax
import pytest

import jaxrl_fdg as rl
from jaxrl_fdg.run import compile_cache

OPTIONS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_enable_compilation_cache",
)


@pytest.fixture
def jax_options():
    """JAX's cache options as the test found them, put back after it (the suite's own cache)."""
    before = {name: getattr(jax.config, name) for name in OPTIONS}
    yield
    for name, value in before.items():
        jax.config.update(name, value)


def test_the_default_directory_is_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.default_directory() == tmp_path / "jaxrl_fdg" / "xla"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compile_cache.default_directory() == Path.home() / ".cache" / "jaxrl_fdg" / "xla"


def test_enable_sets_a_directory_only_where_none_is_configured(jax_options, tmp_path):
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "theirs"))
    assert compile_cache.enable(tmp_path / "ours") == tmp_path / "theirs"  # kept
    jax.config.update("jax_compilation_cache_dir", None)
    assert compile_cache.enable(tmp_path / "ours") == tmp_path / "ours"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "ours")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == compile_cache.MIN_COMPILE_TIME_S
    assert compile_cache.enable(tmp_path / "other") == tmp_path / "ours"  # once is enough


def test_a_cache_switched_off_stays_off(jax_options, tmp_path):
    jax.config.update("jax_enable_compilation_cache", False)
    jax.config.update("jax_compilation_cache_dir", None)
    assert compile_cache.enable(tmp_path) is None
    assert jax.config.jax_compilation_cache_dir is None


def test_no_compile_cache_leaves_jax_alone(tiny, monkeypatch, tmp_path):
    monkeypatch.setattr(compile_cache, "enable", lambda: pytest.fail("enable() was called"))
    rl.train(tiny.replace(compile_cache=False, out=str(tmp_path), run_name="r"))
    rl.evaluate(tmp_path / "r")  # as the run had it

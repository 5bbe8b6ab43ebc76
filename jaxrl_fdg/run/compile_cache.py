"""JAX's persistent compilation cache, on by default for training runs and their evaluations.

XLA compilation is about half the wall time of a short run (3 s of compile against 3 s of running
for the default PPO on two CPU cores), and it is the same work every time the same configuration
runs again. JAX can keep compiled executables on disk, keyed by the lowered program, the compile
options, the jaxlib version and the device, and load them instead of compiling: that is what
:func:`enable` turns on, in the user cache directory (``$XDG_CACHE_HOME/jaxrl_fdg/xla``, else
``~/.cache/jaxrl_fdg/xla``). JAX writes only programs whose compilation took longer than
``jax_persistent_cache_min_compile_time_secs`` (1 s by default); we lower it to
:data:`MIN_COMPILE_TIME_S`. At 0.5 s, two of ``step`` mode's six programs (0.15 to 0.45 s of XLA
time each) were compiled again on every run; at 0.1 s every program of every compiled mode is
kept, while ``eager`` mode's op-by-op compiles (tens of milliseconds each) do not each cost a
file. ``benchmarks/compile_cache.py`` measures what a second run saves.

A cache configured by other means (``JAX_COMPILATION_CACHE_DIR``, ``jax.config.update``, a test
harness) is left as it is, and so is a cache switched off with ``jax_enable_compilation_cache``.
Tracing and lowering run every time: the cache key is computed from the lowered program.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

MIN_COMPILE_TIME_S = 0.1


def default_directory() -> Path:
    """``$XDG_CACHE_HOME/jaxrl_fdg/xla``, or ``~/.cache/jaxrl_fdg/xla`` when it is not set."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxrl_fdg" / "xla"


def enable(directory: str | Path | None = None) -> Path | None:
    """Turn on the persistent compilation cache in ``directory`` (default:
    :func:`default_directory`) unless a cache directory is already configured, which is kept.

    Returns the directory in use, or ``None`` when the cache is switched off. Safe to call more
    than once and after programs have been compiled: JAX opens the cache at the next compile.
    """
    if not jax.config.jax_enable_compilation_cache:
        return None
    if jax.config.jax_compilation_cache_dir:
        return Path(jax.config.jax_compilation_cache_dir)
    path = Path(directory) if directory is not None else default_directory()
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_TIME_S)
    return path

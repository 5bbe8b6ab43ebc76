"""Exported: a program kept as StableHLO, flat, lowered again without tracing what made it."""

import pickle
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.policies.exported import Exported
from jaxrl_fdg.testing import assert_same_bits

ROOT = Path(__file__).resolve().parents[2]


class Pair(NamedTuple):  # a pytree type jax.export does not know
    a: jax.Array
    b: dict


def step(pair: Pair, key: jax.Array) -> tuple[Pair, jax.Array]:
    noise = jax.random.normal(key, pair.a.shape)
    return Pair(pair.a * 2 + noise, {"n": pair.b["n"] + 1}), jnp.sum(pair.a)


def test_a_program_kept_and_read_back_computes_the_same_bits_as_the_function():
    pair, key = Pair(jnp.arange(3.0), {"n": jnp.int32(0)}), jax.random.key(1)
    kept = pickle.loads(pickle.dumps(Exported.of(step, (pair, key))))
    assert jax.tree.structure(kept.args) == jax.tree.structure((pair, key))
    assert [x.shape for x in jax.tree.leaves(kept.out_info)] == [(3,), (), ()]
    again = jax.jit(kept.function()).lower(*kept.args).compile()
    assert_same_bits(again(pair, key), jax.jit(step)(pair, key))


def qr_sum(x: jax.Array) -> jax.Array:
    return jnp.linalg.qr(x)[0].sum() + x.sum()


def test_only_a_program_that_calls_lapack_asks_for_the_kernels_setup():
    x = jnp.eye(3)
    assert Exported.of(qr_sum, (x,)).calls_lapack()
    assert not Exported.of(step, (Pair(x, {"n": jnp.int32(0)}), jax.random.key(0))).calls_lapack()


# Writes (a fresh compile, JAX's persistent cache off) or loads and runs an executable that calls
# LAPACK, in a process of its own: loaded without the kernels set up, it would crash the process.
_QR_SCRIPT = """
import pickle, sys
import jax, jax.numpy as jnp
jax.config.update("jax_enable_compilation_cache", False)
from jaxrl_fdg.policies.exported import Exported, kernels_setup, load, serialize
from tests.policies.test_exported import qr_sum
x = jnp.arange(9.0).reshape(3, 3) + jnp.eye(3)
if sys.argv[1] == "write":
    program = Exported.of(qr_sum, (x,))
    compiled = jax.jit(program.function()).lower(*program.args).compile()
    pickle.dump((program, serialize(compiled)), open(sys.argv[2], "wb"))
else:
    program, saved = pickle.load(open(sys.argv[2], "rb"))
    setup = kernels_setup([program])
    loaded = load(saved)
    setup()
    print(float(loaded(x)), float(qr_sum(x)))
"""


def test_an_executable_that_calls_lapack_loads_and_runs_in_a_fresh_process(tmp_path):
    kept = tmp_path / "qr.pkl"
    for stage in ("write", "read"):
        done = subprocess.run(
            [sys.executable, "-c", _QR_SCRIPT, stage, str(kept)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    got, want = done.stdout.split()
    assert got == want

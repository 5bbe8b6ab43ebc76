"""Exported: a program kept as StableHLO, flat, lowered again without tracing what made it."""

import pickle
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrl_fdg.policies.exported import Exported
from jaxrl_fdg.testing import assert_same_bits


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

"""Memory (``jaxrl_fdg.run.memory``): what a compiled program needs beyond its arguments, a run
refused where that does not fit what the device has free, and one line naming the settings to
reduce, the one that weighs most first; the lanes that fit. (Whole runs too large for memory:
tests/faults/test_resource_faults.py.)"""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import pytest

from jaxrl_fdg import testing
from jaxrl_fdg.config import resolve
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import memory


def test_out_of_memory_is_xlas_resource_exhausted_and_said_in_its_first_line():
    oom = jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 12 bytes\nmore")
    assert memory.is_out_of_memory(oom)
    assert not memory.is_out_of_memory(jax.errors.JaxRuntimeError("INTERNAL: other"))
    assert not memory.is_out_of_memory(MemoryError("RESOURCE_EXHAUSTED"))  # not XLA's
    assert memory.first_line(oom) == "RESOURCE_EXHAUSTED: Out of memory allocating 12 bytes"
    assert memory.first_line(ValueError()) == "ValueError"


def test_a_program_needs_its_outputs_beyond_its_arguments():
    compiled = jax.jit(lambda x: jnp.concatenate([x, x])).lower(jnp.zeros(1000)).compile()
    assert memory.needed_bytes(compiled) >= 2 * 1000 * 4  # its output, float32 [2000]
    assert memory.needed_bytes(object()) is None  # nothing to analyse


def test_programs_that_do_not_fit_are_refused_naming_the_largest(monkeypatch):
    resolved = resolve(testing.tiny("ppo"))
    compiled = jax.jit(lambda x: jnp.concatenate([x, x])).lower(jnp.zeros(1000)).compile()
    need = memory.needed_bytes(compiled)
    monkeypatch.setattr(memory, "free_bytes", lambda device: need - 1)
    state = {"learner": jnp.zeros(10)}
    with pytest.raises(ConfigError) as refused:
        memory.check_programs(resolved, {"scan": compiled}, state)
    assert str(refused.value).startswith(
        f"the run does not fit in memory: its program 'scan' {memory._size(need)} more, and "
        f"this machine has {memory._size(need - 1)} free; reduce num_envs (2) or rollout_len (8)"
    )
    monkeypatch.setattr(memory, "free_bytes", lambda device: need)
    memory.check_programs(resolved, {"scan": compiled}, state)  # fits exactly
    monkeypatch.setattr(memory, "free_bytes", lambda device: None)
    memory.check_programs(resolved, {"scan": compiled}, state)  # nothing known: no prediction


def test_sizes_are_said_in_decimal_units():
    assert [memory._size(n) for n in (999, 1000, 1_234_567, 5e12)] == [
        "999 bytes",
        "1.0 kB",
        "1.2 MB",
        "5.0 TB",
    ]


def test_advice_names_what_memory_grows_with_the_heaviest_first():
    assert memory.advice(resolve(testing.tiny("ppo"))) == "reduce num_envs (2) or rollout_len (8)"
    dqn = resolve(testing.tiny("dqn", num_seeds=2, eval_every=32, eval_episodes=3))
    assert memory.advice(dqn) == (
        "reduce num_envs (2), rollout_len (8), num_seeds (2), eval_episodes (3) or buffer_size (64)"
    )
    # A state whose replay holds the most: the buffer's size comes first.
    state = SimpleNamespace(fragments={"replay": jnp.zeros(100), "learner": jnp.zeros(1)})
    assert memory.advice(dqn, state).startswith("reduce buffer_size (64), num_envs (2)")


def test_lanes_advice_says_how_many_seeds_or_points_fit():
    seeds = resolve(testing.tiny("ppo", num_seeds=4))
    assert memory.lanes_advice(seeds, 3) == "it fits at most 3 lanes; use --num-seeds 3 or fewer"
    sweep = resolve(testing.tiny("ppo", num_seeds=2, hparams={"lr": "1e-3,3e-4"}))  # 4 lanes
    assert memory.lanes_advice(sweep, 3) == (
        "it fits at most 3 lanes; use --num-seeds 1 or fewer (× the sweep's 2 points)"
    )
    assert memory.lanes_advice(sweep, 1) == (
        "it fits at most 1 lane; sweep at most 1 point with --num-seeds 1"
    )

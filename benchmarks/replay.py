"""µs per prioritized ``sample`` and ``update_priorities`` at 2^20 slots, in one run.

Ours at arity K ∈ {2, 4, 8, 16, 32, 64} (K = 2 is the binary tree), flashbax's prioritised flat
buffer, and our uniform sampling, each at batch 256 and 4096. Every operation is a jitted call
timed with ``block_until_ready``; updates donate the state and chain it, as a training loop
would (otherwise each call would copy the whole tree). Median of ``--calls`` after warm-up.

    pip install flashbax          # the comparison; not a dependency of jaxrl-fdg
    python benchmarks/replay.py   # writes benchmarks/results/replay.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxrl_fdg.fragments import replay
from jaxrl_fdg.profiling import write_report

EXAMPLE = {"obs": jnp.zeros(4), "action": jnp.int32(0), "reward": jnp.float32(0)}


def _fill(capacity: int) -> dict:
    return {
        "obs": jnp.zeros((capacity, 4)),
        "action": jnp.zeros(capacity, jnp.int32),
        "reward": jnp.zeros(capacity),
    }


def _time(fn, calls: int) -> float:
    """Median µs of ``fn()`` (which must block) over ``calls`` calls after 3 warm-ups."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def bench_ours(capacity: int, batch: int, arity: int | None, calls: int) -> dict:
    """``arity=None``: uniform replay."""
    if arity is None:
        buffer = replay.make_uniform(capacity, batch)
    else:
        buffer = replay.make_prioritized(capacity, batch, arity=arity)
    state = jax.jit(buffer.add)(buffer.init(EXAMPLE), _fill(capacity))
    key = jax.random.key(0)
    sample = jax.jit(buffer.sample)
    out = {"sample_us": _time(lambda: jax.block_until_ready(sample(state, key, 0.4)), calls)}
    if arity is None:
        return out
    drawn = sample(state, key, 0.4)
    td = jax.random.normal(key, (batch,))
    update = jax.jit(buffer.update_priorities, donate_argnums=0)
    box = [state]

    def step():
        box[0] = update(box[0], drawn.indices, drawn.writes, td)
        jax.block_until_ready(box[0])

    out["update_us"] = _time(step, calls)
    return out


def bench_flashbax(capacity: int, batch: int, calls: int) -> dict:
    import flashbax as fbx

    add_batch = 1024
    buffer = fbx.make_prioritised_flat_buffer(
        max_length=capacity, min_length=batch, sample_batch_size=batch, add_batch_size=add_batch
    )
    state = buffer.init(EXAMPLE)
    add = jax.jit(buffer.add, donate_argnums=0)
    chunk = jax.tree.map(lambda x: x[:add_batch], _fill(add_batch))
    for _ in range(capacity // add_batch):
        state = add(state, chunk)
    key = jax.random.key(0)
    sample = jax.jit(buffer.sample)
    out = {"sample_us": _time(lambda: jax.block_until_ready(sample(state, key)), calls)}
    drawn = sample(state, key)
    priorities = jnp.abs(jax.random.normal(key, (batch,))) + 1e-6
    update = jax.jit(buffer.set_priorities, donate_argnums=0)
    box = [state]

    def step():
        box[0] = update(box[0], drawn.indices, priorities)
        jax.block_until_ready(box[0])

    out["update_us"] = _time(step, calls)
    out["version"] = fbx.__version__ if hasattr(fbx, "__version__") else "unknown"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2-capacity", type=int, default=20)
    parser.add_argument("--batches", default="256,4096")
    parser.add_argument("--arities", default="2,4,8,16,32,64")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--no-flashbax", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "replay.json"))
    args = parser.parse_args()
    capacity = 2**args.log2_capacity
    batches = [int(b) for b in args.batches.split(",")]
    arities = [int(k) for k in args.arities.split(",")]

    results: dict[str, dict] = {}
    for batch in batches:
        row = {f"K={k}": bench_ours(capacity, batch, k, args.calls) for k in arities}
        row["uniform"] = bench_ours(capacity, batch, None, args.calls)
        if not args.no_flashbax:
            row["flashbax"] = bench_flashbax(capacity, batch, args.calls)
        results[str(batch)] = row
        print(f"batch {batch}:")
        for name, r in row.items():
            update = f"{r['update_us']:9.1f}" if "update_us" in r else "        —"
            print(f"  {name:>9}: sample {r['sample_us']:9.1f} µs   update {update} µs")

    write_report(
        args.out,
        "replay",
        {
            "capacity": capacity,
            "batches": batches,
            "arities": arities,
            "calls": args.calls,
            "transition": "obs f32[4], action i32, reward f32",
        },
        results,
    )


if __name__ == "__main__":
    main()

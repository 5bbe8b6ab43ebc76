"""µs per prioritized ``sample`` and ``update_priorities`` at 2^20 slots, in one run.

Ours at arity K ∈ {2, 4, 8, 16, 32, 64} (K = 2 is the binary tree), flashbax's prioritised flat
buffer, and our uniform sampling, each at batch 256 and 4096. Per variant:

* ``sample_us``, ``update_us``: one jitted call, timed with ``block_until_ready``. Updates donate
  the state and chain it, as a training loop would (otherwise each call would copy the whole
  tree), and reuse one sampled batch of indices.
* ``call_floor_us``: a jitted call that takes and returns the same donated state and does nothing
  else: what any update costs on top of its work, in dispatch and buffer handling.
* ``update_in_scan_us``: per update, when 16 updates with freshly sampled indices run in one
  jitted ``lax.scan`` (how a fused training loop calls it): the work without the call.

Both buffers are measured the same way: jitted, donated state for updates, the same batch size.
Every timing is the median of ``--calls`` calls after warm-up, taken in ``--rounds`` blocks that
rotate through the variants of one batch size, so drift on a shared machine hits them alike.

    pip install flashbax          # the comparison; not a dependency of jaxrl-fdg
    python benchmarks/replay.py   # writes benchmarks/results/replay.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxrl_fdg.fragments import replay
from jaxrl_fdg.profiling import write_report

EXAMPLE = {"obs": jnp.zeros(4), "action": jnp.int32(0), "reward": jnp.float32(0)}
SCAN_STEPS = 16


def _fill(capacity: int) -> dict:
    return {
        "obs": jnp.zeros((capacity, 4)),
        "action": jnp.zeros(capacity, jnp.int32),
        "reward": jnp.zeros(capacity),
    }


def _chained(fn: Callable, state, *args) -> Callable[[], None]:
    """A step that runs ``state = fn(state, *args)`` (``fn`` donates the state) and blocks."""
    box = [jax.tree.map(jnp.copy, state)]

    def step():
        box[0] = fn(box[0], *args)
        jax.block_until_ready(box[0])

    return step


def _floor(state) -> Callable[[], None]:
    """A donated call that returns the state with its smallest array incremented: the per-call
    cost any update pays on top of its work."""
    leaves, treedef = jax.tree.flatten(state)
    smallest = min(range(len(leaves)), key=lambda i: leaves[i].size)

    def touch(state):
        leaves = jax.tree.leaves(state)
        leaves[smallest] = leaves[smallest] + 1
        return jax.tree.unflatten(treedef, leaves)

    return _chained(jax.jit(touch, donate_argnums=0), state)


def ours(capacity: int, batch: int, arity: int | None) -> dict[str, Callable[[], None]]:
    """Timed steps; ``arity=None``: uniform replay (sampling only)."""
    if arity is None:
        buffer = replay.make_uniform(capacity, batch)
    else:
        buffer = replay.make_prioritized(capacity, batch, arity=arity)
    state = jax.jit(buffer.add)(buffer.init(EXAMPLE), _fill(capacity))
    key = jax.random.key(0)
    sample = jax.jit(buffer.sample)
    steps = {"sample_us": lambda: jax.block_until_ready(sample(state, key, 0.4))}
    if arity is None:
        return steps
    drawn = sample(state, key, 0.4)
    td = jax.random.normal(key, (batch,))
    update = jax.jit(buffer.update_priorities, donate_argnums=0)
    steps["update_us"] = _chained(update, state, drawn.indices, drawn.writes, td)
    steps["call_floor_us"] = _floor(state)

    keys = jax.random.split(key, SCAN_STEPS)
    many = jax.jit(jax.vmap(buffer.sample, in_axes=(None, 0, None)))(state, keys, 0.4)
    tds = jax.random.normal(key, (SCAN_STEPS, batch))

    def scanned(state, indices, writes, tds):
        def one(state, x):
            return buffer.update_priorities(state, *x), None

        return jax.lax.scan(one, state, (indices, writes, tds))[0]

    scan = jax.jit(scanned, donate_argnums=0)
    steps["update_in_scan_us"] = _chained(scan, state, many.indices, many.writes, tds)
    return steps


def flashbax(capacity: int, batch: int) -> dict[str, Callable[[], None]]:
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
    steps = {"sample_us": lambda: jax.block_until_ready(sample(state, key))}
    drawn = sample(state, key)
    priorities = jnp.abs(jax.random.normal(key, (batch,))) + 1e-6
    update = jax.jit(buffer.set_priorities, donate_argnums=0)
    steps["update_us"] = _chained(update, state, drawn.indices, priorities)
    steps["call_floor_us"] = _floor(state)

    keys = jax.random.split(key, SCAN_STEPS)
    many = jax.jit(jax.vmap(buffer.sample, in_axes=(None, 0)))(state, keys)
    many_priorities = jnp.abs(jax.random.normal(key, (SCAN_STEPS, batch))) + 1e-6

    def scanned(state, indices, priorities):
        def one(state, x):
            return buffer.set_priorities(state, *x), None

        return jax.lax.scan(one, state, (indices, priorities))[0]

    scan = jax.jit(scanned, donate_argnums=0)
    steps["update_in_scan_us"] = _chained(scan, state, many.indices, many_priorities)
    return steps


def _time(steps: dict[tuple[str, str], Callable[[], None]], calls: int, rounds: int) -> dict:
    """Median µs per step over ``calls`` calls, in ``rounds`` rotating blocks, after warm-up."""
    times: dict[tuple[str, str], list[float]] = {name: [] for name in steps}
    for step in steps.values():
        for _ in range(3):
            step()
    per_block = max(1, calls // rounds)
    for _ in range(rounds):
        for name, step in steps.items():
            for _ in range(per_block):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2-capacity", type=int, default=20)
    parser.add_argument("--batches", default="256,4096")
    parser.add_argument("--arities", default="2,4,8,16,32,64")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-flashbax", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "replay.json"))
    args = parser.parse_args()
    capacity = 2**args.log2_capacity
    batches = [int(b) for b in args.batches.split(",")]
    arities = [int(k) for k in args.arities.split(",")]

    flashbax_version = None
    if not args.no_flashbax:
        from importlib.metadata import version

        flashbax_version = version("flashbax")

    results: dict[str, dict] = {}
    for batch in batches:
        variants = {f"K={k}": ours(capacity, batch, k) for k in arities}
        variants["uniform"] = ours(capacity, batch, None)
        if not args.no_flashbax:
            variants["flashbax"] = flashbax(capacity, batch)
        steps = {(name, m): s for name, v in variants.items() for m, s in v.items()}
        timed = _time(steps, args.calls, args.rounds)
        row: dict[str, dict] = {name: {} for name in variants}
        for (name, measure), us in timed.items():
            row[name][measure] = us / SCAN_STEPS if measure == "update_in_scan_us" else us
        results[str(batch)] = row
        print(f"batch {batch}:")
        for name, r in row.items():
            cells = "   ".join(f"{m[:-3]} {us:8.1f}" for m, us in r.items())
            print(f"  {name:>9}: {cells}  (µs)")

    write_report(
        args.out,
        "replay",
        {
            "capacity": capacity,
            "batches": batches,
            "arities": arities,
            "calls": args.calls,
            "rounds": args.rounds,
            "scan_steps": SCAN_STEPS,
            "transition": "obs f32[4], action i32, reward f32",
            "flashbax": flashbax_version,
        },
        results,
    )


if __name__ == "__main__":
    main()

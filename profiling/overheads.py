"""What a device spends beyond the roofline: per program launch, per operation, per traced event.

A roofline (:mod:`.bound`) charges a program only for its FLOPs and bytes. An RL iteration is
thousands of small operations, and on any device each one costs a floor of its own however little
it computes; each call of a compiled program costs a launch. :class:`Overheads` holds those two
costs, and the model of :func:`predicted_s` adds them to the roofline:

    time per run = roofline + operations executed × ``op_s`` + ``launch_s``

On the device a run uses, CPU or GPU, the costs are measured (:func:`measure`, about a second,
cached per machine and device beside the CPU's peaks): ``launch_s`` is the median wall time of
calling a compiled one-addition program and waiting for it; ``op_s`` the time one more operation
adds to a loop body whose operations do next to nothing (sorts of two numbers, each followed by a
multiply). The same loop traced under
``jax.profiler`` gives ``tracer_s``: how much longer such an operation's event lasts in a trace
than the operation takes untraced, which :mod:`.trace` subtracts from every event it attributes.

The "predicted on H100" line of a run elsewhere cannot measure an H100: :data:`GPU_ASSUMED` states
published-order figures for it, and every prediction made with them says "assumed".
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import NamedTuple

from jaxrl_fdg.profiling.peaks import best_seconds, cache_path, cached, machine_key


class Overheads(NamedTuple):
    """A device's fixed costs, in seconds: ``launch_s`` per call of a compiled program,
    ``op_s`` per operation executed, ``tracer_s`` added to an operation's traced event;
    ``source``: ``measured <date>`` or ``assumed: <why>``."""

    name: str
    launch_s: float
    op_s: float
    tracer_s: float
    source: str


# A GPU's floor per operation is a kernel launch: back-to-back launches of short kernels on one
# stream run at a few microseconds each, and a CUDA graph (XLA's command buffers) shaves that
# somewhat (NVIDIA's "Getting Started with CUDA Graphs", 2019, measured 3.8 µs per short kernel
# on a stream and 3.4 µs in a graph on a V100, each kernel's own run included). We assume 2 µs
# per operation on an H100-class GPU (launch floor without the kernel's work, which the roofline
# charges). A program's launch from JAX is Python dispatch plus the driver's submission: assumed
# 20 µs. Loop trips of a `while` are not charged separately.
GPU_ASSUMED = Overheads(
    "gpu",
    launch_s=20e-6,
    op_s=2e-6,
    tracer_s=0.0,
    source="assumed: 2 µs per operation (a kernel launch), 20 µs per program call",
)

TRIPS = 2000  # loop trips of the calibration program
TRACED_TRIPS = 100  # and of its traced run
EXTRA_OPS = 32  # (sort, multiply) pairs added to its body to time one operation
LAUNCHES = 300
FIELDS = ("launch_s", "op_s", "tracer_s")


def overheads_path() -> Path:
    """``overheads.json`` beside the peaks' cache file."""
    return cache_path().with_name("overheads.json")


def device_overheads(device=None, *, cache: Path | None = None) -> Overheads | None:
    """``device``'s (default: JAX's first) costs, measured (:func:`measure`) on a CPU or a GPU
    and cached per machine and device kind; ``None`` on anything else."""
    import jax

    device = device or jax.devices()[0]
    if device.platform not in ("cpu", "gpu", "cuda", "rocm"):
        return None
    key = machine_key() if device.platform == "cpu" else f"{machine_key()} | {device.device_kind}"
    entry = cached(cache or overheads_path(), key, lambda: measure(device), FIELDS)
    values = {f: entry.get(f, 0.0) for f in FIELDS}
    name = "cpu" if device.platform == "cpu" else device.device_kind
    return Overheads(name, **values, source=f"measured {entry['measured']}")


def predicted_s(
    roofline_s: float, ops: float, overheads: Overheads, launches: float = 1.0
) -> float:
    """The model's time for one run: the roofline plus ``ops`` operations' floors plus
    ``launches`` program launches (a fraction where one call runs several iterations)."""
    return roofline_s + ops * overheads.op_s + launches * overheads.launch_s


def measure(device=None) -> dict[str, float]:
    """``launch_s``, ``op_s`` and ``tracer_s`` on ``device`` (default: JAX's CPU device; see
    the module docstring)."""
    import jax
    import jax.numpy as jnp

    from jaxrl_fdg.profiling import trace

    device = device or jax.devices("cpu")[0]
    x = jax.device_put(jnp.arange(2.0, dtype=jnp.float32), device)
    add = jax.jit(lambda v: v + 1.0).lower(x).compile()
    add(x).block_until_ready()
    launches = []
    for _ in range(LAUNCHES):
        start = time.perf_counter()
        add(x).block_until_ready()
        launches.append(time.perf_counter() - start)
    short, long = (_loop(k, TRIPS).lower(x).compile() for k in (1, 1 + EXTRA_OPS))
    op_s = max(best_seconds(long, x) - best_seconds(short, x), 0.0) / (TRIPS * 2 * EXTRA_OPS)
    traced = _loop(1 + EXTRA_OPS, TRACED_TRIPS).lower(x).compile()
    traced(x).block_until_ready()
    found = {"launch_s": statistics.median(launches), "op_s": op_s}
    try:
        with trace.capture() as events:
            traced(x).block_until_ready()
    except Exception:  # noqa: BLE001 - a profiler session of the caller's own is open: no
        return found  # tracer_s now, so the entry lacks it and is measured again next time
    durations = [
        e["dur"] * 1e-6
        for e in events
        if e.get("ph") == "X"
        and "hlo_op" in (e.get("args") or {})
        and (e["name"].startswith("sort") or "multiply" in e["name"])
    ]
    event_s = statistics.median(durations) if durations else op_s
    return {**found, "tracer_s": max(event_s - op_s, 0.0)}


def _loop(k: int, trips: int):
    import jax
    import jax.numpy as jnp

    def body(_, v):
        for _ in range(k):
            v = jnp.sort(v) * 1.0001  # a sort is never fused: one operation each, and a multiply
        return v

    return jax.jit(lambda v: jax.lax.fori_loop(0, trips, body, v))


__all__ = ["GPU_ASSUMED", "Overheads", "device_overheads", "measure", "predicted_s"]

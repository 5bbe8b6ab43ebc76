"""What a device can do at most: peak FLOP/s and peak memory bandwidth (bytes/s).

A GPU's figures come from its vendor's datasheet (:data:`GPU_PEAKS`). A CPU has no datasheet
figure that holds for the cores a process may use, so :func:`cpu_peak` measures it: the best of a
few large float32 matmuls (FLOP/s), and of elementwise passes over an array that stays in the
cache and over one far larger than the caches (bytes/s; the roof is the faster, see
:func:`cpu_peak`). The measurement takes about half a second and is cached per machine
(``$XDG_CACHE_HOME/jaxrl_fdg/peaks.json``, keyed by the CPU's model, the cores usable and the JAX
version), so a run measures it once.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

TERA = 1e12


class Peak(NamedTuple):
    """A device's roofs. ``flops_s``: dense float32 FLOP/s at JAX's default matmul precision
    (TF32 tensor cores on NVIDIA Ampere and later, full float32 on a CPU); ``bytes_s``: memory
    bandwidth; ``source``: ``datasheet`` or ``measured <date>``."""

    name: str
    flops_s: float
    bytes_s: float
    source: str


class GpuSpec(NamedTuple):
    """Datasheet figures, dense (without structured sparsity), in units of 10^12 per second."""

    name: str
    fp32: float  # CUDA cores
    tf32: float  # tensor cores: float32 matmuls at JAX's default precision
    bf16: float  # tensor cores
    hbm_tb_s: float

    def peak(self, precision: str = "tf32") -> Peak:
        flops = {"fp32": self.fp32, "tf32": self.tf32, "bf16": self.bf16}[precision]
        return Peak(f"{self.name} ({precision})", flops * TERA, self.hbm_tb_s * TERA, "datasheet")


# (substring of jax's device_kind, lower case; figures). The first match wins, so a variant
# comes before its family. Sources, NVIDIA datasheets, dense figures (the "with sparsity" ones
# halved):
# - H100 SXM5 / PCIe / NVL: "NVIDIA H100 Tensor Core GPU" datasheet (2023): FP32 67 / 51 / 60,
#   TF32 494.5 / 378 / 417.5 (989 / 756 / 835 with sparsity), BF16 989.5 / 756 / 835.5,
#   HBM3 3.35 TB/s, HBM2e 2.0 TB/s, HBM3 3.9 TB/s.
# - H200 SXM / NVL: "NVIDIA H200 Tensor Core GPU" datasheet (2024): as the H100 SXM / NVL in
#   compute, HBM3e 4.8 TB/s.
# - A100 SXM 80GB / 40GB / PCIe 80GB / 40GB: "NVIDIA A100 Tensor Core GPU" datasheet (2021):
#   FP32 19.5, TF32 156 (312 with sparsity), BF16 312; HBM2e 2.039 / HBM2 1.555 / 1.935 /
#   1.555 TB/s.
# - L4: "NVIDIA L4 Tensor Core GPU" datasheet (2023): FP32 30.3, TF32 60 (120), BF16 121 (242),
#   GDDR6 300 GB/s.
# - L40S: "NVIDIA L40S" datasheet (2023): FP32 91.6, TF32 183 (366), BF16 362.05 (733),
#   GDDR6 864 GB/s. L40: "NVIDIA L40" datasheet (2022): FP32 90.5, TF32 90.5 (181), BF16 181.05
#   (362.1), GDDR6 864 GB/s.
# - A10 / A10G: "NVIDIA A10 Tensor Core GPU" datasheet (2021): FP32 31.2, TF32 62.5 (125),
#   BF16 125 (250), GDDR6 600 GB/s (AWS lists the A10G with the same memory).
# - V100 SXM2: "NVIDIA Tesla V100" datasheet (2018): FP32 15.7, no TF32 or BF16 (float32 matmuls
#   run at FP32), HBM2 900 GB/s. T4: "NVIDIA T4" datasheet (2019): FP32 8.1, GDDR6 320 GB/s.
GPU_PEAKS: tuple[tuple[str, GpuSpec], ...] = (
    ("h100 pcie", GpuSpec("H100 PCIe", 51.0, 378.0, 756.0, 2.0)),
    ("h100 nvl", GpuSpec("H100 NVL", 60.0, 417.5, 835.5, 3.9)),
    ("h100", GpuSpec("H100 SXM", 67.0, 494.5, 989.5, 3.35)),
    ("h200 nvl", GpuSpec("H200 NVL", 60.0, 417.5, 835.5, 4.8)),
    ("h200", GpuSpec("H200 SXM", 67.0, 494.5, 989.5, 4.8)),
    ("a100-sxm4-40gb", GpuSpec("A100 SXM 40GB", 19.5, 156.0, 312.0, 1.555)),
    ("a100-pcie-40gb", GpuSpec("A100 PCIe 40GB", 19.5, 156.0, 312.0, 1.555)),
    ("a100 80gb pcie", GpuSpec("A100 PCIe 80GB", 19.5, 156.0, 312.0, 1.935)),
    ("a100", GpuSpec("A100 SXM 80GB", 19.5, 156.0, 312.0, 2.039)),
    ("l40s", GpuSpec("L40S", 91.6, 183.0, 362.05, 0.864)),
    ("l40", GpuSpec("L40", 90.5, 90.5, 181.0, 0.864)),
    ("l4", GpuSpec("L4", 30.3, 60.0, 121.0, 0.3)),
    ("a10", GpuSpec("A10", 31.2, 62.5, 125.0, 0.6)),
    ("v100", GpuSpec("V100 SXM2", 15.7, 15.7, 15.7, 0.9)),
    ("t4", GpuSpec("T4", 8.1, 8.1, 8.1, 0.32)),
)
# The device the predicted time per iteration is for.
H100 = dict(GPU_PEAKS)["h100"]


def gpu_spec(device_kind: str) -> GpuSpec | None:
    """The datasheet figures for ``device_kind`` (``jax.Device.device_kind``), if listed."""
    kind = device_kind.lower()
    return next((spec for key, spec in GPU_PEAKS if key in kind), None)


def matmul_precision() -> str:
    """``tf32`` at JAX's default matmul precision, ``fp32`` where it is set to full float32."""
    import jax

    setting = str(jax.config.jax_default_matmul_precision or "").lower()
    return "fp32" if setting in ("highest", "float32", "tensorfloat32x3") else "tf32"


def device_peak(device=None, *, cache: Path | None = None) -> Peak | None:
    """The roofs of ``device`` (default: JAX's first): the datasheet's for a listed GPU, measured
    and cached for a CPU, ``None`` for anything else (a TPU, an unlisted GPU)."""
    import jax

    device = device or jax.devices()[0]
    if device.platform == "cpu":
        return cpu_peak(cache)
    spec = gpu_spec(device.device_kind) if device.platform in ("gpu", "cuda", "rocm") else None
    return spec.peak(matmul_precision()) if spec else None


# -- the CPU, measured ---------------------------------------------------------------------------

MATMUL_N = 1024  # 2 × 1024³ ≈ 2.1 GFLOP a call
COPY_ELEMENTS = 16 * 2**20  # 64 MiB of float32 read and 64 MiB written a pass
CACHE_ELEMENTS = 16 * 2**10  # 64 KiB: in the L2 cache of any CPU this runs on
CACHE_PASSES = 2000
REPEATS = 5
CPU_FIELDS = ("flops_s", "cache_bytes_s", "memory_bytes_s")
RELOAD_BELOW = 1.0  # an entry measured at a 1-min load this much above today's is measured again


def cache_path() -> Path:
    """``$XDG_CACHE_HOME/jaxrl_fdg/peaks.json``, or ``~/.cache/jaxrl_fdg/peaks.json``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxrl_fdg" / "peaks.json"


def machine_key() -> str:
    """What the CPU's peak depends on: its model, the cores this process may use, JAX's version."""
    import jax

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"cpu | {model} | {cores} cores | jax {jax.__version__}"


def cpu_peak(cache: Path | None = None) -> Peak:
    """This CPU's roofs: read from ``cache`` (default :func:`cache_path`) if measured before for
    this :func:`machine_key`, else measured (:func:`measure_cpu`) and written there."""

    def measure() -> dict[str, float]:
        flops_s, cache_s, memory_s = measure_cpu()
        return {"flops_s": flops_s, "cache_bytes_s": cache_s, "memory_bytes_s": memory_s}

    entry = cached(cache or cache_path(), machine_key(), measure, CPU_FIELDS)
    # XLA counts the bytes every operation reads and writes, most of which a small RL program
    # finds in the cache: the roof is the faster of the two bandwidths, so that no program can
    # beat it (a roofline stays a lower bound on time). Main memory's figure is kept beside it.
    bandwidth = max(entry["cache_bytes_s"], entry["memory_bytes_s"])
    source = (
        f"measured {entry['measured']}; bandwidth of the cache, main memory "
        f"{entry['memory_bytes_s'] / 1e9:.1f} GB/s"
    )
    return Peak("cpu", entry["flops_s"], bandwidth, source)


def cached(path: Path, key: str, measure: Callable[[], dict], fields: Iterable[str]) -> dict:
    """The entry ``key`` of the JSON file ``path``, or ``measure()``'s dict written there first
    when the file lacks it or one of its ``fields``. An entry is stamped with the date
    (``measured``) and the 1-minute load average (``load``). A measurement taken while other work
    loaded the cores reads the machine as slower than it is, so an entry taken at a load
    :data:`RELOAD_BELOW` or more above the present one is measured again."""
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    known = known if isinstance(known, dict) else {}
    entry = known.get(key)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    stale = not isinstance(entry, dict) or any(f not in entry for f in ("measured", *fields))
    if stale or entry.get("load", float("inf")) - load >= RELOAD_BELOW:
        entry = measure()
        entry["measured"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        entry["load"] = load
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**known, key: entry}, indent=2) + "\n")
            tmp.replace(path)
        except OSError:  # a read-only home: measured again next time, nothing worse
            pass
    return entry


def measure_cpu() -> tuple[float, float, float]:
    """``(FLOP/s, cache bytes/s, memory bytes/s)`` on JAX's CPU device, each the best of
    :data:`REPEATS`: float32 matmuls of :data:`MATMUL_N` squared; :data:`CACHE_PASSES` passes of
    ``y * a + b`` over :data:`CACHE_ELEMENTS` floats inside one program (the array stays in the
    cache); and one such pass over :data:`COPY_ELEMENTS` floats (far larger than the caches).
    Each pass reads and writes every float once."""
    import jax
    import jax.numpy as jnp

    cpu = jax.devices("cpu")[0]
    a = jax.device_put(jnp.ones((MATMUL_N, MATMUL_N), jnp.float32), cpu)
    matmul = jax.jit(lambda x: x @ x).lower(a).compile()
    flops = 2.0 * MATMUL_N**3 / best_seconds(matmul, a)
    rates = []
    for elements, passes in ((CACHE_ELEMENTS, CACHE_PASSES), (COPY_ELEMENTS, 1)):
        x = jax.device_put(jnp.ones((elements,), jnp.float32), cpu)
        program = jax.jit(
            lambda v, n=passes: jax.lax.fori_loop(0, n, lambda _, y: y * 1.0001 + 1.0, v)
        )
        rates.append(2.0 * 4 * elements * passes / best_seconds(program.lower(x).compile(), x))
    return flops, rates[0], rates[1]


def best_seconds(program, arg) -> float:
    """The fastest of :data:`REPEATS` calls of ``program(arg)`` after a warm-up call."""
    program(arg).block_until_ready()  # warm: pages touched, threads started
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        program(arg).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return best


__all__ = [
    "GPU_PEAKS",
    "H100",
    "GpuSpec",
    "Peak",
    "cached",
    "cpu_peak",
    "device_peak",
    "gpu_spec",
]

"""An iteration's metrics packed into one row per dtype.

The scan plan keeps every iteration's metrics for the host to read at the chunk's end. Written
one buffer per metric, an iteration updates each buffer on its own, and XLA compiles each update
as a kernel of its own; packed, an iteration writes one row per dtype, the metrics of that dtype
raveled side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class MetricRows:
    """Where each metric sits in the rows of its dtype.

    ``shapes`` maps metric names to their shapes and dtypes (``jax.ShapeDtypeStruct``), as an
    iteration returns them. Each dtype gets a buffer ``[chunk, width]``; a metric of shape ``S``
    fills ``prod(S)`` consecutive columns of its dtype's buffer."""

    def __init__(self, shapes: Mapping[str, Any]):
        self.widths: dict[str, int] = {}
        self.columns: dict[str, tuple[str, int, tuple[int, ...]]] = {}  # dtype, start, shape
        for name, spec in shapes.items():
            dtype = jnp.dtype(spec.dtype).name
            start = self.widths.get(dtype, 0)
            self.columns[name] = (dtype, start, tuple(spec.shape))
            self.widths[dtype] = start + math.prod(spec.shape)

    def zeros(self, chunk: int) -> dict[str, jax.Array]:
        """Buffers for ``chunk`` iterations: one ``[chunk, width]`` array per dtype."""
        return {dtype: jnp.zeros((chunk, width), dtype) for dtype, width in self.widths.items()}

    def write(
        self, buffers: dict[str, jax.Array], i: jax.Array, metrics: Mapping[str, jax.Array]
    ) -> dict[str, jax.Array]:
        """``buffers`` with row ``i`` of each dtype holding ``metrics``."""
        rows: dict[str, list[jax.Array]] = {dtype: [] for dtype in self.widths}
        for name, (dtype, _, _) in self.columns.items():
            rows[dtype].append(jnp.ravel(metrics[name]))
        return {
            dtype: buffers[dtype].at[i].set(jnp.concatenate(row)) for dtype, row in rows.items()
        }

    def read(self, buffers: Mapping[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
        """The first ``n`` rows on the host, as ``{name: [n, *shape]}``."""
        return {
            name: buffers[dtype][:n, start : start + math.prod(shape)].reshape(n, *shape)
            for name, (dtype, start, shape) in self.columns.items()
        }

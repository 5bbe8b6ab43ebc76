"""The scan plan's metric rows: metrics of several dtypes and shapes packed into one row per
dtype per iteration, and read back as they were written."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.policies.metric_rows import MetricRows


def _metrics(i):
    return {
        "loss": jnp.float32(0.5 * i),
        "episodes": jnp.int32(i),
        "per_lane": jnp.arange(3, dtype=jnp.float32) + i,  # a replicated run's [lanes] metric
        "finite": jnp.bool_(i % 2 == 0),
        "grid": jnp.full((2, 2), i, jnp.int32),
    }


def test_rows_read_back_what_each_iteration_wrote():
    rows = MetricRows(jax.eval_shape(_metrics, 0))
    assert rows.widths == {"float32": 4, "int32": 5, "bool": 1}  # one buffer per dtype

    def chunk(n):
        def body(i, buffers):
            return rows.write(buffers, i, _metrics(i))

        return jax.lax.fori_loop(0, n, body, rows.zeros(5))

    buffers = jax.device_get(jax.jit(chunk)(3))
    read = rows.read(buffers, 3)  # the chunk ran 3 of its 5 rows
    assert sorted(read) == sorted(_metrics(0))
    for name, values in read.items():
        expected = np.stack([np.asarray(_metrics(i)[name]) for i in range(3)])
        assert values.dtype == expected.dtype, name
        np.testing.assert_array_equal(values, expected, err_msg=name)


def test_no_metrics_no_buffers():
    rows = MetricRows({})
    assert rows.zeros(4) == {} and rows.read({}, 4) == {}

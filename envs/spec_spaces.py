"""dm_env's and Jumanji's specs as this package's spaces, in one place, for
:mod:`~jaxrl_fdg.envs.timestep_adapter` and the suites built on it.

Specs are read by their attributes, not their classes, so dm_env's (``dm_env.specs``) and
Jumanji's (``jumanji.specs``) convert alike, and neither package is imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg.envs.spaces import Box, Dict, Discrete, MultiDiscrete, Space, Tuple


def spec_space(spec: Any, name: str = "environment") -> Space:
    """A dm_env or Jumanji spec as our space, read by attributes (so dm_env's and Jumanji's
    classes both convert): ``num_values`` a scalar: ``Discrete``; a vector of the spec's shape:
    ``MultiDiscrete``; ``minimum``/``maximum``: a ``Box`` of those bounds; a bare ``Array``: an
    unbounded ``Box`` (integers: their dtype's range); Jumanji's nested ``Spec`` and dicts: a
    ``Dict`` of their fields; tuples and lists: a ``Tuple``. Dtypes as JAX has them (64-bit
    ones narrowed unless x64 is enabled).

    Raises:
      ValueError: an object that is none of these.
    """
    nested = getattr(spec, "_specs", None)  # Jumanji's Spec: named fields of a NamedTuple
    if isinstance(nested, Mapping) and not hasattr(spec, "shape"):
        return Dict({k: spec_space(s, name) for k, s in nested.items()})
    if isinstance(spec, Mapping):
        return Dict({k: spec_space(s, name) for k, s in spec.items()})
    if isinstance(spec, tuple | list):
        if hasattr(spec, "_fields"):  # a NamedTuple of specs: its fields by name
            return Dict({k: spec_space(s, name) for k, s in spec._asdict().items()})
        return Tuple(tuple(spec_space(s, name) for s in spec))
    if not hasattr(spec, "shape") or not hasattr(spec, "dtype"):
        raise ValueError(f"{name}: cannot read a space from a {type(spec).__name__} spec")
    shape = tuple(int(d) for d in spec.shape)
    dtype = jax.dtypes.canonicalize_dtype(spec.dtype)
    num_values = getattr(spec, "num_values", None)
    if num_values is not None:
        values = np.asarray(num_values)
        if values.ndim == 0 and shape == ():
            return Discrete(int(values), dtype)
        if values.ndim == 1 and shape == values.shape:
            return MultiDiscrete(tuple(int(v) for v in values), dtype)
        return Box(jnp.zeros(shape, dtype), jnp.asarray(values - 1, dtype), shape, dtype)
    if hasattr(spec, "minimum") and hasattr(spec, "maximum"):
        low, high = (
            jnp.broadcast_to(jnp.asarray(b, dtype), shape) for b in (spec.minimum, spec.maximum)
        )
        return Box(low, high, shape, dtype)
    return unbounded_box(shape, dtype)


def unbounded_box(shape: tuple[int, ...], dtype: Any) -> Box:
    """A ``Box`` as wide as ``dtype``: infinite for floats, the dtype's range for integers."""
    dtype = jnp.dtype(dtype)
    if dtype == jnp.dtype(bool):
        return Box(jnp.asarray(False), jnp.asarray(True), shape, dtype)
    if jnp.issubdtype(dtype, jnp.integer):
        info = jnp.iinfo(dtype)
        return Box(jnp.asarray(info.min, dtype), jnp.asarray(info.max, dtype), shape, dtype)
    return Box(jnp.asarray(-jnp.inf, dtype), jnp.asarray(jnp.inf, dtype), shape, dtype)


def shape_space(observation: Any) -> Space:
    """Unbounded boxes of a traced observation's shapes (fields as a :class:`Dict`)."""
    fields = observation_fields(observation)
    if fields is not None:
        return Dict({k: shape_space(v) for k, v in fields.items()})
    if isinstance(observation, tuple | list):
        return Tuple(tuple(shape_space(v) for v in observation))
    return unbounded_box(tuple(observation.shape), observation.dtype)


def observation_fields(observation: Any) -> dict[str, Any] | None:
    """The named fields of an observation (a NamedTuple, a dataclass, a dict), or None for an
    array or a plain tuple."""
    if isinstance(observation, Mapping):
        return dict(observation)
    if isinstance(observation, tuple) and hasattr(observation, "_asdict"):
        return dict(observation._asdict())
    if dataclasses.is_dataclass(observation) and not isinstance(observation, type):
        return {f.name: getattr(observation, f.name) for f in dataclasses.fields(observation)}
    return None


def read_spec(env: Any, attribute: str) -> Any:
    """``env``'s spec by name: Jumanji's (cached) property, or dm_env's method called."""
    spec = getattr(env, attribute, None)
    return (
        spec()
        if callable(spec) and not hasattr(spec, "shape") and not hasattr(spec, "_specs")
        else spec
    )

"""Extending a fragment, a built-in's say, without copying it: more state beside its own, and
methods over both, while its ``apply``, ``publish`` and methods keep working on its own state.

    learner = algorithm.fragment("learner")
    learner = extend(learner, Method("auxiliary", aux, inputs=("aux_batch",), ...), init=aux_init)
    algorithm = algorithm.replace_fragment(learner)

The extended fragment's state is :class:`Extended` ``(base, extra)``: ``base`` is the state the
fragment had, initialised from the same key as before (so it starts from the same bits), and
``extra`` the extension's, from a key folded out of it. The added methods get the whole
:class:`Extended` state and return it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

from jaxrl_fdg.core.fragment import Fragment, Method, fragment
from jaxrl_fdg.core.types import ApplyFn, InitFn

_EXTRA_STREAM = 0x45585452  # folded into the fragment's key for the extension's state


class Extended(NamedTuple):
    """An extended fragment's state: its own (``base``) and the extension's (``extra``)."""

    base: Any
    extra: Any


def extend(frag: Fragment, *methods: Method, init: InitFn | None = None) -> Fragment:
    """``frag`` with ``methods`` added; with ``init`` (``key -> extra state``), its state becomes
    :class:`Extended` ``(base, extra)`` (see the module docstring); without, the added methods
    work on its own state as it is."""
    if init is None:
        return frag.with_methods(*methods)

    def init_extended(key: jax.Array) -> Extended:
        return Extended(frag.init(key), init(jax.random.fold_in(key, _EXTRA_STREAM)))

    def on_base(apply: ApplyFn) -> ApplyFn:
        def run(state: Extended, inputs: Any, key: jax.Array):
            base, outputs = apply(state.base, inputs, key)
            return state._replace(base=base), outputs

        return run

    own = tuple(m._replace(apply=on_base(m.apply)) for m in frag.methods)
    host = None if frag.host_apply is None else on_base(frag.host_apply)
    return fragment(
        frag.name,
        frag.role,
        on_base(frag.apply),
        init=init_extended,
        inputs=frag.inputs,
        outputs=frag.outputs,
        publish=lambda state: frag.publish(state.base),
        published=frag.published,
        site=frag.site,
        methods=(*own, *methods),
        cadence=frag.cadence,
        host_apply=host,
    )


__all__ = ["Extended", "extend"]

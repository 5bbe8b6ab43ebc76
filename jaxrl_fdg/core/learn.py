"""The learn body: the nodes after the rollout, interpreted over the graph state.

Each node's calls run in the order the graph gave them (:mod:`jaxrl_fdg.core.graph`):

* every iteration: once;
* rounds: ``count`` times in a ``lax.scan`` while the node's condition holds (a ``lax.cond``
  skips them otherwise), their metrics averaged over the rounds;
* every ``n`` iterations: a ``lax.cond`` on the iteration counter.

Keys: see :mod:`jaxrl_fdg.core.loop`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import jax
import jax.numpy as jnp

from jaxrl_fdg import branch, rng
from jaxrl_fdg.core.cadence import Every, Iteration, Rounds
from jaxrl_fdg.core.fragment import Fragment, call
from jaxrl_fdg.core.graph import METRICS, Call, Graph, Node
from jaxrl_fdg.core.names import RUNS, UPDATES  # <fragment>/runs: 1 where a periodic node ran
from jaxrl_fdg.core.types import Metrics
from jaxrl_fdg.errors import GraphError


class Graphed(Protocol):
    """What the learn body reads of the loop it runs in."""

    graph: Graph

    @property
    def learner(self) -> Fragment: ...
    def fragment(self, name: str) -> Fragment: ...
    def published_by(self, name: str, states: dict) -> dict[str, Any]: ...


class Learn:
    """The nodes after the rollout, run one after another over the graph state ``states``.

    An input is read, in turn, from what earlier calls of the node wrote (and what the
    every-iteration node wrote, for the nodes after it), from the loop's edges, and from the
    current state of the fragment that publishes it."""

    def __init__(self, loop: Graphed, states: dict, loop_edges: dict):
        self.loop, self.states, self.loop_edges = loop, dict(states), loop_edges
        self.carried: dict[str, Any] = {}  # outputs of the every-iteration node

    def node(self, node: Node, key: jax.Array, iteration: jax.Array) -> Metrics:
        if isinstance(node.cadence, Iteration):
            states, outputs, written = self.calls(node.calls, self.states, key)
            self.states = states
            self.carried = written
            return _metrics(outputs, self.loop.learner.name)
        if isinstance(node.cadence, Rounds):
            return self.rounds(node, key)
        if isinstance(node.cadence, Every):
            return self.every(node, key, iteration)
        raise GraphError(f"no loop for a node of cadence {node.cadence!r}")

    def edges(self, names: Sequence[str], states: Mapping, written: Mapping) -> dict[str, Any]:
        """The edges ``names`` as a call sees them (see the class docstring)."""
        edges = {}
        for name in names:
            if name in written:
                edges[name] = written[name]
            elif name in self.loop_edges:
                edges[name] = self.loop_edges[name]
            else:
                edges[name] = self.loop.published_by(self.loop.graph.publisher(name), states)[name]
        return edges

    def calls(self, calls: Sequence[Call], states: dict, key: jax.Array, keys=None):
        """``calls`` in order on ``states``; one key each from ``key`` (``key`` itself for one
        call), or from ``keys(call)`` where given. Returns ``(states, outputs by call label,
        edges written)``."""
        states, written, outputs = dict(states), dict(self.carried), {}
        if keys is None:
            split = [key] if len(calls) == 1 else list(rng.split(key, len(calls)))
            keys = dict(zip(calls, split, strict=True)).__getitem__
        for c in calls:
            frag = self.loop.fragment(c.fragment)
            inputs = self.edges(c.inputs, states, written)
            states[c.fragment], out = call(frag, states[c.fragment], inputs, keys(c), c.method)
            outputs[c.label] = out
            written.update({k: v for k, v in out.items() if k != METRICS})
        return states, outputs, written

    def rounds(self, node: Node, key: jax.Array) -> Metrics:
        """``count`` rounds of the node's calls while its condition holds. Metrics are means over
        the rounds (zeros, with ``updates = 0``, where the condition does not hold)."""
        cadence: Rounds = node.cadence
        members = sorted(node.fragments)
        applies = [c for c in node.calls if c.method == "apply"]
        outer = self.states

        def one_round(carry: dict, key: jax.Array):
            k_methods, k_apply = rng.split(key)
            split = [k_apply] if len(applies) == 1 else list(rng.split(k_apply, len(applies)))
            own = dict(zip(applies, split, strict=True))
            states, outputs, _ = self.calls(
                node.calls, {**outer, **carry}, key, lambda c: own.get(c, k_methods)
            )
            return {n: states[n] for n in members}, _metrics(outputs, self.loop.learner.name)

        keys = rng.split(key, cadence.count)
        round_states = {n: outer[n] for n in members}
        names = sorted(jax.eval_shape(one_round, round_states, keys[0])[1])

        def run(carry):
            # Metrics are summed in the carry (see fragments.minibatch for why not stacked).
            def body(inner, key):
                carry, sums = inner
                carry, metrics = one_round(carry, key)
                return (carry, sums + jnp.stack([metrics[k] for k in names])), None

            sums = jnp.zeros(len(names), jnp.float32)
            (carry, sums), _ = jax.lax.scan(body, (carry, sums), keys)
            return carry, sums / cadence.count

        def skip(carry):
            return carry, jnp.zeros(len(names), jnp.float32)

        if cadence.when is None:
            ready = jnp.bool_(True)
            round_states, means = run(round_states)
        else:
            ready = cadence.when.fn(self.edges(cadence.when.reads, outer, self.carried))
            round_states, means = branch.cond(ready, run, skip, round_states)
        self.states = {**outer, **round_states}
        metrics = {k: means[i] for i, k in enumerate(names)}
        # The primary learner's rounds are "updates"; others' are named after the call whose
        # cadence they are (a method of the learner's included).
        primary = any(c.label == self.loop.learner.name for c in node.calls)
        owner = node.owner or node.calls[0].label
        count = UPDATES if primary else f"{owner}/{UPDATES}"
        metrics[count] = jnp.where(ready, cadence.count, 0).astype(jnp.float32)
        return metrics

    def every(self, node: Node, key: jax.Array, iteration: jax.Array) -> Metrics:
        """The node's calls at the end of every ``n``-th iteration where its condition holds,
        skipped (a ``lax.cond``) otherwise. Its fragments' metrics are ``<fragment>/<metric>``
        (zeros where it did not run) with ``<fragment>/runs``, 1 where it ran: metric rows
        average over the iterations that ran (``jaxrl_fdg.run.metrics``)."""
        members = sorted(node.fragments)
        outer = self.states

        def run(sub: dict):
            states, outputs, _ = self.calls(node.calls, {**outer, **sub}, key)
            return {n: states[n] for n in members}, _metrics(outputs, None)

        sub = {n: outer[n] for n in members}
        shapes = jax.eval_shape(run, sub)[1]

        def skip(sub: dict):
            return sub, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        ran = (iteration + 1) % node.cadence.n == 0
        when = node.cadence.when
        if when is not None:
            ran = ran & when.fn(self.edges(when.reads, outer, self.carried))
        sub, metrics = branch.cond(ran, run, skip, sub)
        self.states = {**outer, **sub}
        for name in members:
            metrics[f"{name}/{RUNS}"] = ran.astype(jnp.float32)
        return metrics


def _metrics(outputs: dict[str, dict], learner: str | None) -> Metrics:
    """The primary learner's ``metrics`` output as it is, every other call's prefixed by its
    fragment's name."""
    metrics = dict(outputs.get(learner, {}).get(METRICS, {})) if learner else {}
    for label, out in outputs.items():
        if label != learner and METRICS in out:
            prefix = label.split(".")[0]
            metrics.update({f"{prefix}/{k}": v for k, v in out[METRICS].items()})
    return metrics

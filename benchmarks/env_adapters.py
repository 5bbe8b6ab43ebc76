"""What the JAX suites' adapters cost: env-steps/s of each adapter against the suite's own
environment with its own auto-reset, in one process, per number of parallel environments.

For every installed suite (``--suites``), two programs step the same environment with random
actions for ``--steps`` steps of ``num_envs`` environments, each one jitted ``lax.scan``:

- ``ours``: the adapter's :meth:`~jaxrl_fdg.envs.Environment.step_batch` (the env fragment's
  path: the base class's time limit and auto-reset, the adapter's mapping of time steps, masks
  and info), from ``envs.make(<prefix>/<id>)``;
- ``raw``: the suite's own environment under ``jax.vmap``, resetting finished episodes its own
  way: Craftax's ``auto_reset=True`` environment (gymnax's ``step``: a reset computed on every
  step, selected where done), XLand-MiniGrid's ``GymAutoResetWrapper`` (a ``lax.cond`` on the
  episode's end), Navix's ``step`` (which resets on the step after the end) and Jumanji's
  ``AutoResetWrapper`` (a ``lax.cond``).

Actions are drawn inside the scan, one batch-level draw per step, the same for both; each
program consumes the rewards and observations so that XLA keeps the simulation. Compile time is
measured apart (``*_compile_s``); runs are interleaved (ours, raw, ours, raw, ...) and each rate
is the median of ``--repeats``; ``ours_vs_raw`` is the ratio of the medians (above 1: the adapter
is faster, as it resets only the environments that finished).

    pip install "jaxrl-fdg[craftax,xminigrid,navix,jumanji]"
    python benchmarks/env_adapters.py                 # writes benchmarks/results/env_adapters.json
    python benchmarks/env_adapters.py --size smoke    # a few steps, to a temp file: does it run?
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).parent))

from cli_args import comma_list  # noqa: E402

from jaxrl_fdg import envs  # noqa: E402
from jaxrl_fdg.profiling import write_report  # noqa: E402

SUITES = {
    "craftax": "craftax/Craftax-Classic-Symbolic-v1",
    "xminigrid": "xminigrid/XLand-MiniGrid-R1-9x9",
    "navix": "navix/Navix-Empty-8x8-v0",
    "jumanji": "jumanji/Game2048-v1",
}
"""Each suite's package (what ``--suites`` names) and the environment measured."""

SIZES = {
    "smoke": {"num_envs": (2,), "steps": 4, "repeats": 1},
    "full": {"num_envs": (16, 256, 4096), "steps": 500, "repeats": 5},
}

# (key) -> batched state; (key, state, actions [B]) -> (state, a scalar consuming the step)
Reset = Callable[[jax.Array], Any]
Step = Callable[[jax.Array, Any, jax.Array], tuple[Any, jax.Array]]


def _consume(reward: jax.Array, observation: Any) -> jax.Array:
    """A scalar that reads the rewards and every observation leaf (XLA keeps what is read)."""
    leaves = [jnp.sum(x, dtype=jnp.float32) for x in jax.tree.leaves(observation)]
    return jnp.sum(reward, dtype=jnp.float32) + sum(leaves)


def ours(name: str, num_envs: int) -> tuple[Reset, Step, int]:
    """The adapter's batch entry points, and the number of actions."""
    env, params = envs.make(name)

    def reset(key):
        return env.reset_batch(key, num_envs, params)[0]

    def step(key, state, actions):
        state, ts = env.step_batch(key, state, actions, params)
        return state, _consume(ts.reward, ts.observation)

    return reset, step, env.action_space(params).n


def raw(suite: str, name: str, num_envs: int) -> tuple[Reset, Step]:
    """The suite's own environment, vmapped, with its own auto-reset."""
    env, params = envs.make(name)

    def keys(key):
        return jax.random.split(key, num_envs)

    if suite == "craftax":
        from craftax.craftax_env import make_craftax_env_from_name

        own, p = make_craftax_env_from_name(env.env_id, auto_reset=True), params.gymnax

        def reset(key):
            return jax.vmap(own.reset, in_axes=(0, None))(keys(key), p)[1]

        def step(key, state, actions):
            obs, state, reward, _, _ = jax.vmap(own.step, in_axes=(0, 0, 0, None))(
                keys(key), state, actions, p
            )
            return state, _consume(reward, obs)

    elif suite == "xminigrid":
        from xminigrid.wrappers import GymAutoResetWrapper

        own, p = GymAutoResetWrapper(env.xland_env), params.xland

        def reset(key):
            return jax.vmap(own.reset, in_axes=(None, 0))(p, keys(key))

        def step(key, timestep, actions):
            timestep = jax.vmap(own.step, in_axes=(None, 0, 0))(p, timestep, actions)
            return timestep, _consume(timestep.reward, timestep.observation)

    elif suite == "navix":
        own = env.navix_env

        def reset(key):
            return jax.vmap(own.reset)(keys(key))

        def step(key, timestep, actions):
            timestep = jax.vmap(own.step)(timestep, actions)
            return timestep, _consume(timestep.reward, timestep.observation)

    elif suite == "jumanji":
        from jumanji.wrappers import AutoResetWrapper

        own = AutoResetWrapper(env.wrapped)

        def reset(key):
            return jax.vmap(own.reset)(keys(key))

        def step(key, carry, actions):
            state, timestep = jax.vmap(own.step)(carry[0], actions)
            return (state, timestep), _consume(timestep.reward, timestep.observation)

    else:
        raise ValueError(f"no raw environment for suite {suite!r}; valid: {', '.join(SUITES)}")
    return reset, step


def compile_scan(
    reset: Reset, step: Step, num_actions: int, num_envs: int, steps: int
) -> tuple[Callable[[jax.Array], jax.Array], float]:
    """``steps`` random steps of ``num_envs`` environments in one jitted scan, compiled: the
    program and its compile seconds."""

    def run(key):
        k_reset, k_run = jax.random.split(key)

        def body(state, key):
            k_act, k_step = jax.random.split(key)
            actions = jax.random.randint(k_act, (num_envs,), 0, num_actions, jnp.int32)
            return step(k_step, state, actions)

        return jax.lax.scan(body, reset(k_reset), jax.random.split(k_run, steps))[1].sum()

    key = jax.random.key(0)
    start = time.perf_counter()
    compiled = jax.jit(run).lower(key).compile()
    compile_s = time.perf_counter() - start
    compiled(key).block_until_ready()  # a first run, untimed
    return compiled, compile_s


def measure(suite: str, name: str, num_envs: int, steps: int, repeats: int) -> dict[str, float]:
    """Both programs compiled, then timed interleaved: rates, compile seconds, the ratio."""
    ours_reset, ours_step, num_actions = ours(name, num_envs)
    raw_reset, raw_step = raw(suite, name, num_envs)
    programs = {
        "ours": compile_scan(ours_reset, ours_step, num_actions, num_envs, steps),
        "raw": compile_scan(raw_reset, raw_step, num_actions, num_envs, steps),
    }
    times: dict[str, list[float]] = {label: [] for label in programs}
    key = jax.random.key(1)
    for _ in range(repeats):
        for label, (compiled, _) in programs.items():
            start = time.perf_counter()
            compiled(key).block_until_ready()
            times[label].append(time.perf_counter() - start)
    row: dict[str, float] = {}
    for label, (_, compile_s) in programs.items():
        row[label] = steps * num_envs / statistics.median(times[label])
        row[f"{label}_compile_s"] = compile_s
    row["ours_vs_raw"] = row["ours"] / row["raw"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=tuple(SIZES), default="full")
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated")
    parser.add_argument("--num-envs", type=int, nargs="+", help="default: the size's")
    parser.add_argument("--steps", type=int, help="scan length (default: the size's)")
    parser.add_argument("--repeats", type=int, help="timed runs per figure (default: the size's)")
    parser.add_argument(
        "--out", help="results file (default: results/env_adapters.json; smoke: a temp file)"
    )
    args = parser.parse_args()
    size = SIZES[args.size]
    num_envs = args.num_envs or size["num_envs"]
    steps, repeats = args.steps or size["steps"], args.repeats or size["repeats"]
    out = args.out or (
        str(Path(tempfile.gettempdir()) / "env_adapters-smoke.json")
        if args.size == "smoke"
        else str(Path(__file__).parent / "results" / "env_adapters.json")
    )
    suites = comma_list(parser, "--suites", args.suites, SUITES)
    results: dict[str, dict] = {}
    skipped = {}
    for suite in suites:
        if importlib.util.find_spec(suite) is None:
            skipped[suite] = f'not installed: pip install "jaxrl-fdg[{suite}]"'
            print(f"{suite}: {skipped[suite]}", flush=True)
            continue
        rows = {}
        for n in num_envs:
            row = measure(suite, SUITES[suite], n, steps, repeats)
            rows[str(n)] = row
            print(
                f"{SUITES[suite]:>36} × {n:>5}: ours {row['ours']:>12,.0f}  "
                f"raw {row['raw']:>12,.0f} env-steps/s (ours/raw {row['ours_vs_raw']:.2f}); "
                f"compile {row['ours_compile_s']:.1f} s / {row['raw_compile_s']:.1f} s",
                flush=True,
            )
        results[suite] = {"env": SUITES[suite], "by_num_envs": rows}
    config = {
        "size": args.size,
        "num_envs": list(num_envs),
        "steps": steps,
        "repeats": repeats,
        "suites": suites,
    }
    write_report(out, "env_adapters", config, results, skipped=skipped)


if __name__ == "__main__":
    main()

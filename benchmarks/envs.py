"""Env-only steps/s (random actions), per environment and number of parallel envs, in one run.

Every JAX measurement is one jitted ``lax.scan`` over ``--steps`` steps of ``num_envs``
environments (auto-reset included); compile time is excluded (each program is compiled and run
once before timing) and reported apart. Each figure is the median of ``--repeats`` timed runs.

Columns:

- ``ours``: :meth:`Environment.step_batch` (what the env fragment runs: one key per step for the
  whole batch), with the random actions drawn inside the scan, one batch-level draw per step.
- ``gymnax``: gymnax's ``step`` under ``jax.vmap`` over per-environment keys (gymnax's own way
  to vectorise), actions drawn the same way as for ``ours``.
- ``ours_pregenerated``, ``gymnax_pregenerated``: the same, replaying actions generated before the
  timed region (scanned over as inputs), like the gymnasium loops below: environment cost only.
- ``ours_vmap_pregenerated``: our single-environment ``step`` under ``jax.vmap`` over split keys,
  as gymnax is used, with pre-generated actions: what the batch entry point saves.
- ``gymnasium_sync``: gymnasium's ``SyncVectorEnv`` (a Python loop over single environments).
- ``gymnasium_numpy``: gymnasium's numpy-vectorized version where it has one
  (``make_vec(..., vectorization_mode="vector_entry_point")``).

The gymnasium loops replay 64 pre-sampled action batches in turn.

    pip install gymnax six     # the comparison; not dependencies of jaxrl-fdg
    python benchmarks/envs.py  # writes benchmarks/results/envs.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from jaxrl_fdg import envs
from jaxrl_fdg.profiling import write_report

ENVS = (
    "CartPole-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Pendulum-v1",
    "Catch-bsuite",
)
GYMNAX = {name: name for name in ENVS}
GYMNASIUM = ENVS[:-1]  # Catch is bsuite's, not gymnasium's

# (key, state, action) -> (state, a scalar that consumes reward and observation)
StepFn = Callable[[jax.Array, object, jax.Array], tuple[object, jax.Array]]


def _action_sampler(space: envs.Space, num_envs: int) -> Callable[[jax.Array], jax.Array]:
    """A batch of uniformly random actions from one key: one draw for the whole batch."""
    if isinstance(space, envs.Discrete):
        return lambda key: jax.random.randint(key, (num_envs,), 0, space.n, space.dtype)
    low = jnp.broadcast_to(jnp.asarray(space.low, space.dtype), space.shape)
    high = jnp.broadcast_to(jnp.asarray(space.high, space.dtype), space.shape)
    return lambda key: jax.random.uniform(key, (num_envs, *space.shape), space.dtype, low, high)


def _median_time(compiled: Callable, *args, repeats: int) -> float:
    compiled(*args).block_until_ready()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        compiled(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _scan_steps_per_s(
    reset: Callable[[jax.Array], object],
    step: StepFn,
    sample: Callable[[jax.Array], jax.Array],
    num_envs: int,
    steps: int,
    repeats: int,
    pregenerated: bool,
) -> tuple[float, float]:
    """Steps/s of ``steps`` × ``num_envs`` random steps in one scan, and the compile seconds.

    With ``pregenerated``, the actions of every step are drawn before the timed call and scanned
    over; otherwise each step draws its own inside the scan.
    """

    def run(key, actions):
        k_reset, k_run = jax.random.split(key)
        state = reset(k_reset)

        def body(state, inputs):
            key, actions = inputs
            if actions is None:
                k_act, key = jax.random.split(key)
                actions = sample(k_act)
            state, consumed = step(key, state, actions)
            # Consume the observation too: CartPole's reward is constant, and XLA would otherwise
            # delete the whole simulation as dead code.
            return state, consumed

        return jax.lax.scan(body, state, (jax.random.split(k_run, steps), actions))[1].sum()

    key = jax.random.key(0)
    actions = jax.vmap(sample)(jax.random.split(jax.random.key(1), steps)) if pregenerated else None
    start = time.perf_counter()
    compiled = jax.jit(run).lower(key, actions).compile()
    compile_s = time.perf_counter() - start
    elapsed = _median_time(compiled, key, actions, repeats=repeats)
    return steps * num_envs / elapsed, compile_s


def ours(
    name: str, num_envs: int, steps: int, repeats: int, pregenerated: bool, per_env: bool = False
):
    """Our environment: ``step_batch`` (one key per step), or with ``per_env`` the
    single-environment ``step`` vmapped over keys split per environment."""
    env, params = envs.make(name)
    step_each = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def step(key, state, actions):
        if per_env:
            state, ts = step_each(jax.random.split(key, num_envs), state, actions, params)
        else:
            state, ts = env.step_batch(key, state, actions, params)
        return state, ts.reward.sum() + ts.observation.sum()

    return _scan_steps_per_s(
        lambda key: env.reset_batch(key, num_envs, params)[0],
        step,
        _action_sampler(env.action_space(params), num_envs),
        num_envs,
        steps,
        repeats,
        pregenerated,
    )


def gymnax_env(name: str, num_envs: int, steps: int, repeats: int, pregenerated: bool):
    import gymnax

    env, params = gymnax.make(GYMNAX[name])
    reset_each = jax.vmap(env.reset, in_axes=(0, None))
    step_each = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def step(key, state, actions):
        out = step_each(jax.random.split(key, num_envs), state, actions, params)
        return out[1], out[2].sum() + out[0].sum()

    ours_env, ours_params = envs.make(name)  # the same action space, for the same sampler
    return _scan_steps_per_s(
        lambda key: reset_each(jax.random.split(key, num_envs), params)[1],
        step,
        _action_sampler(ours_env.action_space(ours_params), num_envs),
        num_envs,
        steps,
        repeats,
        pregenerated,
    )


def gymnasium_env(name: str, num_envs: int, steps: int, mode: str, repeats: int) -> float:
    import gymnasium as gym

    vec = gym.make_vec(name, num_envs=num_envs, vectorization_mode=mode)
    vec.reset(seed=0)
    vec.action_space.seed(0)
    actions = [vec.action_space.sample() for _ in range(min(steps, 64))]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(steps):
            vec.step(actions[i % len(actions)])
        times.append(time.perf_counter() - start)
    vec.close()
    return steps * num_envs / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", default="1,64,1024,4096")
    parser.add_argument("--steps", type=int, default=1000, help="scan length for JAX envs")
    parser.add_argument("--python-steps", type=int, default=200, help="steps for gymnasium")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure (median)")
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--no-gymnax", action="store_true")
    parser.add_argument("--no-gymnasium", action="store_true")
    parser.add_argument(
        "--python-max-envs",
        type=int,
        default=None,
        help="largest num_envs the gymnasium loops run at (default: every size)",
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "envs.json"))
    args = parser.parse_args()
    sizes = [int(n) for n in args.num_envs.split(",")]
    timing = {"steps": args.steps, "repeats": args.repeats}

    results: dict[str, dict] = {}
    for name in args.envs.split(","):
        rows = {}
        for n in sizes:
            row = {}
            for label, pregenerated in (("", False), ("_pregenerated", True)):
                row[f"ours{label}"], row[f"ours{label}_compile_s"] = ours(
                    name, n, pregenerated=pregenerated, **timing
                )
                if not args.no_gymnax and name in GYMNAX:
                    row[f"gymnax{label}"], row[f"gymnax{label}_compile_s"] = gymnax_env(
                        name, n, pregenerated=pregenerated, **timing
                    )
            row["ours_vmap_pregenerated"], row["ours_vmap_pregenerated_compile_s"] = ours(
                name, n, pregenerated=True, per_env=True, **timing
            )
            python_size = args.python_max_envs is None or n <= args.python_max_envs
            if name in GYMNASIUM and not args.no_gymnasium and python_size:
                # Python-loop vector envs at 4096 would take minutes for little information.
                steps = args.python_steps if n <= 1024 else max(10, args.python_steps // 10)
                row["gymnasium_sync"] = gymnasium_env(name, n, steps, "sync", args.repeats)
                try:
                    row["gymnasium_numpy"] = gymnasium_env(
                        name, n, steps, "vector_entry_point", args.repeats
                    )
                except Exception:  # gymnasium has no numpy-vectorized version of this env
                    pass
            rows[str(n)] = row
            cells = "  ".join(f"{k} {v:,.0f}" for k, v in row.items() if not k.endswith("_s"))
            print(f"{name:>26} × {n:>5}: {cells}", flush=True)
        results[name] = rows

    write_report(
        args.out,
        "envs",
        {
            "num_envs": sizes,
            "steps": args.steps,
            "python_steps": args.python_steps,
            "repeats": args.repeats,
        },
        results,
    )


if __name__ == "__main__":
    main()

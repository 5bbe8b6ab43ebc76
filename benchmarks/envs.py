"""Env-only steps/s (random actions), per environment and number of parallel envs, in one run.

Ours: ``jax.vmap`` of ``env.step`` inside one jitted ``lax.scan`` (auto-reset included), the
same for gymnax where it has the environment. gymnasium: ``SyncVectorEnv`` (a Python loop over
single environments) and, where gymnasium has one, its numpy-vectorized version
(``make_vec(..., vectorization_mode="vector_entry_point")``). Compile time is excluded (each jitted
scan is run once before timing) and reported apart.

    pip install gymnax six     # the comparison; not dependencies of jaxrl-fdg
    python benchmarks/envs.py  # writes benchmarks/results/envs.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax

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


def _scan_steps_per_s(reset, step, sample, num_envs: int, steps: int) -> tuple[float, float]:
    """Steps/s of ``steps`` × ``num_envs`` random steps in one scan, and the compile seconds."""

    def run(key):
        k_reset, k_run = jax.random.split(key)
        state = jax.vmap(reset)(jax.random.split(k_reset, num_envs))

        def body(state, key):
            k_act, k_step = jax.random.split(key)
            actions = jax.vmap(sample)(jax.random.split(k_act, num_envs))
            state, out = jax.vmap(step)(jax.random.split(k_step, num_envs), state, actions)
            # Consume the observation too: CartPole's reward is constant, and XLA would otherwise
            # delete the whole simulation as dead code.
            return state, out.sum()

        return jax.lax.scan(body, state, jax.random.split(k_run, steps))[1].sum()

    key = jax.random.key(0)
    start = time.perf_counter()
    compiled = jax.jit(run).lower(key).compile()
    compile_s = time.perf_counter() - start
    compiled(key).block_until_ready()
    start = time.perf_counter()
    compiled(key).block_until_ready()
    return steps * num_envs / (time.perf_counter() - start), compile_s


def ours(name: str, num_envs: int, steps: int) -> tuple[float, float]:
    env, params = envs.make(name)
    space = env.action_space(params)
    return _scan_steps_per_s(
        lambda k: env.reset(k, params)[0],
        lambda k, s, a: (lambda out: (out[0], out[1].reward + out[1].observation.sum()))(
            env.step(k, s, a, params)
        ),
        space.sample,
        num_envs,
        steps,
    )


def gymnax_env(name: str, num_envs: int, steps: int) -> tuple[float, float]:
    import gymnax

    env, params = gymnax.make(GYMNAX[name])
    space = env.action_space(params)
    return _scan_steps_per_s(
        lambda k: env.reset(k, params)[1],
        lambda k, s, a: (lambda out: (out[1], out[2] + out[0].sum()))(env.step(k, s, a, params)),
        space.sample,
        num_envs,
        steps,
    )


def gymnasium_env(name: str, num_envs: int, steps: int, mode: str) -> float:
    import gymnasium as gym

    vec = gym.make_vec(name, num_envs=num_envs, vectorization_mode=mode)
    vec.reset(seed=0)
    vec.action_space.seed(0)
    actions = [vec.action_space.sample() for _ in range(min(steps, 64))]
    start = time.perf_counter()
    for i in range(steps):
        vec.step(actions[i % len(actions)])
    elapsed = time.perf_counter() - start
    vec.close()
    return steps * num_envs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", default="1,64,1024,4096")
    parser.add_argument("--steps", type=int, default=1000, help="scan length for JAX envs")
    parser.add_argument("--python-steps", type=int, default=200, help="steps for gymnasium")
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--no-gymnax", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "envs.json"))
    args = parser.parse_args()
    sizes = [int(n) for n in args.num_envs.split(",")]

    results: dict[str, dict] = {}
    for name in args.envs.split(","):
        rows = {}
        for n in sizes:
            row = {}
            row["ours"], row["ours_compile_s"] = ours(name, n, args.steps)
            if not args.no_gymnax and name in GYMNAX:
                row["gymnax"], row["gymnax_compile_s"] = gymnax_env(name, n, args.steps)
            if name in GYMNASIUM:
                # Python-loop vector envs at 4096 would take minutes for little information.
                steps = args.python_steps if n <= 1024 else max(10, args.python_steps // 10)
                row["gymnasium_sync"] = gymnasium_env(name, n, steps, "sync")
                try:
                    row["gymnasium_numpy"] = gymnasium_env(name, n, steps, "vector_entry_point")
                except Exception:  # gymnasium has no numpy-vectorized version of this env
                    pass
            rows[str(n)] = row
            cells = "  ".join(f"{k} {v:,.0f}" for k, v in row.items() if not k.endswith("_s"))
            print(f"{name:>26} × {n:>5}: {cells}", flush=True)
        results[name] = rows

    write_report(
        args.out,
        "envs",
        {"num_envs": sizes, "steps": args.steps, "python_steps": args.python_steps},
        results,
    )


if __name__ == "__main__":
    main()

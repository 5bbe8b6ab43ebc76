"""Env-steps/s of a Brax environment alone: ours (``brax/<name>``) against Brax's training wrappers.

    python benchmarks/brax_env_step.py                       # inverted_pendulum, 256 envs
    python benchmarks/brax_env_step.py --num-envs 1024 --rounds 5

Both sides step the same MJX environment ``--steps`` times in one jitted ``lax.scan``, with
uniform random actions in [-1, 1] drawn inside the scan, and restart finished episodes from each
environment's first state: Brax through ``brax.envs.training.wrap`` (its ``VmapWrapper``,
``EpisodeWrapper`` and ``AutoResetWrapper``), ours through ``step_batch`` with
``auto_reset="first_state"`` (time limit, episode flags and the restart in ``envs/base.py``).
No policy and no learner: this isolates what the simulator step costs on each side, the part of
``benchmarks/brax_training.py``'s rates that the adapter owns. Both programs are compiled first,
then timed in interleaved rounds (Brax, ours, Brax, ours, ...); figures are medians of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import jax


def brax_program(name: str, num_envs: int, steps: int):
    from brax import envs
    from brax.envs import training

    env = training.wrap(
        envs.get_environment(name, backend="mjx"), episode_length=1000, action_repeat=1
    )
    state = jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), num_envs))

    def run(state, key):
        def body(s, k):
            a = jax.random.uniform(k, (num_envs, env.action_size), minval=-1.0, maxval=1.0)
            s = env.step(s, a)
            return s, s.reward

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    return run, state


def our_program(name: str, num_envs: int, steps: int):
    from jaxrl_fdg.envs.brax_adapter import make_brax

    env = make_brax(name, auto_reset="first_state")
    params = env.default_params
    state, _ = jax.jit(lambda k: env.reset_batch(k, num_envs, params))(jax.random.key(0))

    def run(state, key):
        def body(s, k):
            k_action, k_step = jax.random.split(k)
            a = jax.random.uniform(k_action, (num_envs, env.action_size), minval=-1.0, maxval=1.0)
            s, ts = env.step_batch(k_step, s, a, params)
            return s, ts.reward

        return jax.lax.scan(body, state, jax.random.split(key, steps))

    return run, state


def compiled(program, state, key):
    start = time.perf_counter()
    fn = jax.jit(program).lower(state, key).compile()
    seconds = time.perf_counter() - start
    state, _ = jax.block_until_ready(fn(state, key))  # warm up: the first call allocates
    return fn, state, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="inverted_pendulum", help="a Brax environment name")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=16, help="env steps per call (scan length)")
    parser.add_argument("--calls", type=int, default=20, help="calls timed per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "brax_env_step.json")
    )
    args = parser.parse_args()

    from jaxrl_fdg.profiling import write_report

    sides = {}
    for side, build in (("brax", brax_program), ("ours", our_program)):
        program, state = build(args.env, args.num_envs, args.steps)
        fn, state, compile_s = compiled(program, state, jax.random.key(1))
        sides[side] = {"fn": fn, "state": state, "compile_s": compile_s, "run_s": []}
    per_call = args.num_envs * args.steps
    for r in range(args.rounds):
        for s in sides.values():
            keys = jax.random.split(jax.random.key(100 + r), args.calls)
            state = s["state"]
            start = time.perf_counter()
            for key in keys:
                state, rewards = s["fn"](state, key)
            jax.block_until_ready((state, rewards))
            s["run_s"].append(time.perf_counter() - start)
            s["state"] = state
    results = {}
    for side, s in sides.items():
        run_s = statistics.median(s["run_s"])
        results[side] = {
            "compile_s": s["compile_s"],
            "run_s": run_s,
            "run_s_all": s["run_s"],
            "env_steps": per_call * args.calls,
            "steps_per_s": per_call * args.calls / run_s,
            "us_per_env_step": run_s / (per_call * args.calls) * 1e6,
        }
    ratio = results["ours"]["steps_per_s"] / results["brax"]["steps_per_s"]
    results["ours_vs_brax"] = ratio
    print("| side | compile s | env-steps/s | µs per env-step |")
    print("|---|---:|---:|---:|")
    for side in ("brax", "ours"):
        r = results[side]
        print(
            f"| {side} | {r['compile_s']:.1f} | {r['steps_per_s']:,.0f} "
            f"| {r['us_per_env_step']:.2f} |"
        )
    print(f"ours / brax = {ratio:.3f}")
    write_report(
        args.out,
        "brax_env_step",
        {
            "env": args.env,
            "num_envs": args.num_envs,
            "steps": args.steps,
            "calls": args.calls,
            "rounds": args.rounds,
            "auto_reset": "first_state",
            "actions": "uniform [-1, 1]",
        },
        results,
    )


if __name__ == "__main__":
    main()

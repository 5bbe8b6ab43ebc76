"""What an env-step of our PPO rollout costs on Brax's inverted_pendulum before and after learning.

    python benchmarks/brax_rollout_cost.py                 # results/brax_rollout_cost.json
    python benchmarks/brax_rollout_cost.py --iterations 60 --rounds 9

MJX's physics does not cost the same at every state. Its constraint solver (Newton, up to
``opt.iterations = 100`` iterations, each with a line search of ``opt.ls_iterations = 50`` steps
that ``vmap`` turns into selects, so every one of the 50 runs) iterates until the batch's slowest
environment has converged: one iteration while no constraint is active, more once a cart runs
into the end of its rail. So a policy that learns to push the cart around makes each env-step
dearer than a fresh policy does, with the same program.

This benchmark shows it with one compiled rollout program (the rollout of ``--fusion fragment``:
``benchmarks/brax_training.py``'s PPO at its cpu size, 256 environments, 16 steps, first-state
restarts). It trains ``--iterations`` PPO iterations, keeps the loop state before and after, then
times the same rollout program from each state in interleaved rounds (before, after, before, ...;
each round ``--calls`` rollouts continuing from the kept state). It records µs per env-step, the
share of steps with the cart within 5% of its rail ends, and steps per finished episode; and,
for scale, the learn phase (its program called on one rollout's trajectory, each call waited for)
per env-step that rollout collected.

The same is done for a contrast variant whose environment runs its solver with one Newton
iteration and a one-step line search (``--env-option solver_iterations=1 --env-option
ls_iterations=1``: less exact physics, for this measurement only). If the extra cost after
learning is the solver's, it disappears there.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).parent))

import brax_training  # noqa: E402  (the PPO configuration, shared)

SOLVERS = {"default": None, "one_iteration": 1}


def build(solver_iterations: int | None, seed: int):
    """The PPO loop (its rollout and learn compiled apart) and its first state."""
    from jaxrl_fdg.config import resolve
    from jaxrl_fdg.run.build import build_loop

    setup = dict(brax_training.SETUPS["cpu"], auto_reset="first_state")
    config = brax_training.ppo_config(setup, seed)
    if solver_iterations is not None:
        solver = dict(solver_iterations=solver_iterations, ls_iterations=solver_iterations)
        config = config.replace(env_options={**config.env_options, **solver})
    loop = build_loop(resolve(config))
    state = jax.jit(loop.init)(jax.random.key(seed))
    rollout = jax.jit(loop.rollout).lower(state).compile()
    state_r, trajectory, key = rollout(state)
    learn = jax.jit(loop.learn).lower(state_r, trajectory, key).compile()
    return rollout, learn, state


def train(rollout, learn, state, iterations: int):
    for _ in range(iterations):
        state, trajectory, key = rollout(state)
        state, _ = learn(state, trajectory, key)
    return jax.block_until_ready(state)


def timed_rollouts(rollout, state, calls: int) -> tuple[float, float, int, int]:
    """Seconds for ``calls`` rollouts from ``state``; the rail-end share; steps; episodes."""
    trajectories = []
    start = time.perf_counter()
    for _ in range(calls):
        state, trajectory, _ = rollout(state)
        trajectories.append(trajectory)
    jax.block_until_ready((state, trajectories))
    seconds = time.perf_counter() - start
    cart = jnp.stack([t.observation[..., 0] for t in trajectories])
    ends = sum(int(jnp.sum(t.terminated | t.truncated)) for t in trajectories)
    return seconds, float(jnp.mean(jnp.abs(cart) > 0.95)), cart.size, ends


def timed_learns(learn, inputs: tuple, calls: int) -> float:
    """Seconds for ``calls`` learn phases on the same rollout's ``inputs``, each waited for."""
    start = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(learn(*inputs))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40, help="PPO iterations to learn")
    parser.add_argument("--calls", type=int, default=10, help="rollouts timed per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "brax_rollout_cost.json")
    )
    args = parser.parse_args()

    from jaxrl_fdg.profiling import write_report

    cases, learners = {}, {}
    for solver, iterations in SOLVERS.items():
        rollout, learn, first = build(iterations, args.seed)
        learned = train(rollout, learn, first, args.iterations)
        for when, state in (("before", first), ("after", learned)):
            jax.block_until_ready(rollout(state))  # warm up
            cases[(solver, when)] = {"rollout": rollout, "state": state, "rounds": []}
        inputs = rollout(learned)
        jax.block_until_ready(learn(*inputs))
        learners[solver] = {"learn": learn, "inputs": inputs, "rounds": []}
    for _ in range(args.rounds):
        for case in cases.values():
            case["rounds"].append(timed_rollouts(case["rollout"], case["state"], args.calls))
        for learner in learners.values():
            learner["rounds"].append(timed_learns(learner["learn"], learner["inputs"], args.calls))

    steps = next(iter(cases.values()))["rounds"][0][2]  # env-steps timed per case per round
    results: dict = {}
    print("| solver | policy | µs per env-step | cart at a rail end | steps per episode |")
    print("|---|---|---:|---:|---:|")
    for (solver, when), case in cases.items():
        seconds = [r[0] for r in case["rounds"]]
        episodes = sum(r[3] for r in case["rounds"])
        figures = {
            "us_per_env_step": statistics.median(seconds) / steps * 1e6,
            "us_per_env_step_all": [s / steps * 1e6 for s in seconds],
            "cart_at_rail_end": statistics.mean(r[1] for r in case["rounds"]),
            "steps_per_episode": steps * len(seconds) / max(episodes, 1),
        }
        results.setdefault(solver, {})[when] = figures
        print(
            f"| {solver} | {when} learning | {figures['us_per_env_step']:.2f} "
            f"| {figures['cart_at_rail_end']:.1%} | {figures['steps_per_episode']:.1f} |"
        )
    for solver, by_when in results.items():
        by_when["after_over_before"] = (
            by_when["after"]["us_per_env_step"] / by_when["before"]["us_per_env_step"]
        )
        by_when["learn_us_per_env_step"] = (
            statistics.median(learners[solver]["rounds"]) / steps * 1e6
        )
        print(
            f"{solver}: after / before = {by_when['after_over_before']:.2f}; the learn phase "
            f"{by_when['learn_us_per_env_step']:.2f} µs per env-step collected"
        )
    config = dict(
        env=f"brax/{brax_training.ENV}",
        setup="cpu",
        iterations=args.iterations,
        calls=args.calls,
        rounds=args.rounds,
        seed=args.seed,
        solvers={k: v or "the environment's" for k, v in SOLVERS.items()},
    )
    write_report(args.out, "brax_rollout_cost", config, results)


if __name__ == "__main__":
    main()

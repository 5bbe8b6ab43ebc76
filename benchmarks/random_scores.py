"""The return of the uniform random policy on each environment of the shipped experiment suites:
the ``random`` column of their normalisation tables (``jaxrl_fdg/experiment/suites.py``).

Each environment runs ``--envs`` copies under one ``jax.lax.scan`` with actions drawn uniformly
from its action space, until at least ``--episodes`` episodes have ended; the score is the mean
return of the first ``--episodes`` of them (with its standard error).

    python benchmarks/random_scores.py              # writes results/random_scores.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl_fdg import envs
from jaxrl_fdg.experiment import suites
from jaxrl_fdg.profiling import write_report

RESULTS = Path(__file__).parent / "results"


def random_return(name: str, episodes: int, num_envs: int, seed: int = 0) -> dict:
    env, params = envs.make(name)
    space = env.action_space(params)
    steps = 1024

    @jax.jit
    def chunk(carry, key):
        def body(carry, key):
            state, totals = carry
            act_key, step_key = jax.random.split(key)
            actions = jax.vmap(space.sample)(jax.random.split(act_key, num_envs))
            state, ts = env.step_batch(step_key, state, actions, params)
            totals = totals + ts.reward
            done = ts.terminated | ts.truncated
            return (state, jnp.where(done, 0.0, totals)), (done, totals)

        return jax.lax.scan(body, carry, jax.random.split(key, steps))

    key = jax.random.key(seed)
    state, _ = env.reset_batch(key, num_envs, params)
    carry = (state, jnp.zeros(num_envs))
    finished: list[np.ndarray] = []
    while sum(len(f) for f in finished) < episodes:
        key, sub = jax.random.split(key)
        carry, (done, totals) = chunk(carry, sub)
        done, totals = np.asarray(done), np.asarray(totals)
        finished.append(totals[done])
    scores = np.concatenate(finished)[:episodes]
    return {
        "mean": float(scores.mean()),
        "stderr": float(scores.std(ddof=1) / np.sqrt(len(scores))),
        "episodes": int(len(scores)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--suites", nargs="+", default=list(suites.SUITES))
    parser.add_argument("--out", default=str(RESULTS / "random_scores.json"))
    args = parser.parse_args()
    results = {}
    for suite in args.suites:
        for env in suites.SUITES[suite].envs:
            results[env] = random_return(env, args.episodes, args.envs)
            print(f"{env}: {results[env]['mean']:.3f} ± {results[env]['stderr']:.3f}")
    config = {"episodes": args.episodes, "envs": args.envs, "suites": args.suites}
    write_report(args.out, "random_scores", config, results)


if __name__ == "__main__":
    main()

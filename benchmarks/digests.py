"""Digests of what training computes, to compare two versions of the code bit for bit.

Trains every registered algorithm for 3 tiny iterations under each compiled fusion mode, with 2
vmapped seeds, with policy lag 1, under data_parallel (vmap backend) and in a sweep, and hashes
each run's final fragment states, key and metrics. Run it on two checkouts and compare the files:

    python benchmarks/digests.py --out before.json      # on the old code
    python benchmarks/digests.py --out after.json       # on the new code
    python benchmarks/digests.py --compare before.json after.json

The redesign of 2026-11 (docs/decisions.md) changed none of the 40 digests.
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path

import jax
import numpy as np

import jaxrl_fdg as rl

_OFF_POLICY = {"learning_starts": 16, "batch_size": 8, "buffer_size": 64, "utd_ratio": 0.125}
TINY = {
    "ppo": dict(hparams={"num_minibatches": 2, "update_epochs": 2}),
    "a2c": dict(),
    "dqn": dict(hparams={**_OFF_POLICY, "hidden_sizes": (16,), "n_step": 3}),
    "c51": dict(
        hparams={**_OFF_POLICY, "hidden_sizes": (16,), "num_atoms": 11, "replay": "prioritized"}
    ),
    "sac": dict(env="Pendulum-v1", hparams=_OFF_POLICY),
    "td3": dict(env="Pendulum-v1", hparams={**_OFF_POLICY, "replay": "prioritized"}),
    "ddpg": dict(env="Pendulum-v1", hparams=_OFF_POLICY),
}
BASE = rl.TrainConfig(
    total_steps=2 * 8 * 3,
    num_envs=2,
    rollout_len=8,
    out=None,
    progress=False,
    log_every=2,
    profile="off",
    compile_cache=False,
)


def digest(tree) -> str:
    h = hashlib.sha256()
    for x in jax.tree.leaves(tree):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        h.update(np.asarray(x).tobytes())
    return h.hexdigest()[:16]


def run(config: rl.TrainConfig) -> dict[str, str]:
    result = rl.train(config)
    out = {name: digest(state) for name, state in sorted(result.state.fragments.items())}
    out["key"] = digest(result.state.key)
    out["metrics"] = digest([result.metrics[k] for k in sorted(result.metrics)])
    return out


def configurations():
    for algo, extra in TINY.items():
        base = BASE.replace(algo=algo, **extra)
        for mode in ("step", "fragment", "iteration", "scan"):
            yield f"{algo}/{mode}", base.replace(fusion=mode)
        yield f"{algo}/scan/seeds2", base.replace(num_seeds=2)
        yield f"{algo}/scan/lag1", base.replace(policy_lag=1)
        if algo in ("ppo", "dqn", "ddpg"):
            dp = dict(placement="data_parallel", devices=2, dp_backend="vmap")
            yield f"{algo}/scan/dpvmap", base.replace(**dp)
    sweep = {"num_minibatches": 2, "update_epochs": 2, "lr": "1e-3,3e-4"}
    yield "ppo/scan/sweep", BASE.replace(hparams=sweep)


def compare(a: Path, b: Path) -> int:
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    differ = sorted(k for k in before if before[k] != after.get(k))
    print(f"{len(before)} runs compared, {len(differ)} differ{': ' if differ else ''}", end="")
    print(", ".join(differ))
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where to write the digests (JSON)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("--out or --compare is required")
    results = {}
    for name, config in configurations():
        results[name] = run(config)
        print(name, flush=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

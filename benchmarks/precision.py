"""Do results change with the matmul precision? Short PPO and SAC runs at two precisions.

Each run is trained twice in one process from the same seed: first at JAX's default matmul
precision, then with ``jax_default_matmul_precision = "highest"`` set globally (the setting is
part of every program's cache key, so the second run compiles its own programs; it is global,
not a thread-local context, because the runner compiles on worker threads). Recorded per
algorithm: the largest absolute and relative difference of the final learner parameters, and
both runs' final returns.

On NVIDIA Ampere and later, XLA runs float32 matmuls at the default precision on TF32 tensor
cores (a 10-bit mantissa), so the two runs can drift apart; on a CPU the default is full float32
and they should agree exactly or nearly. Either way the figures are recorded, not asserted: a
short RL run amplifies any rounding difference, so what matters is whether the returns agree.

``precision_in_force`` says what the default is here: the config value, the device, and a
measured test of TF32 (the relative error of a 256 x 256 float32 matmul against float64, at the
default precision and at "highest": about 1e-3 under TF32, about 1e-6 in full float32).

    python benchmarks/precision.py --out /tmp/precision.json
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import cli_args
import jax
import jax.numpy as jnp
import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg.profiling import write_report

RUNS = {
    "ppo": dict(env="CartPole-v1", num_envs=4, rollout_len=128),
    "sac": dict(env="Pendulum-v1", num_envs=4, rollout_len=8),
}
TF32_REL_ERROR = 1e-4  # between TF32's ~1e-3 and float32's ~1e-6


def matmul_rel_error(precision: str | None) -> float:
    """Relative error (Frobenius) of a float32 matmul at ``precision``, against float64."""
    a, b = np.random.default_rng(0).standard_normal((2, 256, 256))
    exact = a @ b
    got = jax.jit(lambda x, y: jnp.matmul(x, y, precision=precision))(
        jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
    )
    return float(np.linalg.norm(np.asarray(got, np.float64) - exact) / np.linalg.norm(exact))


def precision_in_force() -> dict:
    """The default matmul precision here, and whether float32 matmuls run as TF32."""
    device = jax.devices()[0]
    default_error = matmul_rel_error(None)
    highest_error = matmul_rel_error("highest")
    capability = getattr(device, "compute_capability", None)
    return {
        "jax_default_matmul_precision": jax.config.jax_default_matmul_precision,
        "platform": device.platform,
        "device_kind": device.device_kind,
        "compute_capability": None if capability is None else str(capability),
        "matmul_rel_error_default": default_error,
        "matmul_rel_error_highest": highest_error,
        "tf32_measured": default_error > TF32_REL_ERROR,
        "NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE"),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS"),
    }


def train_once(
    algo: str, total_steps: int, seed: int, learning_starts: int | None = None
) -> tuple[list[np.ndarray], float | None]:
    """The final learner parameters (flattened leaves) and final return of one short run (``None``
    when no episode ended)."""
    setting = RUNS[algo]
    hparams = {}
    if algo == "sac":  # by default from the first iteration on, so the short run does update
        hparams["learning_starts"] = learning_starts or _iteration(algo)
    config = rl.TrainConfig(
        algo=algo, total_steps=total_steps, seed=seed, out=None, progress=False, hparams=hparams,
        **setting,
    )  # fmt: skip
    result = rl.train(config)
    learner = result.state.fragments["learner"]
    params = getattr(learner, "params", learner)
    leaves = [np.asarray(x, np.float64) for x in jax.tree.leaves(params)]
    final = result.summary["final_return"]
    return leaves, None if final is None or math.isnan(final) else float(final)


def _iteration(algo: str) -> int:
    """Env steps per iteration of ``algo``'s run."""
    return RUNS[algo]["num_envs"] * RUNS[algo]["rollout_len"]


def compare(default: tuple, highest: tuple) -> dict:
    """``max_abs_diff`` = max |a − b| over every parameter; ``max_rel_diff`` = max over
    parameters of |a − b| / max(|a|, |b|, 1e-6); the returns and their difference."""
    (p_default, r_default), (p_highest, r_highest) = default, highest
    abs_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(p_default, p_highest, strict=True))
    rel_diff = max(
        float(np.max(np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-6)))
        for a, b in zip(p_default, p_highest, strict=True)
    )
    returns = r_default is not None and r_highest is not None
    return_diff = abs(r_default - r_highest) if returns else None
    return {
        "max_abs_diff": abs_diff,
        "max_rel_diff": rel_diff,
        "identical": abs_diff == 0.0,
        "final_return_default": r_default,
        "final_return_highest": r_highest,
        "final_return_abs_diff": return_diff,
        "final_return_rel_diff": return_diff / max(abs(r_highest), 1e-6) if returns else None,
        "num_params": int(sum(a.size for a in p_default)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ppo-steps", type=int, default=51_200, help="PPO on CartPole-v1")
    parser.add_argument(
        "--sac-steps", type=int, default=5_000, help="SAC on Pendulum-v1 (≥ 800: an episode ends)"
    )
    parser.add_argument(
        "--sac-learning-starts", type=int, default=None, help="default: after one iteration"
    )
    parser.add_argument("--algos", default=",".join(RUNS), help=f"of {', '.join(RUNS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "precision.json"))
    args = parser.parse_args()
    algos = cli_args.comma_list(parser, "--algos", args.algos, RUNS)
    steps = {"ppo": args.ppo_steps, "sac": args.sac_steps}
    starts = {"sac": args.sac_learning_starts}

    in_force = precision_in_force()
    default = {algo: train_once(algo, steps[algo], args.seed, starts.get(algo)) for algo in algos}
    previous = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", "highest")
    try:
        highest = {
            algo: train_once(algo, steps[algo], args.seed, starts.get(algo)) for algo in algos
        }
    finally:
        jax.config.update("jax_default_matmul_precision", previous)
    results = {algo: compare(default[algo], highest[algo]) for algo in algos}
    write_report(
        args.out,
        "precision",
        {
            "runs": {algo: RUNS[algo] for algo in algos},
            "total_steps": steps,
            "sac_learning_starts": args.sac_learning_starts or _iteration("sac"),
            "seed": args.seed,
            "compared": ["default", "highest"],
        },
        results,
        precision_in_force=in_force,
    )
    print(
        f"default precision {in_force['jax_default_matmul_precision']}; TF32 measured: "
        f"{in_force['tf32_measured']} (matmul error {in_force['matmul_rel_error_default']:.1e})"
    )
    for algo, r in results.items():
        print(
            f"{algo}: max |Δθ| {r['max_abs_diff']:.2e}, max rel {r['max_rel_diff']:.2e}; final "
            f"return {r['final_return_default']} (default) vs {r['final_return_highest']} (highest)"
        )


if __name__ == "__main__":
    main()

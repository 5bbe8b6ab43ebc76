"""Multi-agent runs beside JaxMARL's own baseline scripts, like for like.

JaxMARL's algorithms are single-file scripts in its repository, not in the ``jaxmarl`` package;
``--jaxmarl-dir`` names a checkout of that repository, and nothing of it is copied here. Without
it the benchmark says so and exits 0, recording nothing. Pairs (:data:`PAIRS`):

* ``ippo_mpe``: their ``baselines/IPPO/ippo_ff_mpe.py`` at its configuration
  (``config/ippo_ff_mpe.yaml``) against ``--algo ippo``, whose defaults are that configuration:
  16 games of ``MPE_simple_spread_v3`` × 128 steps, 4 epochs of 4 minibatches, tanh 64 × 64.
* ``vdn_mpe``: their ``baselines/QLearning/pqn_vdn_ff.py`` at ``config/alg/pqn_vdn_ff_mpe.yaml``
  against ``--algo pqn-vdn`` (256 games × 16 steps, γ = 0.9, λ = 0.3), with their greedy test
  episodes during training off (``TEST_DURING_TRAINING``), as ours plays none.

Each side trains in a fresh process of its own, one after the other (theirs first), its seeds
vmapped in one program, with JAX's persistent compilation cache off:

* **theirs**: their script imported from the checkout, with stand-ins for ``hydra`` (its
  ``main`` decorator returns the function) and ``wandb`` (``log`` does nothing), which their
  ``make_train`` calls through ``io_callback`` each update as it does with ``WANDB_MODE:
  disabled``. Their configuration is their YAML file with ``TOTAL_TIMESTEPS`` set to the size's
  budget; ``jax.jit(jax.vmap(make_train(config)))`` is lowered and compiled ahead of time on the
  seeds' keys (``compile_s``), then called and waited on (``run_s``).
* **ours**: ``jaxrl_fdg.train`` at the algorithm's defaults with ``num_seeds`` lanes, the same
  budget, ``fusion="scan"`` and its default host boundaries (about 25 over a run; the metrics
  of every iteration come back at each); ``compile_s`` and ``run_s`` are the run's summary's.

Reported per side: compile and run seconds, env-steps/s after compile (games' steps, all seeds),
each seed's final return (the mean over its last tenth of updates of the return each side
logs, updates in which no episode ended left out; an agent's return, averaged over the team:
theirs as their MPE logger records it, which multiplies each reward by the number of agents,
divided by that number) and their mean with a 95% bootstrap interval over seeds.
``ours_vs_theirs`` above 1: ours is faster.

    git -C <a clone of FLAIROx/JaxMARL> archive HEAD baselines | tar -x -C /tmp/jaxmarl
    python benchmarks/jaxmarl_baselines.py --jaxmarl-dir /tmp/jaxmarl --size quick  # a check
    python benchmarks/jaxmarl_baselines.py --jaxmarl-dir /tmp/jaxmarl --size cpu \
        --jaxmarl-commit "$(git -C <the clone> rev-parse HEAD)"
                                         # writes benchmarks/results/jaxmarl_baselines.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAIRS = {
    "ippo_mpe": dict(
        script="baselines/IPPO/ippo_ff_mpe.py",
        config=("baselines/IPPO/config/ippo_ff_mpe.yaml",),
        algo="ippo",
        steps_per_iteration=16 * 128,
        agents=3,
    ),
    "vdn_mpe": dict(
        script="baselines/QLearning/pqn_vdn_ff.py",
        config=(
            "baselines/QLearning/config/config.yaml",
            "baselines/QLearning/config/alg/pqn_vdn_ff_mpe.yaml",
        ),
        algo="pqn-vdn",
        steps_per_iteration=256 * 16,
        agents=3,
    ),
}
# Budgets in iterations of each pair's own size (by pair), seeds vmapped in one program on each
# side. cpu: 1,024,000 game steps per seed for IPPO, 614,400 for VDN.
SIZES = {
    "quick": dict(iterations={"ippo_mpe": 4, "vdn_mpe": 4}, seeds=1),
    "cpu": dict(iterations={"ippo_mpe": 500, "vdn_mpe": 150}, seeds=3),
}
TIMEOUT_S = 3600

THEIRS = r"""
import json, sys, time, types
import jax, yaml

script, configs = sys.argv[1], json.loads(sys.argv[2])
steps, seeds = int(sys.argv[3]), int(sys.argv[4])
hydra = types.ModuleType("hydra")
hydra.main = lambda *a, **k: (lambda f: f)
wandb = types.ModuleType("wandb")
records = []
wandb.log = lambda metrics, *a, **k: records.append(jax.device_get(metrics))
wandb.init = lambda *a, **k: None
sys.modules["hydra"], sys.modules["wandb"] = hydra, wandb
config = yaml.safe_load(open(configs[0]))
if len(configs) > 1:  # Hydra's composition: the main file, then the algorithm's under "alg"
    config = {**config, **yaml.safe_load(open(configs[1]))}
config.pop("defaults", None)
config.update(TOTAL_TIMESTEPS=steps, WANDB_MODE="disabled", NUM_SEEDS=seeds)
config["TEST_DURING_TRAINING"] = False  # greedy test episodes: ours plays none during training
sys.path.insert(0, str(__import__("pathlib").Path(script).parent))
import importlib.util
spec = importlib.util.spec_from_file_location("theirs", script)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
keys = jax.random.split(jax.random.PRNGKey(0), seeds)
start = time.perf_counter()
if hasattr(module, "env_from_config"):  # the Q-learning scripts build their environment first
    import copy
    # They return no metrics: each seed's reach the logger alone (one callback per update).
    config.update(WANDB_MODE="online", WANDB_LOG_ALL_SEEDS=True)
    made = module.make_train(config, module.env_from_config(copy.deepcopy(config))[0])
else:
    made = module.make_train(config)
train = jax.jit(jax.vmap(made)).lower(keys).compile()
compile_s = time.perf_counter() - start
start = time.perf_counter()
out = jax.block_until_ready(train(keys))
run_s = time.perf_counter() - start
metrics = out["metrics"]
if metrics is not None:  # [seeds, updates, ...]: the mean over steps and agents per update
    returns = jax.device_get(metrics["returned_episode_returns"])
    returns = returns.reshape(seeds, returns.shape[1], -1).mean(-1).tolist()
else:  # the logger's records, each seed's under rng<seed>/, in the order of their updates
    by_seed = {}
    for r in records:
        for key, value in r.items():
            if key.startswith("rng") and key.endswith("/returned_episode_returns"):
                step = r[key.split("/")[0] + "/update_steps"]
                value = None if value != value else float(value)  # NaN: no episode ended
                by_seed.setdefault(key.split("/")[0], []).append((int(step), value))
    returns = [[v for _, v in sorted(rows)] for _, rows in sorted(by_seed.items())]
print("RESULT", json.dumps({"compile_s": compile_s, "run_s": run_s, "returns": returns}))
"""

OURS = r"""
import json, sys
import numpy as np
import jaxrl_fdg as rl

algo, steps, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
result = rl.train(rl.TrainConfig(
    algo=algo, total_steps=steps, num_seeds=seeds, out=None, progress=False, profile="host",
    compile_cache=False,
))
m = result.metrics
episodes = np.asarray(m["episodes"])
returns = np.asarray(m["episode_return_sum"]) / np.maximum(episodes, 1)
returns = np.where(episodes > 0, returns, np.nan)  # an iteration in which no episode ended
returns = returns.reshape(returns.shape[0], -1).T  # [seeds, iterations]
returns = [[None if np.isnan(v) else float(v) for v in seed] for seed in returns]
summary = result.summary
print("RESULT", json.dumps({"compile_s": summary["compile_s"], "run_s": summary["run_s"],
                            "returns": returns}))
"""


def _run(argv: list[str], cwd: Path | None = None) -> dict:
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{' '.join(argv[:3])} failed:\n{proc.stderr[-3000:]}")


def _side(raw: dict, steps: int, seeds: int, scale: float = 1.0) -> dict:
    """One side's figures; its returns multiplied by ``scale`` first."""
    from jaxrl_fdg import stats

    scaled = [[None if v is None else scale * v for v in c] for c in raw["returns"] or []]
    raw = {**raw, "returns": scaled}
    side = {"compile_s": raw["compile_s"], "run_s": raw["run_s"]}
    side["steps_per_s_all_seeds"] = steps * seeds / raw["run_s"]
    finals = []
    for curve in raw["returns"]:
        # The last tenth of the updates, less those in which no episode ended (None).
        tail = [v for v in curve[-max(1, len(curve) // 10) :] if v is not None]
        finals.append(float(sum(tail) / len(tail)))
    side["final_return_per_seed"] = finals
    side["final_return_mean"] = (
        stats.interval_estimates([finals], ("mean",))["mean"]._asdict() if finals else None
    )
    side["returns"] = raw["returns"]
    return side


def measure(pair: str, jaxmarl_dir: Path, size: str, seeds: int) -> dict:
    spec = PAIRS[pair]
    steps = SIZES[size]["iterations"][pair] * spec["steps_per_iteration"]
    script = jaxmarl_dir / spec["script"]
    configs = [str(jaxmarl_dir / c) for c in spec["config"]]
    print(f"{pair}: theirs ({spec['script']}), {steps:,} env steps x {seeds} seeds", flush=True)
    theirs = _run(
        [sys.executable, "-c", THEIRS, str(script), json.dumps(configs), str(steps), str(seeds)],
        cwd=script.parent,
    )
    print(f"{pair}: ours (--algo {spec['algo']})", flush=True)
    ours = _run([sys.executable, "-c", OURS, spec["algo"], str(steps), str(seeds)])
    # Their MPE logger multiplies each reward by the number of agents (MPELogWrapper): theirs
    # divided by it, both are an agent's return, averaged over the team.
    per_agent = 1.0 / spec["agents"]
    result = {
        "theirs": _side(theirs, steps, seeds, per_agent),
        "ours": _side(ours, steps, seeds),
    }
    result["ours_vs_theirs"] = (
        result["ours"]["steps_per_s_all_seeds"] / result["theirs"]["steps_per_s_all_seeds"]
    )
    result["env_steps_per_seed"] = steps
    return result


def _commit(path: Path) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return proc.stdout.strip() or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jaxmarl-dir", type=Path, help="a checkout of FLAIROx/JaxMARL")
    parser.add_argument("--size", choices=tuple(SIZES), default="quick")
    parser.add_argument("--seeds", type=int, help="replaces the size's seed count")
    parser.add_argument("--pairs", default=",".join(PAIRS), help=f"of {', '.join(PAIRS)}")
    parser.add_argument("--out", type=Path, help="results file (default: by size)")
    parser.add_argument("--jaxmarl-commit", help="the checkout's commit, where it has no .git")
    args = parser.parse_args()
    if args.jaxmarl_dir is None:
        print("no --jaxmarl-dir: JaxMARL's baseline scripts are needed; nothing measured")
        return
    pairs = [p for p in args.pairs.split(",") if p]
    unknown = [p for p in pairs if p not in PAIRS]
    if unknown:
        parser.error(f"unknown pair {unknown[0]!r} (valid: {', '.join(PAIRS)})")
    seeds = args.seeds or SIZES[args.size]["seeds"]
    results = {p: measure(p, args.jaxmarl_dir, args.size, seeds) for p in pairs}
    for name, r in results.items():
        ours, theirs = r["ours"], r["theirs"]
        print(
            f"{name}: ours {ours['steps_per_s_all_seeds']:,.0f} env-steps/s, theirs "
            f"{theirs['steps_per_s_all_seeds']:,.0f} ({r['ours_vs_theirs']:.2f}x); final "
            f"return ours {ours['final_return_mean']}, theirs {theirs['final_return_mean']}"
        )
    sys.path.insert(0, str(ROOT))
    from jaxrl_fdg.profiling import write_report

    out = args.out
    if out is None:
        out = RESULTS / "jaxmarl_baselines.json"
        if args.size == "quick":
            out = Path(tempfile.mkdtemp()) / "jaxmarl_baselines.json"
    config = {
        "size": args.size,
        "seeds": seeds,
        "pairs": {p: PAIRS[p] for p in pairs},
        "jaxmarl": {"commit": args.jaxmarl_commit or _commit(args.jaxmarl_dir)},
    }
    write_report(str(out), "jaxmarl_baselines", config, results)


if __name__ == "__main__":
    main()

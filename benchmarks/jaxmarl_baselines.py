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
* ``mappo_smax``: their ``baselines/MAPPO/mappo_rnn_smax.py`` at
  ``config/mappo_homogenous_rnn_smax.yaml`` (recurrent MAPPO on SMAX's 2s3z against the
  heuristic enemy: 128 games × 128 steps, 128-unit GRUs) against ``--algo mappo`` with
  ``examples/configs/mappo-smax-2s3z.toml``, which is that configuration. Their script returns
  no metrics; its logger's records give each update's return and win rate (a vmapped
  ``io_callback`` calls it once per seed, in the seeds' order).
* ``qmix_smax``: their ``baselines/QLearning/qmix_rnn.py`` at ``config/alg/ql_rnn_smax.yaml``
  against ``--algo qmix`` with ``examples/configs/qmix-smax-3m-jaxmarl.toml``, which is that
  configuration, both sides' agents at 64 units (theirs: 512, hours on a 2-core CPU) on 3m
  (``theirs_overrides``). Its logger's records, each seed's under ``rng<seed>/``, give each
  update's return and win rate.

The SMAX pairs run one seed a side (``ONE_SEED`` below says why).

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
on SMAX each seed's final win rate (the fraction of the games that ended that the team won, as
below), each seed's final return (the mean over its last tenth of updates of the return each side
logs, updates in which no episode ended left out; an agent's return, averaged over the team:
theirs as their MPE logger records it, which multiplies each reward by the number of agents,
divided by that number) and their mean with a 95% bootstrap interval over seeds.
``ours_vs_theirs`` above 1: ours is faster.

    pip install distrax omegaconf flashbax    # what their scripts import (hydra, wandb stubbed)
    git -C <a clone of FLAIROx/JaxMARL> archive HEAD baselines | tar -x -C /tmp/jaxmarl
    python benchmarks/jaxmarl_baselines.py --jaxmarl-dir /tmp/jaxmarl --size quick  # a check
    python benchmarks/jaxmarl_baselines.py --jaxmarl-dir /tmp/jaxmarl --size cpu \
        --jaxmarl-commit "$(git -C <the clone> rev-parse HEAD)"
                  # writes benchmarks/results/jaxmarl_baselines.json (the MPE pairs),
                  # jaxmarl_baselines_mappo_smax.json and jaxmarl_baselines_qmix_smax.json
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
    "mappo_smax": dict(
        script="baselines/MAPPO/mappo_rnn_smax.py",
        config=("baselines/MAPPO/config/mappo_homogenous_rnn_smax.yaml",),
        algo="mappo",
        ours_config="examples/configs/mappo-smax-2s3z.toml",
        steps_per_iteration=128 * 128,
        agents=5,
        per_agent_returns=True,
        results="jaxmarl_baselines_mappo_smax.json",
        seeds=1,  # see ONE_SEED
    ),
    "qmix_smax": dict(
        script="baselines/QLearning/qmix_rnn.py",
        config=(
            "baselines/QLearning/config/config.yaml",
            "baselines/QLearning/config/alg/ql_rnn_smax.yaml",
        ),
        # Both sides at 64 units (theirs: 512, hours here) on 3m (theirs: 3s_vs_5z).
        theirs_overrides={"HIDDEN_SIZE": 64, "MAP_NAME": "3m"},
        algo="qmix",
        ours_config="examples/configs/qmix-smax-3m-jaxmarl.toml",
        steps_per_iteration=16 * 128,
        agents=3,
        per_agent_returns=True,
        results="jaxmarl_baselines_qmix_smax.json",
        seeds=1,  # see ONE_SEED
    ),
}
# Budgets in iterations of each pair's own size (by pair), seeds vmapped in one program on each
# side. cpu: 1,024,000 game steps per seed for IPPO, 614,400 for VDN, 262,144 for MAPPO and
# 524,288 for QMIX (one seed: ONE_SEED).
SIZES = {
    "quick": dict(
        iterations={"ippo_mpe": 4, "vdn_mpe": 4, "mappo_smax": 2, "qmix_smax": 8}, seeds=1
    ),
    "cpu": dict(
        iterations={"ippo_mpe": 500, "vdn_mpe": 150, "mappo_smax": 16, "qmix_smax": 256}, seeds=3
    ),
}
TIMEOUT_S = 3600
# ONE_SEED: the SMAX pairs run one seed a side: with their seeds vmapped, JaxMARL's scripts never
# finish on a 2-core CPU. XLA:CPU runs a batch of QR factorisations (flax's orthogonal initializers
# under the vmap) by splitting it over its thread pool and waiting from inside that pool; with 2
# threads both end up waiting (seen in gdb: two tf_XLAEigen threads in lapack_sgeqrf_ffi's
# ParallelBatchMap, the main thread in BlockUntilReady, no CPU used). This project's own
# initializer runs such QRs one after another for that reason (fragments.layers.orthogonal).

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
config.update(json.loads(sys.argv[5]))  # the pair's shared settings where they differ from theirs
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
metrics = out.get("metrics")
wins = None
if metrics is not None:  # [seeds, updates, ...]: the mean over steps and agents per update
    returns = jax.device_get(metrics["returned_episode_returns"])
    returns = returns.reshape(seeds, returns.shape[1], -1).mean(-1).tolist()
elif records and "win_rate" in records[0]:  # the SMAX scripts' logger, one record per seed
    # A vmapped io_callback calls the logger once per seed, in the seeds' order, each update.
    def curve(key, seed):
        values = [float(r[key]) for r in records[seed::seeds]]
        return [None if v != v else v for v in values]  # NaN: no game ended in that update
    returns = [curve("returns", s) for s in range(seeds)]
    wins = [curve("win_rate", s) for s in range(seeds)]
else:  # the logger's records, each seed's under rng<seed>/, in the order of their updates
    def by_seed(name):
        rows = {}
        for r in records:
            for key, value in r.items():
                if key.startswith("rng") and key.endswith("/" + name):
                    step = r[key.split("/")[0] + "/update_steps"]
                    value = None if value != value else float(value)  # NaN: no episode ended
                    rows.setdefault(key.split("/")[0], []).append((int(step), value))
        return [[v for _, v in sorted(seed)] for _, seed in sorted(rows.items())] or None
    returns = by_seed("returned_episode_returns")
    wins = by_seed("returned_won_episode")  # SMAX's logger: the last game's, held
print("RESULT", json.dumps(
    {"compile_s": compile_s, "run_s": run_s, "returns": returns, "win_rates": wins}
))
"""

OURS = r"""
import json, sys
import numpy as np
import jaxrl_fdg as rl
from jaxrl_fdg.config import files

algo, steps, seeds, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
base = files.from_mapping(files.load(path), path) if path else rl.TrainConfig(algo=algo)
result = rl.train(base.replace(
    total_steps=steps, num_seeds=seeds, out=None, progress=False, profile="host",
    compile_cache=False,
))
m = result.metrics
episodes = np.asarray(m["episodes"])  # games that ended in each iteration


def curve(total):  # [iterations(, seeds)] sums over the games that ended -> [seeds, iterations]
    mean = np.where(episodes > 0, np.asarray(total) / np.maximum(episodes, 1), np.nan)
    mean = mean.reshape(mean.shape[0], -1).T
    return [[None if np.isnan(v) else float(v) for v in seed] for seed in mean]


summary = result.summary
print("RESULT", json.dumps({
    "compile_s": summary["compile_s"], "run_s": summary["run_s"],
    "returns": curve(m["episode_return_sum"]),
    "win_rates": curve(m["info_sum/won"]) if "info_sum/won" in m else None,
}))
"""


def _run(argv: list[str], cwd: Path | None = None) -> dict:
    env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{' '.join(argv[:3])} failed:\n{proc.stderr[-3000:]}")


def _final(curves: list[list[float | None]]) -> dict:
    """Each seed's final value (the mean over the last tenth of its updates, less those in
    which no episode ended) and their mean with a 95% bootstrap interval over seeds."""
    from jaxrl_fdg import stats

    finals = []
    for curve in curves:
        tail = [v for v in curve[-max(1, len(curve) // 10) :] if v is not None]
        finals.append(float(sum(tail) / len(tail)) if tail else float("nan"))
    interval = stats.interval_estimates([finals], ("mean",))["mean"]._asdict() if finals else None
    return {"per_seed": finals, "mean": interval}


def _side(raw: dict, steps: int, seeds: int, scale: float = 1.0) -> dict:
    """One side's figures; its returns multiplied by ``scale`` first."""
    scaled = [[None if v is None else scale * v for v in c] for c in raw["returns"] or []]
    side = {"compile_s": raw["compile_s"], "run_s": raw["run_s"]}
    side["steps_per_s_all_seeds"] = steps * seeds / raw["run_s"]
    final = _final(scaled)
    side["final_return_per_seed"], side["final_return_mean"] = final["per_seed"], final["mean"]
    side["returns"] = scaled
    if raw.get("win_rates"):
        final = _final(raw["win_rates"])
        side["final_win_rate_per_seed"] = final["per_seed"]
        side["final_win_rate_mean"] = final["mean"]
        side["win_rates"] = raw["win_rates"]
    return side


def measure(pair: str, jaxmarl_dir: Path, size: str, seeds: int) -> dict:
    spec = PAIRS[pair]
    steps = SIZES[size]["iterations"][pair] * spec["steps_per_iteration"]
    script = jaxmarl_dir / spec["script"]
    configs = [str(jaxmarl_dir / c) for c in spec["config"]]
    print(f"{pair}: theirs ({spec['script']}), {steps:,} env steps x {seeds} seeds", flush=True)
    overrides = json.dumps(spec.get("theirs_overrides", {}))
    theirs = _run(
        [sys.executable, "-c", THEIRS, str(script), json.dumps(configs), str(steps), str(seeds)]
        + [overrides],
        cwd=script.parent,
    )
    print(f"{pair}: ours (--algo {spec['algo']})", flush=True)
    ours_config = str(ROOT / spec["ours_config"]) if "ours_config" in spec else ""
    ours = _run([sys.executable, "-c", OURS, spec["algo"], str(steps), str(seeds), ours_config])
    # Their MPE logger multiplies each reward by the number of agents (MPELogWrapper): theirs
    # divided by it, both are an agent's return, averaged over the team. Their SMAX logger
    # records an agent's own return already (per_agent_returns).
    per_agent = 1.0 if spec.get("per_agent_returns") else 1.0 / spec["agents"]
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
    # The MPE pairs and the SMAX pairs each have a results file (a docs section) of their own.
    files: dict[str, list[str]] = {}
    for pair in pairs:
        files.setdefault(PAIRS[pair].get("results", "jaxmarl_baselines.json"), []).append(pair)
    if args.out is not None and len(files) > 1:
        parser.error(
            f"--out names one results file, and {', '.join(pairs)} go to {len(files)} "
            f"({', '.join(files)}): run them apart"
        )
    seeds = args.seeds or SIZES[args.size]["seeds"]
    # A pair's own count (the SMAX pairs': ONE_SEED) unless --seeds names one.
    seeds_of = {p: args.seeds or PAIRS[p].get("seeds", seeds) for p in pairs}
    results = {p: measure(p, args.jaxmarl_dir, args.size, seeds_of[p]) for p in pairs}
    for name, r in results.items():
        ours, theirs = r["ours"], r["theirs"]
        print(
            f"{name}: ours {ours['steps_per_s_all_seeds']:,.0f} env-steps/s, theirs "
            f"{theirs['steps_per_s_all_seeds']:,.0f} ({r['ours_vs_theirs']:.2f}x); final "
            f"return ours {ours['final_return_mean']}, theirs {theirs['final_return_mean']}"
        )
    sys.path.insert(0, str(ROOT))
    from jaxrl_fdg.profiling import write_report

    commit = args.jaxmarl_commit or _commit(args.jaxmarl_dir)
    for name, group in files.items():
        out = args.out or RESULTS / name
        if args.out is None and args.size == "quick":
            out = Path(tempfile.mkdtemp()) / name
        config = {
            "size": args.size,
            "seeds": seeds_of[group[0]],
            "pairs": {p: PAIRS[p] for p in group},
            "jaxmarl": {"commit": commit},
        }
        write_report(str(out), "jaxmarl_baselines", config, {p: results[p] for p in group})


if __name__ == "__main__":
    main()

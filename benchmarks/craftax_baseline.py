"""PPO on Craftax-Classic-Symbolic-v1, ours against Craftax's own baseline script, like for like.

Craftax's baseline repository (Craftax_Baselines, ``ppo.py``) is run from a checkout of it that
``--baseline-dir`` names; nothing of it is copied here. Without ``--baseline-dir`` the benchmark
says so and exits 0, recording nothing. Each side trains in a fresh process of its own, one after
the other (theirs first), its seeds vmapped in one program:

* **theirs**: their ``ppo.py`` imported from the checkout in a subprocess (so that its
  ``sys.path``, jax settings and modules stay apart from ours), with a stand-in ``wandb`` module
  put into ``sys.modules`` before the import: its ``init`` does nothing and its ``log`` records
  what it is given. Their config is what their command line gives (its defaults), with
  ``use_wandb`` and ``debug`` on (so that ``logz/batch_logging.py`` logs every iteration through
  ``jax.debug.callback``) and ``save_policy`` off. ``jax.jit(jax.vmap(make_train(config)))`` is
  lowered and compiled ahead of time on the seeds' keys (``compile_s``; building their
  environment and wrappers is ``build_s``), then called and waited on (``run_s``). Their own
  script prints one time, compile included; this splits it. The per-seed rows are read from
  ``logz.batch_logging.batch_logs`` (each iteration's logs of every seed, before ``wandb.log``
  averages the returns over seeds), each told to its seed by the lane index that a wrapper around
  ``jax.debug.callback`` adds to their callback's arguments (the vmapped axis is named; the
  seeds' callbacks run in no fixed order); the stand-in's records, the seed-averaged rows a wandb
  run would show, are counted. Flax's orthogonal initializer is replaced, in their process, by
  the same one with each seed's QR drawn on its own (``jax.custom_batching.sequential_vmap``, as
  ours draws it: the same numbers), without which their vmapped seeds hang on a 2-core CPU
  (``DIFFERENCES``); ``patched`` in the results lists both replacements. Their ``orbax`` and
  ``flax.training.orbax_utils`` imports (used only to save a policy) are replaced by stand-ins
  only if they fail to import; ``stubbed`` in the results says which were.
* **ours**: ``jaxrl_fdg.train`` with ``fusion="scan"``, ``num_seeds`` lanes, a host boundary
  every iteration (``log_every=1``: a metrics row per iteration, as theirs logs one), no
  persistent compilation cache; ``compile_s`` and ``run_s`` are the run's summary's. Per-seed
  rows are read from the run folder's lanes (``jaxrl_fdg.plots.find_runs``).

Both use the same hyperparameters (:data:`HYPERPARAMETERS` maps their names to ours) and the same
network: separate policy and value MLPs of three 512-unit tanh layers each, orthogonal
initialisation (gain √2, heads 0.01 and 1.0). What cannot be made the same is listed in
:data:`DIFFERENCES` and in the results. Reported per side: compile and run seconds, env-steps/s
after compile (per seed and over all seeds; ``ours_vs_theirs`` above 1: ours is faster), each
seed's return curve (env steps per seed, mean return of the episodes that ended in that
iteration), each seed's final return (its last logged) and their mean with a 95% bootstrap
interval over seeds (``jaxrl_fdg.stats``, ``scipy.stats.bootstrap``), the final achievement
success rates (percent, mean over seeds) and the peak resident memory.

    git -C <mirror of MichaelTMatthews/Craftax_Baselines> archive HEAD | tar -x -C /tmp/cb
    python benchmarks/craftax_baseline.py --baseline-dir /tmp/cb --size quick  # to a temp file
    python benchmarks/craftax_baseline.py --baseline-dir /tmp/cb --size full
                                               # writes benchmarks/results/craftax_baseline.json

``--size quick`` (64 envs, 2 iterations, 1 seed) checks that both sides run and prints what
``--size full`` (1024 envs × 64 steps, 30 iterations: 1,966,080 env steps per seed, 3 seeds)
would take on this machine, extrapolated from its own run seconds. ``--seeds N`` replaces the
size's seed count (``--size quick --seeds 2`` also checks the per-seed bookkeeping of both);
``--keep-runs`` keeps the temporary folder with our run folder and each side's raw figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ENV_ID = "Craftax-Classic-Symbolic-v1"
ROLLOUT = 64  # their --num_steps
SIZES = {
    "quick": dict(num_envs=64, iterations=2, seeds=1),
    # What a 2-core CPU runs in minutes: 8 iterations of 128 × 64, 65,536 env steps per seed.
    "cpu": dict(num_envs=128, iterations=8, seeds=2),
    # 30 iterations of 1024 × 64: 1,966,080 env steps per seed (their 2M budget in whole iterations)
    "full": dict(num_envs=1024, iterations=30, seeds=3),
}
TIMEOUT_S = 6 * 3600  # one side at most; a side that takes longer is recorded as timed out
BASELINE_FILES = (
    "ppo.py",
    "ppo_rnn.py",
    "models/actor_critic.py",
    "wrappers.py",
    "logz/batch_logging.py",
)
# --algo: their script (a module of their checkout), our algorithm and its results file. PPO-RNN
# is their ppo_rnn.py beside our PPO with memory gru and their network (benchmarks/craftax_rnn.py).
ALGOS = {
    "ppo": dict(module="ppo", results="craftax_baseline.json"),
    "ppo-rnn": dict(module="ppo_rnn", results="craftax_baseline_rnn.json"),
}
RNN_HPARAMS = dict(memory="gru", memory_size=512, hidden_sizes=(512,), activation="relu")
RNN_DIFFERENCES = (
    "Network (PPO-RNN): theirs is ppo_rnn.py's ActorCriticRNN (a 512-unit ReLU layer into one "
    "512-unit GRU shared by policy and value, then two 512-unit ReLU layers in each head); ours "
    "is the same network written as a network of one's own (benchmarks/craftax_rnn.py) in the "
    "built-in PPO with memory gru, whose memory is reset to zeros at an episode's first step as "
    "theirs resets the GRU where the previous step was done. Their --activation does not reach "
    "it (ReLU is written in), nor ours.",
    "Minibatches (PPO-RNN): both shuffle whole environments' sequences into 8 minibatches and "
    "re-run the GRU from the memory the rollout started with.",
)

# (what, their flag and value, our hyperparameter and value): the same setting on both sides.
HYPERPARAMETERS = (
    ("learning rate", "lr 2e-4", "lr 2e-4"),
    ("learning-rate decay to 0", "anneal_lr True", "anneal_lr True"),
    ("discount", "gamma 0.99", "gamma 0.99"),
    ("GAE λ", "gae_lambda 0.8", "gae_lambda 0.8"),
    ("policy clip", "clip_eps 0.2", "clip_eps 0.2"),
    ("value clip", "clip_eps 0.2 (reused for the value loss)", "vf_clip 0.2"),
    ("entropy weight", "ent_coef 0.01", "ent_coef 0.01"),
    ("value weight", "vf_coef 0.5", "vf_coef 0.5"),
    ("global gradient norm clip", "max_grad_norm 1.0", "max_grad_norm 1.0"),
    ("epochs per rollout", "update_epochs 4", "update_epochs 4"),
    ("minibatches per epoch", "num_minibatches 8", "num_minibatches 8"),
    ("rollout length", "num_steps 64", "rollout_len 64"),
    ("environments", "num_envs", "num_envs"),
    ("seeds in one vmapped program", "num_repeats", "num_seeds"),
    (
        "network",
        "ActorCritic(layer_size 512): separate actor and critic, 3 Dense 512 + tanh each",
        "hidden_sizes (512, 512, 512), activation tanh (separate policy and value MLPs)",
    ),
    (
        "initialisation",
        "orthogonal √2 hidden, 0.01 policy head, 1.0 value head, zero biases",
        "the same (fragments.layers.MLP)",
    ),
    (
        "optimizer",
        "adam eps 1e-5 after clip_by_global_norm",
        "adam eps 1e-5 after clip_by_global_norm",
    ),
    (
        "advantage normalisation",
        "per minibatch, (A − mean) / (std + 1e-8)",
        "normalize_advantages True: per minibatch, (A − mean) / (std + 1e-8)",
    ),
    ("minibatches", "a fresh permutation of the T × B batch per epoch", "the same"),
)
OUR_HPARAMS = dict(
    lr=2e-4,
    anneal_lr=True,
    gamma=0.99,
    gae_lambda=0.8,
    clip_eps=0.2,
    vf_clip=0.2,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=1.0,
    update_epochs=4,
    num_minibatches=8,
    hidden_sizes=(512, 512, 512),
    activation="tanh",
    normalize_advantages=True,
)
# Their command line's defaults (ppo.py's argparse), by its dests; run_ppo upper-cases them.
THEIR_DEFAULTS = dict(
    env_name=ENV_ID,
    lr=2e-4,
    num_steps=ROLLOUT,
    update_epochs=4,
    num_minibatches=8,
    gamma=0.99,
    gae_lambda=0.8,
    clip_eps=0.2,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=1.0,
    activation="tanh",
    anneal_lr=True,
    debug=True,
    jit=True,
    use_wandb=True,
    save_policy=False,
    layer_size=512,
    wandb_project=None,
    wandb_entity=None,
    use_optimistic_resets=True,
    optimistic_reset_ratio=16,
    exploration_update_epochs=4,
    icm_reward_coeff=1.0,
    train_icm=False,
    icm_lr=3e-4,
    icm_forward_loss_coef=1.0,
    icm_inverse_loss_coef=1.0,
    icm_layer_size=256,
    icm_latent_size=32,
    e3b_reward_coeff=1.0,
    use_e3b=False,
    e3b_lambda=0.1,
)

DIFFERENCES = (
    "Resets: theirs uses optimistic resets (wrappers.OptimisticResetVecEnvWrapper, reset ratio "
    "16): every step computes num_envs / 16 fresh reset states and hands them to the environments "
    "that finished, so when more finish on one step than there are fresh states, several restart "
    "from the same initial world. Ours (the environment base class's auto-reset) gives every "
    "finished environment a reset of its own key and computes only as many as finished (in "
    "chunks of num_envs / 16 slots, another chunk when more end); under the seeds' vmap its "
    "cond becomes a select, so that a chunk is reset on every step, as many resets as theirs.",
    "Time limit: their Craftax environment's done includes reaching max_timesteps (10,000 in "
    "Classic), treated as a termination (no bootstrap). Ours splits it off as truncated and "
    "bootstraps from the value of the final observation. It matters only for episodes that reach "
    "10,000 steps.",
    "Learning-rate annealing: theirs is a staircase, lr × (1 − k / N) through all updates of "
    "iteration k (N iterations), so its last iteration still learns at lr / N; ours decays "
    "linearly per gradient step, lr × (1 − u / U) with U = N × 4 epochs × 8 minibatches, reaching "
    "0 at the end.",
    "Gradient clipping: ours computes the global norm over the parameters raveled into one vector "
    "(optax.flatten); the same norm, rounded differently in its last bits.",
    "Random streams: different keys for initialisation, actions, resets and minibatches, so the "
    "curves agree in distribution, not bit for bit. Their seeds are jax.random.split("
    "PRNGKey(seed), num_repeats); ours are seeds seed, seed + 1, ...",
    "Logging inside the timed run: theirs calls jax.debug.callback every iteration, unrolled over "
    "the vmapped seeds, into logz.batch_logging (host-side jnp.isnan per value, then wandb.log, "
    "here a stand-in that records); ours has a host boundary every iteration (log_every=1) where "
    "the metrics are read and written to the run folder, and writes a checkpoint of the final "
    "state (ours' timing.host_bookkeeping_s holds both). Both are in run_s.",
    "Compile seconds: theirs is lower + compile of jit(vmap(make_train(config))) (their "
    "environment and wrappers built apart, build_s); ours is the run summary's compile_s, its "
    "ahead-of-time compile of the run's programs (initialisation and the fused iteration).",
    "Their logs carry no seed id, and the vmapped seeds' unrolled debug callbacks run in "
    "whatever order XLA schedules them (reversed, on this CPU). To tell their seeds apart, the "
    "harness vmaps over a named axis and wraps jax.debug.callback in their process so that each "
    "call also receives its lane's jax.lax.axis_index: one int32 more per callback, their "
    "program otherwise unchanged.",
    "Metrics: both average the returns of the episodes that ended in the iteration, per seed "
    "(theirs NaN where none ended, ours null). Achievements: theirs are percent "
    "(Achievements/<name>), ours fractions (achievement_<name>); the results give both in percent.",
    "Initialisation under the seeds' vmap: flax's orthogonal initializer becomes one batched "
    "LAPACK QR, which XLA:CPU splits over its intra-op thread pool and waits for; with actor and "
    "critic initialised at once, a 2-core machine's pool is all waiting kernels and their program "
    "never finishes (it hung here at 2 seeds). Ours already draws each seed's QR on its own "
    "(fragments.layers.orthogonal, jax.custom_batching.sequential_vmap); the harness does the "
    "same for theirs by replacing flax.linen.initializers.orthogonal in their process before "
    "their models import it. The same numbers, bit for bit; only the one-time initialisation "
    "runs differently.",
    "Their --activation flag is not passed to their ActorCritic; its default, tanh, applies (the "
    "same as ours).",
)


# ---------------------------------------------------------------- theirs, in a child process

_THEIRS = r"""
import json, os, resource, sys, time, types

baseline_dir, settings, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
sys.path.insert(0, baseline_dir)

logged = []
wandb = types.ModuleType("wandb")  # a stand-in: ppo.py and logz import wandb at module level
wandb.run = None
wandb.init = lambda *args, **kwargs: None


def _log(data, step=None, **kwargs):
    logged.append({"step": step, "keys": sorted(data)})


wandb.log = _log
sys.modules["wandb"] = wandb

# Their requirements pin orbax-checkpoint 0.5.0; its names serve only to save a policy
# (save_policy False here). Stand-ins replace them only if this install lacks them.
stubbed = []
NAMES = ("PyTreeCheckpointer", "CheckpointManagerOptions", "CheckpointManager")
try:
    import orbax.checkpoint as _oc
    missing = [n for n in NAMES if not hasattr(_oc, n)]
except Exception:
    _oc, missing = None, list(NAMES)
if missing:
    stand_in = types.ModuleType("orbax.checkpoint")
    for n in NAMES:
        setattr(stand_in, n, getattr(_oc, n, None) if _oc is not None else None)
    for n in missing:
        setattr(stand_in, n, type(n, (), {}))
    sys.modules["orbax.checkpoint"] = stand_in
    stubbed += [f"orbax.checkpoint.{n}" for n in missing]
try:
    from flax.training import orbax_utils  # noqa: F401
except Exception:
    import flax.training
    flax.training.orbax_utils = types.ModuleType("flax.training.orbax_utils")
    sys.modules["flax.training.orbax_utils"] = flax.training.orbax_utils
    stubbed.append("flax.training.orbax_utils")

import jax
import numpy as np

# Which seed a log comes from: the unrolled callbacks of the vmapped seeds run in whatever order
# XLA schedules them (lane order reversed, here), so each call also gets its lane's index along
# the vmapped axis (named "seed" below). Their one call site is callback(metric, update_step).
lanes_of = {}
_callback = jax.debug.callback


def _tagged(fn, *args, **kwargs):
    def with_lane(lane, *a, **k):
        lanes_of.setdefault(int(a[1]), []).append(int(lane))
        return fn(*a, **k)

    return _callback(with_lane, jax.lax.axis_index("seed"), *args, **kwargs)


jax.debug.callback = _tagged

# Under the seeds' vmap flax's orthogonal initializer is one batched LAPACK QR, which XLA:CPU
# splits over its intra-op pool and waits for; two of them at once (actor and critic) wait
# forever on a 2-core machine. As ours does (fragments.layers.orthogonal), each seed's QR runs
# on its own (jax.custom_batching.sequential_vmap): the same numbers, bit for bit. Their models
# import the name from flax.linen.initializers, so it is replaced there before they load.
import flax.linen.initializers as _initializers

_orthogonal = _initializers.orthogonal


def _sequential_orthogonal(*args, **kwargs):
    base = _orthogonal(*args, **kwargs)

    def init(key, shape, dtype=jax.numpy.float32):
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


_initializers.orthogonal = _sequential_orthogonal
patched = ["jax.debug.callback (lane index added)", "flax.linen.initializers.orthogonal "
           "(sequential_vmap)"]

# Flax's GRUCell took the original orthogonal initializer as a default when flax loaded, before
# the replacement above; it draws through jax's random.orthogonal, made sequential here instead.
import jax._src.random as _random

_random_orthogonal = _random.orthogonal


def _sequential_random_orthogonal(key, *args, **kwargs):
    draw = lambda k: _random_orthogonal(k, *args, **kwargs)  # noqa: E731
    return jax.custom_batching.sequential_vmap(draw)(key)


_random.orthogonal = _sequential_random_orthogonal
patched.append("jax random.orthogonal (sequential_vmap, for the GRU's recurrent kernel)")

import importlib

ppo = importlib.import_module(sys.argv[4])
from logz import batch_logging

config = {k.upper(): v for k, v in settings.items()}  # as their run_ppo does
start = time.perf_counter()
train = ppo.make_train(config)
build_s = time.perf_counter() - start
keys = jax.random.split(jax.random.PRNGKey(config["SEED"]), config["NUM_REPEATS"])
start = time.perf_counter()
compiled = jax.jit(jax.vmap(train, axis_name="seed")).lower(keys).compile()
compile_s = time.perf_counter() - start
start = time.perf_counter()
jax.block_until_ready(compiled(keys))
jax.effects_barrier()  # every callback has run
run_s = time.perf_counter() - start


def number(x):
    x = float(np.asarray(x))
    return None if x != x else x


per_update = config["NUM_STEPS"] * config["NUM_ENVS"]
lanes = [{"lane": i, "rows": []} for i in range(config["NUM_REPEATS"])]
for update in sorted(batch_logging.batch_logs):
    for index, log in zip(lanes_of[update], batch_logging.batch_logs[update], strict=True):
        lanes[index]["rows"].append({
            "step": (int(update) + 1) * per_update,
            "episode_return": number(log["episode_return"]),
            "episode_length": number(log["episode_length"]),
            "achievements_percent": {
                k.split("/", 1)[1]: number(v)
                for k, v in log.items() if k.lower().startswith("achievements/")
            },
        })
device = jax.devices()[0]
stats = device.memory_stats() if device.platform != "cpu" else None
with open(out, "w") as f:
    json.dump({
        "build_s": build_s,
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps_per_seed": config["NUM_UPDATES"] * per_update,
        "lanes": lanes,
        "wandb_log_calls": len(logged),
        "wandb_log_keys": logged[0]["keys"] if logged else [],
        "stubbed": stubbed,
        "patched": patched,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "peak_device_gib": (stats or {}).get("peak_bytes_in_use", 0) / 2**30 or None,
        "device": str(device),
    }, f)
"""


# ---------------------------------------------------------------- ours, in a child process

_OURS = r"""
import json, resource, sys

import jax
import jaxrl_fdg as rl
from jaxrl_fdg import plots

settings, out = json.loads(sys.argv[1]), sys.argv[2]
settings["hparams"]["hidden_sizes"] = tuple(settings["hparams"]["hidden_sizes"])
result = rl.train(rl.TrainConfig(**settings))
summary = result.summary


def number(x):
    return None if x is None else float(x)


lanes = []
for i, run in enumerate(plots.find_runs([result.run_dir])):
    rows = []
    for row in run.rows:
        rows.append({
            "step": int(row["step"]),
            "episode_return": number(row.get("episode_return")),
            "episode_length": number(row.get("episode_length")),
            "achievements_percent": {
                k[len("achievement_"):]: None if v is None else 100.0 * v
                for k, v in row.items() if k.startswith("achievement_")
            },
        })
    lanes.append({"lane": i, "seed": run.config.get("seed"), "name": run.path.name, "rows": rows})
device = jax.devices()[0]
stats = device.memory_stats() if device.platform != "cpu" else None
with open(out, "w") as f:
    json.dump({
        "compile_s": summary["compile_s"],
        "run_s": summary["run_s"],
        "env_steps_per_seed": summary["env_steps"],
        "timing": {
            k: summary["timing"].get(k)
            for k in ("dispatch_s", "device_wait_s", "d2h_s", "host_bookkeeping_s", "other_host_s")
        },
        "lanes": lanes,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "peak_device_gib": (stats or {}).get("peak_bytes_in_use", 0) / 2**30 or None,
        "device": str(device),
    }, f)
"""


def run_child(argv: list[str], out: Path, cwd: Path) -> dict:
    """One side in a fresh process: what it wrote to ``out``, or why it wrote nothing."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return {"timed_out_s": TIMEOUT_S}
    wall_s = time.perf_counter() - start
    if done.returncode or not out.is_file():
        tail = (done.stdout + done.stderr).strip()[-3000:]
        return {"failed": tail, "returncode": done.returncode, "wall_s": wall_s}
    return {**json.loads(out.read_text()), "wall_s": wall_s}


def theirs(baseline_dir: Path, size: dict, seed: int, work: Path, algo: str = "ppo") -> dict:
    settings = dict(
        THEIR_DEFAULTS,
        num_envs=size["num_envs"],
        total_timesteps=size["iterations"] * ROLLOUT * size["num_envs"],
        num_repeats=size["seeds"],
        seed=seed,
        optimistic_reset_ratio=min(16, size["num_envs"]),
    )
    out = work / "theirs.json"
    result = run_child(
        ["-c", _THEIRS, str(baseline_dir), json.dumps(settings), str(out), ALGOS[algo]["module"]],
        out,
        baseline_dir,
    )
    return {"settings": settings, **result}


def our_hparams(algo: str) -> dict:
    """Our side's hyperparameters for ``--algo``: PPO's, with PPO-RNN's memory and network sizes."""
    return dict(OUR_HPARAMS, **(RNN_HPARAMS if algo == "ppo-rnn" else {}))


def ours_settings(size: dict, seed: int, folder: Path, algo: str = "ppo") -> dict:
    hparams = our_hparams(algo)
    return dict(
        algo="ppo" if algo == "ppo" else f"{ROOT / 'benchmarks' / 'craftax_rnn.py'}:SPEC",
        env=f"craftax/{ENV_ID}",
        num_envs=size["num_envs"],
        rollout_len=ROLLOUT,
        total_steps=size["iterations"] * ROLLOUT * size["num_envs"],
        num_seeds=size["seeds"],
        seed=seed,
        fusion="scan",
        log_every=1,
        out=str(folder),
        run_name="ours",
        progress=False,
        compile_cache=False,
        hparams=hparams,
    )


def ours(size: dict, seed: int, work: Path, algo: str = "ppo") -> dict:
    settings = ours_settings(size, seed, work / "runs", algo)
    out = work / "ours.json"
    result = run_child(["-c", _OURS, json.dumps(settings), str(out)], out, ROOT)
    settings.pop("out")
    return {"settings": settings, **result}


# ---------------------------------------------------------------- figures


def finish(side: dict, seeds: int) -> dict:
    """The side's figures from its child's: rates, curves, final returns with their interval."""
    if "lanes" not in side:
        return side
    from jaxrl_fdg import stats

    steps = side["env_steps_per_seed"]
    side["steps_per_s_per_seed"] = steps / side["run_s"] if side["run_s"] else None
    side["steps_per_s_all_seeds"] = steps * seeds / side["run_s"] if side["run_s"] else None
    curves, finals, achievements = [], [], []
    for lane in side.pop("lanes"):
        rows = [r for r in lane["rows"] if r["episode_return"] is not None]
        curves.append(
            {
                **{k: lane[k] for k in ("lane", "seed", "name") if k in lane},
                "env_steps": [r["step"] for r in rows],
                "episode_return": [r["episode_return"] for r in rows],
            }
        )
        if rows:
            finals.append(rows[-1]["episode_return"])
            achievements.append(rows[-1]["achievements_percent"])
    side["curves"] = curves
    side["final_returns"] = finals
    side["final_return_mean"] = (
        stats.interval_estimates([finals], ("mean",))["mean"]._asdict() if finals else None
    )
    names = sorted({k for a in achievements for k in a})
    side["final_achievements_percent"] = {
        name: _mean([a.get(name) for a in achievements]) for name in names
    }
    return side


def _mean(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def estimate_full(results: dict, size: dict) -> dict:
    """Seconds ``--size full`` would take per side here: run seconds scaled by the env steps over
    all seeds (a rate measured at ``size``; Craftax and the 512-unit MLPs cost about in proportion
    to the batch on a CPU), plus compile and build seconds as measured (they barely grow with the
    batch)."""
    full = SIZES["full"]
    scale = (full["num_envs"] * full["iterations"] * full["seeds"]) / (
        size["num_envs"] * size["iterations"] * size["seeds"]
    )
    estimate = {}
    for name in ("theirs", "ours"):
        side = results[name]
        if "run_s" not in side:
            continue
        fixed = side["compile_s"] + side.get("build_s", 0.0)
        estimate[name] = {"run_s": side["run_s"] * scale, "total_s": side["run_s"] * scale + fixed}
    return estimate


def baseline_identity(baseline_dir: Path) -> dict:
    """Which version of their code ran: the checkout's commit if it is a git checkout, and the
    SHA-256 of the files that define the run."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"],
            cwd=baseline_dir,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        found = []
    # Only a checkout of its own (not a folder inside some other repository) has its commit.
    commit = found[1] if len(found) == 2 and Path(found[0]).resolve() == baseline_dir else None
    digests = {
        name: hashlib.sha256((baseline_dir / name).read_bytes()).hexdigest()
        for name in BASELINE_FILES
    }
    return {"path": str(baseline_dir), "commit": commit, "sha256": digests}


def describe(name: str, side: dict) -> str:
    if "run_s" not in side:
        why = side.get("failed") or f"timed out ({side.get('timed_out_s')} s)"
        return f"{name}: no result: {why}"
    final = side["final_return_mean"]
    final = (
        "no episode ended"
        if final is None
        else f"final return {final['point']:.2f} [{final['low']:.2f}, {final['high']:.2f}]"
    )
    return (
        f"{name}: compile {side['compile_s']:.1f} s, run {side['run_s']:.1f} s, "
        f"{side['steps_per_s_all_seeds']:,.0f} env-steps/s (all seeds), {final}, "
        f"peak resident {side['peak_rss_gib']:.2f} GiB"
    )


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline-dir",
        type=Path,
        help="a checkout of Craftax_Baselines (its ppo.py is run from there); without one the "
        "benchmark is skipped",
    )
    parser.add_argument("--size", choices=tuple(SIZES), default="full")
    parser.add_argument(
        "--algo",
        choices=tuple(ALGOS),
        default="ppo",
        help="ppo: their ppo.py; ppo-rnn: their ppo_rnn.py beside our PPO with their GRU network",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, help="seeds per side (default: the size's)")
    parser.add_argument(
        "--out", help="results file (default: results/craftax_baseline.json; quick: a temp file)"
    )
    parser.add_argument("--keep-runs", action="store_true", help="keep our run folder")
    args = parser.parse_args()
    if args.baseline_dir is None:
        print("craftax_baseline: skipped, no --baseline-dir (a Craftax_Baselines checkout)")
        return 0
    baseline_dir = args.baseline_dir.resolve()
    missing = [name for name in BASELINE_FILES if not (baseline_dir / name).is_file()]
    if missing:
        parser.error(f"--baseline-dir {baseline_dir}: no Craftax_Baselines checkout (no {missing})")
    import importlib.util

    if importlib.util.find_spec("craftax") is None:
        print("craftax_baseline: skipped, craftax is not installed (pip install craftax)")
        return 0
    out = args.out or (
        str(Path(tempfile.gettempdir()) / f"craftax_baseline-{args.algo}-quick.json")
        if args.size == "quick"
        else str(RESULTS / ALGOS[args.algo]["results"])
    )
    size = dict(SIZES[args.size])
    if args.seeds is not None:
        if args.seeds < 1:
            parser.error(f"--seeds must be at least 1, got {args.seeds}")
        size["seeds"] = args.seeds
    steps = size["iterations"] * ROLLOUT * size["num_envs"]
    print(
        f"craftax_baseline --size {args.size}: {size['num_envs']} envs × {ROLLOUT} steps × "
        f"{size['iterations']} iterations = {steps:,} env steps per seed, {size['seeds']} "
        f"seed{'s' * (size['seeds'] != 1)}",
        flush=True,
    )

    work = Path(tempfile.mkdtemp(prefix="craftax_baseline-"))
    results: dict[str, Any] = {}
    load: dict[str, list[float]] = {"before": list(os.getloadavg())}
    try:
        results["theirs"] = finish(
            theirs(baseline_dir, size, args.seed, work, args.algo), size["seeds"]
        )
        print(describe("theirs", results["theirs"]), flush=True)
        load["between"] = list(os.getloadavg())
        results["ours"] = finish(ours(size, args.seed, work, args.algo), size["seeds"])
        print(describe("ours", results["ours"]), flush=True)
        load["after"] = list(os.getloadavg())
    finally:
        if args.keep_runs:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    rates = [results[n].get("steps_per_s_all_seeds") for n in ("ours", "theirs")]
    results["ours_vs_theirs"] = rates[0] / rates[1] if all(rates) else None
    results["differences"] = list(DIFFERENCES) + (
        list(RNN_DIFFERENCES) if args.algo == "ppo-rnn" else []
    )
    results["hyperparameters"] = [
        {"setting": what, "theirs": a, "ours": b} for what, a, b in HYPERPARAMETERS
    ]
    if results["ours_vs_theirs"] is not None:
        print(f"ours / theirs env-steps/s: {results['ours_vs_theirs']:.3f}")
    if results["theirs"].get("patched"):
        print(f"theirs: replaced in their process: {'; '.join(results['theirs']['patched'])}")
    if results["theirs"].get("stubbed"):
        print(f"theirs: stand-ins for {', '.join(results['theirs']['stubbed'])}")
    extra: dict[str, Any] = {"load_average": load}
    if size != SIZES["full"]:
        estimate = estimate_full(results, size)
        extra["full_size_estimate_s"] = estimate
        for name, e in estimate.items():
            print(
                f"--size full estimate here, {name}: run {e['run_s'] / 3600:.1f} h, "
                f"{e['total_s'] / 3600:.1f} h with compile (from this run's rate; rough)"
            )
        if estimate:
            total = sum(e["total_s"] for e in estimate.values())
            print(f"--size full estimate here, both sides: {total / 3600:.1f} h")
    config = {
        "env": f"craftax/{ENV_ID}",
        "algo": args.algo,
        "size": args.size,
        "num_envs": size["num_envs"],
        "rollout_len": ROLLOUT,
        "iterations": size["iterations"],
        "seeds": size["seeds"],
        "seed": args.seed,
        "env_steps_per_seed": steps,
        "baseline": baseline_identity(baseline_dir),
        "ours_hparams": {
            **(hparams := our_hparams(args.algo)),
            "hidden_sizes": list(hparams["hidden_sizes"]),
        },
    }
    from jaxrl_fdg.profiling import write_report

    write_report(out, "craftax_baseline", config, results, **extra)
    return 0 if all("run_s" in results[n] for n in ("ours", "theirs")) else 1


if __name__ == "__main__":
    sys.exit(main())

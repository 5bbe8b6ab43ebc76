"""PPO and SAC on a Brax task, ours and Brax's own trainers side by side, on this machine.

    python benchmarks/brax_training.py                  # results/brax_training-cpu.json
    python benchmarks/brax_training.py --setup brax     # Brax's published sizes
    python benchmarks/brax_training.py --setup sac      # SAC: results/brax_training-sac.json
    python benchmarks/brax_training.py --seeds 1 --steps 200000   # a quick look
    python benchmarks/brax_training.py --learning-rate 1e-9   # both policies kept as initialised

Both train ``inverted_pendulum`` on MJX for the same budget with the same hyperparameters: Brax's
own PPO configuration for the task (``reward_scaling=10, normalize_observations=True,
discounting=0.97, learning_rate=3e-4, entropy_cost=1e-2, clipping_epsilon=0.3``, 4 epochs per
update batch, no gradient clipping, a constant learning rate), policy and value MLPs of 64 × 64
tanh units, bootstrapping on time-outs, and a final evaluation of the deterministic policy over 16
episodes, at one of two sizes (:data:`SETUPS`): a CPU-sized one and Brax's published one. What
stays different is each framework's own: Brax's policy is a tanh-squashed Gaussian with a learned
state-dependent scale, ours a Gaussian with a state-independent log-std whose sample the env gets
clipped to the box.

``--setup sac`` trains SAC instead (``brax.training.agents.sac`` for Brax): the settings Brax's
training notebook gives the task (reward scaling 10, γ 0.97, learning rate 3e-4, 64 envs, batches
of 64, 32 updates per step of the 64 envs, a replay of 2^14 filled with 2^9 random steps first,
observation normalisation), 64 × 64 ReLU networks, 100k steps.

An MJX step costs more at the states a learning policy reaches (its constraint solver iterates
until the batch's slowest environment converges: ``benchmarks/brax_rollout_cost.py``), so when the
two policies learn differently their rates compare different physics. ``--learning-rate 1e-9``
keeps both policies as initialised, every update still running, for a like-for-like rate.

Each run is a fresh process with the compilation cache off. Reported per framework: the final
evaluation return, env-steps/s of training and compile seconds; medians over seeds, interleaved
(ours, Brax, ours, Brax, ...). Ours are its summary's figures for the training run, whose final
checkpoint is then evaluated apart (its wall time, compile included, is ``eval_s``). Brax trains
in 5 epochs with an evaluation after each: its rate is the median ``training/sps`` of the epochs
that ran compiled (evaluations excluded), its compile the time its epochs took beyond their steps
at that rate, plus the time to its first evaluation (at step 0: mostly compiling its evaluation,
which ours reports in ``eval_s`` instead).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ENV = "inverted_pendulum"
# Sizes: "cpu", 256 environments with rollouts of 16 steps (4,096 per update batch, 4 minibatches
# of 1,024), 1M steps; "brax", those of Brax's published configuration (2,048 environments,
# 32 minibatches of 5,120 transitions, 2M steps: Brax collects 16 unrolls of 5 steps per
# environment per update batch, ours one rollout of 80 steps).
SETUPS = {
    "cpu": dict(num_envs=256, rollout=16, brax_unroll=16, minibatches=4, steps=1_000_000),
    "brax": dict(num_envs=2048, rollout=80, brax_unroll=5, minibatches=32, steps=2_000_000),
    # SAC with the settings Brax's training notebook gives this task (64 envs, batches of 64,
    # 32 updates per step of the 64 envs, replay 2^14, 2^9 random steps first, observation
    # normalisation), 64 x 64 ReLU networks, 100k steps.
    "sac": dict(
        num_envs=64, batch=64, updates_per_step=32, replay=2**14, warmup=2**9, steps=100_000
    ),
}
SAC = dict(gamma=0.97, lr=3e-4, reward_scaling=10.0, hidden=(64, 64))
EPOCHS = 4
EVAL_EPISODES = 16
EVALS = 6  # Brax's: at step 0 and after each of its 5 training epochs
HIDDEN = (64, 64)
SHARED = dict(gamma=0.97, lr=3e-4, ent_coef=1e-2, clip_eps=0.3, gae_lambda=0.95, vf_coef=0.5)


def _is_sac(setup: dict) -> bool:
    return "batch" in setup


def ours(setup: dict, seed: int) -> dict:
    """Train ours, then evaluate its final checkpoint; its return, rate and compile seconds.

    As Brax's rate leaves its evaluations out, ours is the training run's alone: the evaluation
    runs after it (``rl.evaluate``, the same episodes and keys an evaluation inside the run
    would have), and its wall time, compile included, is reported apart as ``eval_s``.
    """
    import tempfile

    import jaxrl_fdg as rl

    config = (sac_config if _is_sac(setup) else ppo_config)(setup, seed).replace(
        eval_every=0,
        eval_episodes=EVAL_EPISODES,
        run_name="ours",
        progress=False,
        compile_cache=False,
    )
    with tempfile.TemporaryDirectory() as out:
        run = rl.train(config.replace(out=out))
        start = time.perf_counter()
        evaluation = rl.evaluate(run.run_dir)
        eval_s = time.perf_counter() - start
    summary = run.summary
    return {
        "final_return": evaluation["eval_return"],
        "env_steps": summary["env_steps"],
        "steps_per_s": summary["steps_per_s"],
        "compile_s": summary["compile_s"],
        "eval_s": eval_s,
    }


def _env_options(setup: dict) -> dict:
    """The Brax adapter's restart rule: ``first_state`` is the one Brax's trainers use."""
    return {"auto_reset": setup.get("auto_reset", "fresh")}


def sac_config(setup: dict, seed: int):
    """Our SAC run of the ``sac`` setup."""
    import jaxrl_fdg as rl

    return rl.TrainConfig(
        algo="sac",
        env=f"brax/{ENV}",
        env_options=_env_options(setup),
        total_steps=setup["steps"],
        num_envs=setup["num_envs"],
        rollout_len=1,
        log_every=100,
        seed=seed,
        hparams={
            "gamma": SAC["gamma"],
            **dict.fromkeys(("actor_lr", "critic_lr", "alpha_lr"), setup.get("lr", SAC["lr"])),
            "reward_scaling": SAC["reward_scaling"],
            "batch_size": setup["batch"],
            "utd_ratio": setup["updates_per_step"] / setup["num_envs"],
            "buffer_size": setup["replay"],
            "learning_starts": setup["warmup"],
            "hidden_sizes": SAC["hidden"],
            "normalize_observations": True,
        },
    )


def ppo_config(setup: dict, seed: int):
    """Our PPO run of the ``cpu`` or ``brax`` setup (benchmarks/simulator_curves.py draws it)."""
    import jaxrl_fdg as rl

    hparams = {
        **SHARED,
        "lr": setup.get("lr", SHARED["lr"]),
        "anneal_lr": False,
        "vf_clip": float("inf"),
        "max_grad_norm": 1e9,
        "update_epochs": EPOCHS,
        "num_minibatches": setup["minibatches"],
        "hidden_sizes": HIDDEN,
        "activation": "tanh",
        "normalize_observations": True,
        "reward_scaling": 10.0,
    }
    return rl.TrainConfig(
        algo="ppo",
        env=f"brax/{ENV}",
        env_options=_env_options(setup),
        total_steps=setup["steps"],
        num_envs=setup["num_envs"],
        rollout_len=setup["rollout"],
        seed=seed,
        hparams=hparams,
    )


def brax(setup: dict, seed: int) -> dict:
    """Train with Brax's own trainer; its return, rate and compile seconds."""
    _restore_device_put_replicated()
    calls: list[tuple[float, int, dict]] = []
    start = time.perf_counter()

    def progress(step, metrics):
        calls.append((time.perf_counter() - start, int(step), dict(metrics)))

    (_brax_sac if _is_sac(setup) else _brax_ppo)(setup, seed, progress)
    return _brax_figures(calls)


def _brax_ppo(setup: dict, seed: int, progress) -> None:
    import functools

    import flax.linen as nn
    from brax import envs
    from brax.training.agents.ppo import networks, train

    factory = functools.partial(
        networks.make_ppo_networks,
        policy_hidden_layer_sizes=HIDDEN,
        value_hidden_layer_sizes=HIDDEN,
        activation=nn.tanh,
    )
    train.train(
        environment=envs.get_environment(ENV, backend="mjx"),
        num_timesteps=setup["steps"],
        num_envs=setup["num_envs"],
        episode_length=1000,
        unroll_length=setup["brax_unroll"],
        # Sequences of brax_unroll steps per minibatch: each update batch holds as many steps
        # as ours, num_envs × rollout.
        batch_size=setup["num_envs"]
        * setup["rollout"]
        // setup["brax_unroll"]
        // setup["minibatches"],
        num_minibatches=setup["minibatches"],
        num_updates_per_batch=EPOCHS,
        learning_rate=setup.get("lr", SHARED["lr"]),
        entropy_cost=SHARED["ent_coef"],
        discounting=SHARED["gamma"],
        gae_lambda=SHARED["gae_lambda"],
        clipping_epsilon=SHARED["clip_eps"],
        vf_loss_coefficient=SHARED["vf_coef"],
        reward_scaling=10.0,
        normalize_observations=True,
        bootstrap_on_timeout=True,
        network_factory=factory,
        num_evals=EVALS,
        num_eval_envs=EVAL_EPISODES,
        deterministic_eval=True,
        seed=seed,
        progress_fn=progress,
    )


def _brax_sac(setup: dict, seed: int, progress) -> None:
    import functools

    import flax.linen as nn
    from brax import envs
    from brax.training.agents.sac import networks, train

    train.train(
        environment=envs.get_environment(ENV, backend="mjx"),
        num_timesteps=setup["steps"],
        num_envs=setup["num_envs"],
        episode_length=1000,
        learning_rate=setup.get("lr", SAC["lr"]),
        discounting=SAC["gamma"],
        reward_scaling=SAC["reward_scaling"],
        batch_size=setup["batch"],
        grad_updates_per_step=setup["updates_per_step"],
        max_replay_size=setup["replay"],
        min_replay_size=setup["warmup"],
        normalize_observations=True,
        network_factory=functools.partial(
            networks.make_sac_networks, hidden_layer_sizes=SAC["hidden"], activation=nn.relu
        ),
        num_evals=EVALS,
        num_eval_envs=EVAL_EPISODES,
        deterministic_eval=True,
        seed=seed,
        progress_fn=progress,
    )


def _brax_figures(calls: list[tuple[float, int, dict]]) -> dict:
    """Final return, env-steps/s and compile seconds from Brax's progress calls.

    An evaluation at step 0 (the time to it is mostly compiling the evaluation and the reset,
    as ours counts its evaluation's compile), then one after each training epoch. For PPO the
    first two epochs each take about 13 s here, whatever their steps, and the later ones under
    1 s: the training epoch compiles on both of its first two calls. The rate is the median of
    the epochs after those two, the compile time what every epoch took beyond its steps at that
    rate, plus the time to the first evaluation.
    """
    epochs = [(step, m["training/walltime"], m["training/sps"]) for _, step, m in calls[1:]]
    rate = statistics.median(sps for _, _, sps in epochs[2:])
    compile_s, before_step, before_wall = calls[0][0], 0, 0.0
    for step, wall, _ in epochs:
        compile_s += max(0.0, (wall - before_wall) - (step - before_step) / rate)
        before_step, before_wall = step, wall
    return {
        "final_return": float(calls[-1][2]["eval/episode_reward"]),
        "env_steps": epochs[-1][0],
        "steps_per_s": float(rate),
        "compile_s": compile_s,
    }


def _restore_device_put_replicated() -> None:
    """Brax's PPO trainer still calls ``jax.device_put_replicated``, which this JAX no longer
    has: give it back as what it did, a copy of each leaf per device, stacked on a leading
    axis (one device here)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    try:
        jax.device_put_replicated  # noqa: B018
    except AttributeError:

        def replicated(tree, devices):
            mesh = jax.sharding.Mesh(np.array(devices), ("devices",))
            sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("devices"))

            def put(x):
                return jax.device_put(jnp.stack([jnp.asarray(x)] * len(devices)), sharding)

            return jax.tree.map(put, tree)

        jax.device_put_replicated = replicated


RUNNERS = {"ours": ours, "brax": brax}


def child(name: str, setup: dict, seed: int) -> None:
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    print("RESULT " + json.dumps(RUNNERS[name](setup, seed)), flush=True)


def measure(
    name: str, setup: str, steps: int, seed: int, auto_reset: str, lr: float | None
) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    command = [sys.executable, __file__, "--child", name, "--setup", setup]
    command += ["--steps", str(steps), "--seeds", str(seed), "--auto-reset", auto_reset]
    if lr is not None:
        command += ["--learning-rate", repr(lr)]
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{name} seed {seed} failed:\n{out.stderr[-3000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", choices=list(SETUPS), default="cpu")
    parser.add_argument("--steps", type=int, help="env steps (default: the setup's)")
    parser.add_argument(
        "--seeds", type=int, default=3, help="seeds 0 .. N-1 (the seed, with --child)"
    )
    parser.add_argument(
        "--auto-reset",
        choices=("first_state", "fresh"),
        default="first_state",
        help="how our Brax environments restart an episode: from their first state, as Brax's "
        "trainers do (default), or from a fresh reset",
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        help="both trainers' learning rate (default: the setup's, 3e-4); a tiny one (1e-9) keeps "
        "each policy at its initialisation while every update still runs, which compares the "
        "two frameworks' rates with the physics in the same regime (docs/notes.md)",
    )
    parser.add_argument("--child", choices=list(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--out", help="default: benchmarks/results/brax_training-<setup>.json")
    args = parser.parse_args()
    setup = {**SETUPS[args.setup], **({"steps": args.steps} if args.steps else {})}
    setup["auto_reset"] = args.auto_reset
    if args.learning_rate is not None:
        setup["lr"] = args.learning_rate
    if args.child:
        child(args.child, setup, args.seeds)
        return
    from jaxrl_fdg.profiling import write_report

    runs: dict[str, list[dict]] = {name: [] for name in RUNNERS}
    for seed in range(args.seeds):
        for name in RUNNERS:
            result = measure(
                name, args.setup, setup["steps"], seed, args.auto_reset, args.learning_rate
            )
            runs[name].append(result)
            print(
                f"{name:5} seed {seed}: return {result['final_return']:7.1f}  "
                f"{result['steps_per_s']:9,.0f} env-steps/s  compile {result['compile_s']:5.1f} s",
                flush=True,
            )
    results = {
        name: {
            **{k: statistics.median(r[k] for r in rs) for k in rs[0]},
            "runs": rs,
        }
        for name, rs in runs.items()
    }
    ratio = results["ours"]["steps_per_s"] / results["brax"]["steps_per_s"]
    results["ours_over_brax_steps_per_s"] = ratio
    print(f"ours / Brax env-steps/s (medians): {ratio:.2f}")
    suffix = "" if args.learning_rate is None else f"-lr{args.learning_rate:g}"
    out = args.out or Path(__file__).parent / "results" / f"brax_training-{args.setup}{suffix}.json"
    config = dict(env=ENV, setup=args.setup, seeds=args.seeds, **setup)
    write_report(out, "brax_training", config, results)


if __name__ == "__main__":
    main()

"""Where an Atari step's time goes: EnvPool's own stepping, the nature CNN's gradient inside the
learner's loop, PPO and PQN on ``envpool/Breakout-v5`` under ``host_env``, and short DQN and PQN
runs on Breakout with their return, throughput and resident memory.

- ``conv_in_loop``: four minibatch gradients of the nature torso (64 frames of 84×84×4 each) in a
  ``fori_loop``, as the learner runs them, with ``flax.linen.Conv`` and with
  ``networks.Conv`` (``strided_conv``: gradients as NHWC convolutions); and one gradient outside a
  loop. Medians of ``--repeats``.
- ``envpool_random``: EnvPool's Breakout-v5 stepped with random actions from numpy, no learning:
  the simulator's own rate on this machine, the ceiling of any agent.
- ``profiles``: PPO and PQN (nature torso) for a few iterations under ``--placement host_env
  --fusion step --profile sync``: per env step, the host stepping EnvPool (``env``), the actor's
  inference, the learner and the rest (dispatch, transfers, bookkeeping).
- ``runs``: DQN and PQN learning Breakout (EnvPool's episodic-life and reward-clip wrappers, as
  purejaxql's Atari runs, so an episode is a life), each in a fresh process: the training
  return in each tenth of the run, env-steps/s and peak resident memory (``ru_maxrss``).

    python benchmarks/atari_profile.py     # writes benchmarks/results/atari_profile.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg.fragments.networks import Conv, orthogonal
from jaxrl_fdg.profiling import write_report

ENV = "envpool/Breakout-v5"
LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))


class _FlaxTorso(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x / 255.0
        for features, size, stride in LAYERS:
            conv = nn.Conv(
                features, (size, size), (stride, stride), "VALID", kernel_init=orthogonal(2**0.5)
            )
            x = nn.relu(conv(x))
        return x.reshape(x.shape[0], -1)


class _OurTorso(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = x / 255.0
        for features, size, stride in LAYERS:
            x = nn.relu(Conv(features, size, stride, kernel_init=orthogonal(2**0.5))(x))
        return x.reshape(x.shape[0], -1)


def _timed(fn, *args, repeats):
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def conv_in_loop(repeats: int) -> dict:
    frames = jax.random.randint(jax.random.key(1), (256, 84, 84, 4), 0, 255).astype(jnp.uint8)
    out = {}
    for name, torso in (("flax.linen.Conv", _FlaxTorso()), ("networks.Conv", _OurTorso())):
        params = torso.init(jax.random.key(0), frames[:64])

        def loss(p, x, torso=torso):
            return jnp.mean(torso.apply(p, x) ** 2)

        def loop(p, frames):
            def body(i, p):
                x = jax.lax.dynamic_slice_in_dim(frames, i * 64, 64)
                g = jax.grad(loss)(p, x)
                return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g)

            return jax.lax.fori_loop(0, 4, body, p)

        out[name] = {
            "four_in_a_loop_s": _timed(jax.jit(loop), params, frames, repeats=repeats),
            "one_outside_s": _timed(jax.jit(jax.grad(loss)), params, frames[:64], repeats=repeats),
        }
    return out


def envpool_random(num_envs: int, seconds: float) -> dict:
    import envpool

    pool = envpool.make_gymnasium("Breakout-v5", num_envs=num_envs, seed=0)
    pool.reset()
    rng = np.random.default_rng(0)
    actions = lambda: rng.integers(0, pool.action_space.n, num_envs)  # noqa: E731
    for _ in range(20):
        pool.step(actions())
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        pool.step(actions())
        steps += num_envs
    return {"num_envs": num_envs, "steps_per_s": steps / (time.perf_counter() - start)}


PROFILE_HPARAMS = {
    "ppo": {"torso": "nature", "hidden_sizes": (512,)},
    "pqn": {"torso": "nature", "hidden_sizes": (512,)},
}


def profile(algo: str, num_envs: int, rollout_len: int, iterations: int) -> dict:
    config = rl.TrainConfig(
        algo=algo,
        env=ENV,
        placement="host_env",
        fusion="step",
        profile="sync",
        num_envs=num_envs,
        rollout_len=rollout_len,
        total_steps=num_envs * rollout_len * iterations,
        out=None,
        progress=False,
        hparams=PROFILE_HPARAMS[algo],
    )
    summary = rl.train(config).summary
    steps = summary["env_steps"]
    programs = summary["timing"]["programs"]
    per_step = {
        name: 1e6 * (row.get("device_s", 0.0) + row.get("dispatch_s", 0.0)) / steps
        for name, row in programs.items()
        if name in ("actor", "env", "learner", "keys", "stack")
    }
    run_s = summary["run_s"]
    per_step["rest"] = 1e6 * run_s / steps - sum(per_step.values())
    return {
        "num_envs": num_envs,
        "rollout_len": rollout_len,
        "env_steps": steps,
        "steps_per_s": summary["steps_per_s"],
        "compile_s": summary["compile_s"],
        "us_per_env_step": per_step,
    }


# A learning run in the process that measures it (argv: JSON of the TrainConfig's fields).
_CHILD = """
import json, resource, sys
import numpy as np
import jaxrl_fdg as rl
fields = json.loads(sys.argv[1])
result = rl.train(rl.TrainConfig(**fields))
# The training return in 10 windows of iterations: the episodes that ended in each.
windows = [
    (float(np.sum(r)) / float(np.sum(e)) if np.sum(e) else None)
    for r, e in zip(
        np.array_split(result.metrics["episode_return_sum"], 10),
        np.array_split(result.metrics["episodes"], 10),
    )
]
print(json.dumps({
    "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
    "return_by_tenth": windows,
    "env_steps": result.summary["env_steps"],
    "steps_per_s": result.summary["steps_per_s"],
    "compile_s": result.summary["compile_s"],
}))
"""

WRAPPERS = {"episodic_life": True, "reward_clip": True}
RUNS = {
    "pqn": dict(
        num_envs=32,
        rollout_len=32,
        hparams=dict(
            torso="nature",
            hidden_sizes=(512,),
            lr=2.5e-4,
            update_epochs=2,
            num_minibatches=8,
            q_lambda=0.65,
            epsilon_fraction=0.1,
            epsilon_end=0.01,
            reward_scale=1.0,
        ),
    ),
    "dqn": dict(
        num_envs=8,
        rollout_len=4,
        hparams=dict(
            torso="nature",
            hidden_sizes=(512,),
            buffer_size=100_000,
            batch_size=32,
            learning_starts=5_000,
            utd_ratio=0.25,
            lr=1e-4,
            n_step=3,
        ),
    ),
}


def learning_run(algo: str, steps: int) -> dict:
    setup = RUNS[algo]
    per_iteration = setup["num_envs"] * setup["rollout_len"]
    fields = {
        "algo": algo,
        "env": ENV,
        "env_options": WRAPPERS,
        "total_steps": steps // per_iteration * per_iteration,
        "log_every": max(steps // 20 // per_iteration, 1) * per_iteration,
        "out": None,
        "progress": False,
        "profile": "off",
        **setup,
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(fields)], capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{algo} failed:\n{done.stderr[-3000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "settings": fields}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["conv", "envpool", "profiles", "runs"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile-iterations", type=int, default=4)
    parser.add_argument("--run-steps", type=int, default=100_000)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "atari_profile.json")
    )
    args = parser.parse_args()
    results: dict = {}
    if "conv" in args.parts:
        results["conv_in_loop"] = conv_in_loop(args.repeats)
        print("conv_in_loop", results["conv_in_loop"], flush=True)
    if "envpool" in args.parts:
        results["envpool_random"] = [envpool_random(n, 3.0) for n in (8, 32)]
        print("envpool_random", results["envpool_random"], flush=True)
    if "profiles" in args.parts:
        results["profiles"] = {
            algo: profile(algo, 16, 32, args.profile_iterations) for algo in PROFILE_HPARAMS
        }
        print("profiles", json.dumps(results["profiles"]), flush=True)
    if "runs" in args.parts:
        results["runs"] = {algo: learning_run(algo, args.run_steps) for algo in RUNS}
        print("runs", json.dumps(results["runs"]), flush=True)
    write_report(args.out, "atari_profile", vars(args), results)


if __name__ == "__main__":
    main()

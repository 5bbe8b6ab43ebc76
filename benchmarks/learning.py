"""Longer learning runs of every algorithm, for the docs site's learning page: final return and
env-steps/s (compile apart), one configuration each, default fusion (``scan``).

    python benchmarks/learning.py                   # writes benchmarks/results/learning.json
    python benchmarks/learning.py --runs dqn,sac    # a subset

Each entry is also a command line: ``jaxrl-fdg train`` with the same flags reproduces it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jaxrl_fdg as rl
from jaxrl_fdg.profiling import write_report

# name -> (run settings, hyperparameters, where they come from)
RUNS: dict[str, tuple[dict, dict, str]] = {
    "ppo": (dict(algo="ppo", env="CartPole-v1"), {}, "PureJaxRL's CartPole PPO (the defaults)"),
    "a2c": (
        dict(algo="a2c", env="CartPole-v1", num_envs=8, rollout_len=5),
        {},
        "rl-baselines3-zoo a2c.yml CartPole-v1",
    ),
    "dqn": (
        dict(algo="dqn", env="CartPole-v1", total_steps=300_000, num_envs=4, rollout_len=4),
        {},
        "CleanRL dqn.py CartPole (the defaults)",
    ),
    "c51": (
        dict(algo="c51", env="CartPole-v1", total_steps=300_000, num_envs=4, rollout_len=4),
        {},
        "CleanRL c51.py CartPole with the paper's 51 atoms (the defaults)",
    ),
    "ppo-pendulum": (
        dict(algo="ppo", env="Pendulum-v1", total_steps=204_800, num_envs=4, rollout_len=1024),
        {
            "gamma": 0.9,
            "lr": 1e-3,
            "anneal_lr": False,
            "ent_coef": 0.0,
            "update_epochs": 10,
            "num_minibatches": 64,
            "vf_clip": float("inf"),
        },
        "rl-baselines3-zoo ppo.yml Pendulum-v1, without gSDE",
    ),
    **{
        algo: (
            dict(algo=algo, env="Pendulum-v1", total_steps=30_000, num_envs=4, rollout_len=8),
            {},
            "the defaults (CleanRL / the TD3 authors' settings)",
        )
        for algo in ("sac", "td3", "ddpg")
    },
}


def command(settings: dict, hparams: dict) -> str:
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in {**settings, **hparams}.items()]
    return "jaxrl-fdg train " + " ".join(flags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "learning.json"))
    args = parser.parse_args()
    results = {}
    for name in args.runs.split(","):
        settings, hparams, source = RUNS[name]
        print(f"{name}: {command(settings, hparams)}", flush=True)
        config = rl.TrainConfig(
            **settings, seed=args.seed, out=None, progress=False, hparams=hparams
        )
        s = rl.train(config).summary
        results[name] = {
            "command": command(settings, hparams),
            "source": source,
            **{k: s[k] for k in ("final_return", "env_steps", "steps_per_s", "run_s", "compile_s")},
        }
        print(
            f"  return {s['final_return']:.1f}  {s['steps_per_s']:,.0f} steps/s  "
            f"run {s['run_s']:.1f} s  compile {s['compile_s']:.1f} s",
            flush=True,
        )
    write_report(args.out, "learning", {"seed": args.seed}, results)


if __name__ == "__main__":
    main()

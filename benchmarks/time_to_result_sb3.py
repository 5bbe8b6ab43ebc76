"""One Stable-Baselines3 or sbx run for ``benchmarks/time_to_result.py``, in that tool's own
virtual environment: trains with :data:`SETTINGS` and prints ``TTR reached {...}`` once a
window's episodes reach the threshold, then stops.

    ~/.cache/jaxrl_fdg/ttr-venvs/sb3/bin/python benchmarks/time_to_result_sb3.py \\
        --tool sb3 --task cartpole --seed 0 --threshold 475 --window-steps 20480

The return checked is ``jaxrl-fdg``'s logged one: the mean return of the episodes that ended in
a window of ``--window-steps`` env steps, windows end to end from the start (``None`` for a
window in which none ended). A window closes at the first rollout's end at or past its last
step (PPO: every ``n_envs × n_steps`` env steps; SAC: every env step). Lines it prints: ``TTR
learning {}`` as training starts, ``TTR window {"steps", "episodes", "mean_return"}`` as each
window closes, ``TTR reached {...}`` (the same) at the first that reaches the threshold, ``TTR
finished {"steps"}`` if the training budget ran out first.

Settings: rl-baselines3-zoo's tuned hyperparameters (``hyperparams/ppo.yml`` CartPole-v1,
``hyperparams/sac.yml`` Pendulum-v1; ``lin_X`` is a value falling linearly from X to 0 over the
run) and their ``n_timesteps`` as the training budget. MinAtar has no zoo entry: PPO at the
PureJaxRL settings ``jaxrl-fdg`` uses (``benchmarks/simulator_curves.py``), on
``MinAtar/Breakout-v1`` with gymnax's rules (no sticky actions, episodes cut at 1,000 steps),
an MLP on the flattened board as float32.
"""

from __future__ import annotations

import argparse
import json
import sys

import gymnasium as gym
import numpy as np


def linear(start: float):
    """The zoo's ``lin_<start>``: SB3 calls it with the fraction of the run still to go."""
    return lambda progress_remaining: progress_remaining * start


SETTINGS = {
    "cartpole": dict(
        algo="PPO",
        env="CartPole-v1",
        n_envs=8,
        n_timesteps=100_000,
        hparams=dict(
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=linear(1e-3),
            clip_range=linear(0.2),
        ),
    ),
    "pendulum": dict(
        algo="SAC",
        env="Pendulum-v1",
        n_envs=1,
        n_timesteps=20_000,
        hparams=dict(learning_rate=1e-3),
    ),
    "minatar": dict(
        algo="PPO",
        env="MinAtar/Breakout-v1",
        env_kwargs=dict(sticky_action_prob=0.0, max_episode_steps=1000),
        n_envs=64,
        n_timesteps=1_000_000,
        hparams=dict(
            n_steps=128,
            batch_size=64 * 128 // 8,
            n_epochs=4,
            learning_rate=linear(5e-4),
            gamma=0.99,
            gae_lambda=0.95,
            clip_range=0.2,
            ent_coef=0.01,
            vf_coef=0.5,
            max_grad_norm=0.5,
        ),
    ),
}


class FlatFloatBoard(gym.ObservationWrapper):
    """MinAtar's ``[10, 10, C]`` boolean board as a flat float32 vector, for an MLP."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        size = int(np.prod(env.observation_space.shape))
        self.observation_space = gym.spaces.Box(0.0, 1.0, (size,), np.float32)

    def observation(self, observation):
        return np.asarray(observation, np.float32).reshape(-1)


def report(kind: str, payload: dict) -> None:
    print(f"TTR {kind} {json.dumps(payload)}", flush=True)


def make_callback(threshold: float, window_steps: int):
    from stable_baselines3.common.callbacks import BaseCallback

    class Threshold(BaseCallback):
        """Collects the returns of episodes as they end; as each window closes, their mean."""

        def __init__(self):
            super().__init__()
            self.returns: list[float] = []
            self.window_end = window_steps
            self.reached = False

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:  # SB3's Monitor wrapper, at an episode's end
                    self.returns.append(float(info["episode"]["r"]))
            return not self.reached

        def _on_rollout_end(self) -> None:
            if self.num_timesteps < self.window_end:
                return
            mean = sum(self.returns) / len(self.returns) if self.returns else None
            window = {"steps": self.num_timesteps, "episodes": len(self.returns)}
            window["mean_return"] = mean
            report("window", window)
            if mean is not None and mean >= threshold and not self.reached:
                self.reached = True
                report("reached", window)
            self.returns = []
            self.window_end = (self.num_timesteps // window_steps + 1) * window_steps

    return Threshold()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", choices=("sb3", "sbx"), required=True)
    parser.add_argument("--task", choices=tuple(SETTINGS), required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, required=True)
    parser.add_argument("--window-steps", type=int, required=True)
    args = parser.parse_args()
    s = SETTINGS[args.task]
    if args.tool == "sb3":
        import stable_baselines3 as lib
    else:
        import sbx as lib
    from stable_baselines3.common.env_util import make_vec_env

    wrapper = None
    if args.task == "minatar":
        import minatar.gym

        if s["env"] not in gym.registry:
            minatar.gym.register_envs()
        wrapper = FlatFloatBoard
    env = make_vec_env(
        s["env"],
        n_envs=s["n_envs"],
        seed=args.seed,
        env_kwargs=s.get("env_kwargs"),
        wrapper_class=wrapper,
    )
    model = getattr(lib, s["algo"])("MlpPolicy", env, seed=args.seed, verbose=0, **s["hparams"])
    report("learning", {})
    model.learn(
        total_timesteps=s["n_timesteps"], callback=make_callback(args.threshold, args.window_steps)
    )
    report("finished", {"steps": model.num_timesteps})
    sys.stdout.flush()


if __name__ == "__main__":
    main()

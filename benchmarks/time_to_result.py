"""Wall seconds from launch to a return: each default algorithm against Stable-Baselines3, sbx and
our hand-written programs, every run a fresh process, compile and start-up included.

    python benchmarks/time_to_result.py                       # 3 tasks × 6 tools × 3 seeds
    python benchmarks/time_to_result.py --tasks cartpole --tools jaxrl-fdg,sb3 --seeds 1
    python benchmarks/time_to_result.py --tools sb3,sbx --setup-only   # make the venvs only

**What is measured.** For each task, tool and seed: the wall seconds from the launch of a fresh
process until the parent process sees the first logged training return at or above the task's
threshold. Imports, set-up and compilation all count. A run that does not reach the threshold
within ``--budget-s`` wall seconds, or within its own training budget, has no time (``None``,
"> budget" in the table: the budget is a lower bound). A run that reaches it is killed then:
only the time is wanted. Every child is timed by this process's clock from its launch, its
output read every 50 ms.

**The return** is the same statistic for every tool: ``jaxrl-fdg``'s logged ``episode_return``,
the mean return of the episodes that ended in a window of env steps, windows end to end from the
start of training. A window spans what one of our rows spans on the task with ``log_every`` at
its default (about 1/25 of the run, :func:`window_steps`): 20,480 env steps on CartPole, 1,216 on
Pendulum, 40,960 on MinAtar. Where a tool acts in larger steps than that, a window closes at the
first check past its end. A return over windows of a few episodes is noisy and would cross a
threshold early by luck (sbx's PPO scores one 500 on CartPole within 15k env steps); windows of
the same span hold about as many episodes for every tool.

**Tasks** (:data:`TASKS`):

* ``cartpole``: CartPole-v1 to 475 (gymnasium's reward threshold); ours is
  ``jaxrl-fdg train --algo ppo``, nothing else set.
* ``pendulum``: Pendulum-v1 to −200 (a policy that does not swing up scores about −1,200, a
  solved one −150); ours is ``jaxrl-fdg train --algo sac``.
* ``minatar``: MinAtar Breakout to 5. Ours is PPO at the MinAtar settings of
  ``benchmarks/simulator_curves.py`` (``TASKS["minatar"]``: PureJaxRL's, 64 envs × 128 steps,
  1M env steps) with a 64-64 MLP torso on ``gymnax/Breakout-MinAtar``. The ``cnn`` run's
  curve (``results/curve-minatar.png``) crosses 5 near 250k env steps in both seeds and levels
  off at about 6.4 from 400k on, so 5 is reached well within its budget, past where it climbs
  fastest; 10 or 20 (PQN's range, ``results/minatar_references.json``) it never reaches.

**Tools** (the rows):

* ``jaxrl-fdg``: ``python -m jaxrl_fdg train --algo … --out DIR --run-name run --no-progress
  --seed S`` (for MinAtar, ``--config`` with the settings above) in a fresh process whose
  compilation cache starts empty (``XDG_CACHE_HOME`` a new folder, ``JAX_COMPILATION_CACHE_DIR``
  unset, as ``benchmarks/defaults.py``), run from that folder so that ``-m`` imports the
  install. Its rows (``metrics.jsonl``) come at host boundaries, one per window: the time is
  when the row is seen, so it can be late by up to a window's run time past the step where the
  return was reached. ``start_s``: launch until the training loop started (the first row's time
  less its own ``wall_s``), which holds the compile; ``compile_s`` only where the run ended on
  its own (``summary.json``).
* ``jaxrl-fdg-tuned``: the same command with ``--config`` the task's file in
  ``examples/configs/`` (``ppo-cartpole.toml``, ``sac-pendulum.toml``,
  ``ppo-minatar-breakout.toml``) and ``--log-every`` set so that its rows span the same window
  (:func:`tuned_log_every`), the rl-zoo3 baselines' counterpart: settings chosen for the task.
  MinAtar's file holds the settings its defaults row runs (PureJaxRL's, with the MLP), so its
  tuned row repeats that one and its warm row is what a second run of them meets.
* ``jaxrl-fdg-tuned-warm``: the tuned command again, its caches filled by one run of the same
  command that was stopped at its first row: JAX's compilation cache and the executable cache
  (:mod:`jaxrl_fdg.run.executables`, whose key holds the seed, which the command repeats). Both
  are on by default, so this is what every run of a configuration after its first meets.
* ``handwritten``: ``benchmarks/handwritten_ppo.py`` (CartPole) and ``handwritten_sac.py``
  (Pendulum), one ``lax.scan`` over the whole run at our defaults' sizes (:data:`HANDWRITTEN`);
  none for MinAtar ("—"). Each runs in a fresh process (this script with ``--_handwritten``)
  and reports only at its end, its episode returns summed per iteration; its time is
  interpolated: launch until its compile ended (as the parent saw it) + run seconds × (env
  steps at the end of the first window whose mean return reaches the threshold / all its env
  steps), the run's pace taken as even.
* ``sb3`` and ``sbx``: Stable-Baselines3 and sbx (its JAX port), each in its own virtual
  environment under ``~/.cache/jaxrl_fdg/ttr-venvs/<tool>``, made by this script on first use
  with the versions in :data:`BASELINES` (torch from its CPU wheels where that index answers,
  else from PyPI; what was installed is recorded in the results). Each run is
  ``benchmarks/time_to_result_sb3.py`` in a fresh process of that Python: rl-baselines3-zoo's
  tuned settings and budgets for CartPole-v1 (PPO, 100k env steps) and Pendulum-v1 (SAC, 20k);
  for MinAtar, which the zoo does not tune, PPO at the same PureJaxRL settings as ours on
  MinAtar's own ``MinAtar/Breakout-v1`` made to match gymnax's (no sticky actions, episodes cut
  at 1,000 steps), with an MLP on the flattened 10×10×4 board (SB3's image network needs frames
  of 36×36 or more, and sbx has no other). Ours takes the same 64-64 MLP (``torso = "mlp"``)
  in place of the settings' ``cnn`` torso, so the rows compare tools, not networks. A callback
  closes the windows at rollout ends (PPO: every ``n_envs × n_steps`` env steps, which divide
  our windows; SAC: every env step) and prints a line at the first that reaches the threshold;
  the time is when the parent reads it. ``start_s``: launch until ``learn()`` began (sbx
  compiles inside it, so its compile is not in ``start_s``).

**Results.** Per task and tool: each seed's seconds, env steps at the threshold, ``start_s``
and how far a run got (``progress``); the median over seeds, a missed run counted as beyond the
budget (a median that falls on one is ``None``, with ``lower_bound_s`` the budget); and the
ratios ``sb3 / jaxrl-fdg`` and ``sbx / jaxrl-fdg`` of the medians, and the same against each
of ours (``lower_bound`` where the baseline's median is the budget); the ceilings, each
baseline's median over the median of our ``start_s``: the ratio ours could reach at most if it
took no time to the threshold once started. The goal (issue 35): at least 10× against SB3
and 3× against sbx. The plot (``results/time_to_result.png``): one panel per task, a bar for
each tool's median and a point for each seed (a missed run a hollow triangle at the budget), log
seconds, the budget as a dashed line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import cli_args  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
VENVS = Path.home() / ".cache" / "jaxrl_fdg" / "ttr-venvs"
CHILD = ROOT / "benchmarks" / "time_to_result_sb3.py"
POLL_S = 0.05
GOALS = {"sb3": 10.0, "sbx": 3.0}  # issue 35: at least this many times slower than ours
# Ours: its defaults, the task's tuned config file, and that file again on a filled cache.
OURS = ("jaxrl-fdg", "jaxrl-fdg-tuned", "jaxrl-fdg-tuned-warm")
TOOLS = (*OURS, "handwritten", "sbx", "sb3")

# Each baseline's own environment; torch comes first, from the CPU wheels if they can be had.
TORCH = "torch==2.13.0"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BASELINES = {
    "sb3": ("stable-baselines3==2.9.2", "minatar==1.0.15"),
    "sbx": ("sbx-rl==0.28.0", "stable-baselines3==2.9.2", "minatar==1.0.15"),
}
REPORTED_PACKAGES = (
    "torch",
    "stable-baselines3",
    "sbx-rl",
    "jax",
    "jaxlib",
    "gymnasium",
    "minatar",
)


class Task(NamedTuple):
    env: str
    threshold: float
    algo: str  # ours
    handwritten: str | None  # benchmarks/handwritten_<name>.py, if there is one
    ours: str  # our settings, in words
    baseline: str  # what SB3 and sbx train (benchmarks/time_to_result_sb3.py), in words
    tuned: str | None  # our config file tuned for the task, from the repository's root


TASKS = {
    "cartpole": Task(
        "CartPole-v1",
        475.0,
        "ppo",
        "ppo",
        "`--algo ppo`, its defaults",
        "PPO, rl-zoo3's tuned CartPole-v1 (100k env steps)",
        "examples/configs/ppo-cartpole.toml",
    ),
    "pendulum": Task(
        "Pendulum-v1",
        -200.0,
        "sac",
        "sac",
        "`--algo sac`, its defaults",
        "SAC, rl-zoo3's tuned Pendulum-v1 (20k env steps)",
        "examples/configs/sac-pendulum.toml",
    ),
    "minatar": Task(
        "gymnax/Breakout-MinAtar",
        5.0,
        "ppo",
        None,
        "PPO, PureJaxRL's MinAtar settings, a 64-64 MLP on the flat board",
        "PPO, PureJaxRL's MinAtar settings, an MLP on the flat board",
        "examples/configs/ppo-minatar-breakout.toml",
    ),
}

# The plot's names for ours.
LABELS = {
    "jaxrl-fdg": "jaxrl-fdg\ndefaults",
    "jaxrl-fdg-tuned": "jaxrl-fdg\ntuned",
    "jaxrl-fdg-tuned-warm": "tuned,\nwarm cache",
}

# What each figure in the results means (written into them).
DEFINITIONS = {
    "seconds": "wall seconds from the process's launch until the parent saw the first logged "
    "return at or above the threshold (output read every 50 ms); None: not within the budget",
    "return": "the mean return of the episodes that ended in a window of window_env_steps env "
    "steps (our rows' span with log_every at its default), windows end to end from the start; "
    "the same for every tool",
    "handwritten seconds": "launch until its compile ended + run_s × env steps at the end of "
    "the first window at the threshold / all its env steps",
    "start_s": "launch until training began: ours, the first row's time less its wall_s "
    "(compile included); handwritten, until its compile ended; sb3/sbx, until learn() began",
    "median_s": "over seeds, a missed run counted as beyond the budget; None with lower_bound_s "
    "where the median falls on a missed run",
    "ratios": "baseline median / our median, for each of ours; lower_bound true where the "
    "baseline's median is the budget (it missed)",
    "ceilings": "baseline median / the median of our start_s: the ratio ours would reach if "
    "training to the threshold took no time once started",
    "warm": "jaxrl-fdg-tuned-warm: the tuned run again on the compilation and executable caches "
    "that one run of the same command filled (stopped at its first row), as every run after a "
    "configuration's first finds them",
}

# The hand-written programs at our defaults' sizes: make_train's keywords, env steps per iteration.
HANDWRITTEN = {
    "ppo": (dict(num_envs=4, rollout_len=128, total_steps=500_000), 4 * 128),
    "sac": (dict(num_envs=1, total_steps=30_000), 1),
}


# ---------------------------------------------------------------- pure helpers


def split_lines(buffer: bytes) -> tuple[list[str], bytes]:
    """The complete lines in ``buffer`` (decoded, without their newline) and the rest: a line
    another process is still writing ends without one."""
    *lines, rest = buffer.split(b"\n")
    return [line.decode() for line in lines if line.strip()], rest


def first_over(rows: Iterable[dict], threshold: float) -> dict | None:
    """The first metrics row whose ``episode_return`` is at or above ``threshold`` (a row whose
    window ended no episode has ``None``)."""
    for row in rows:
        value = row.get("episode_return")
        if value is not None and value >= threshold:
            return row
    return None


def window_crossing(
    ret_sum: Sequence[float], episodes: Sequence[float], threshold: float, window: int
) -> int | None:
    """Iterations done at the end of the first window whose mean episode return reaches
    ``threshold``, or ``None``. ``ret_sum[i]``, ``episodes[i]``: the returns summed over, and the
    number of, episodes that ended in iteration ``i``. Windows of ``window`` iterations end to
    end from the start, the last possibly shorter."""
    n = len(ret_sum)
    for start in range(0, n, window):
        count = float(sum(episodes[start : start + window]))
        if count and float(sum(ret_sum[start : start + window])) / count >= threshold:
            return min(start + window, n)
    return None


def interpolated_seconds(compiled_s: float, run_s: float, steps_at: int, total_steps: int) -> float:
    """A one-program run's time to the threshold: its compile ended ``compiled_s`` after launch
    and its ``total_steps`` took ``run_s`` at an even pace, so step ``steps_at`` came at
    ``compiled_s + run_s · steps_at / total_steps``."""
    return compiled_s + run_s * steps_at / total_steps


def median_of(seconds: Sequence[float | None], budget_s: float) -> dict[str, Any]:
    """The median of the seeds' seconds, a missed run (``None``) counted as beyond the budget: a
    median that falls on one is ``None`` with ``lower_bound_s`` the budget."""
    ordered = sorted(math.inf if s is None else s for s in seconds)
    if not ordered:
        return {"median_s": None, "lower_bound_s": None, "reached": 0}
    median = statistics.median(ordered)
    reached = sum(s is not None for s in seconds)
    if math.isinf(median):
        return {"median_s": None, "lower_bound_s": budget_s, "reached": reached}
    return {"median_s": median, "lower_bound_s": None, "reached": reached}


def ratio(baseline: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any] | None:
    """``baseline median / our median``; a lower bound where the baseline's median is one (it
    missed its budget); ``None`` where ours has no median."""
    if ours.get("median_s") is None:
        return None
    if baseline.get("median_s") is not None:
        return {"value": baseline["median_s"] / ours["median_s"], "lower_bound": False}
    if baseline.get("lower_bound_s") is not None:
        return {"value": baseline["lower_bound_s"] / ours["median_s"], "lower_bound": True}
    return None


def progress(windows: Sequence[tuple[int, float | None]]) -> dict[str, Any] | None:
    """How far a run got, from its (env steps, mean return) windows: the last window's env
    steps and the best mean return (a window that ended no episode has ``None``)."""
    if not windows:
        return None
    returns = [r for _, r in windows if r is not None]
    return {"env_steps": windows[-1][0], "best_return": max(returns) if returns else None}


def marker(line: str) -> tuple[str, dict] | None:
    """A child's report line, ``TTR <kind> <json>``: (kind, payload), else ``None``."""
    if not line.startswith("TTR "):
        return None
    kind, _, payload = line[4:].partition(" ")
    return kind, json.loads(payload) if payload else {}


# ---------------------------------------------------------------- watching a child


class Tail:
    """The new complete lines of a file another process appends to."""

    def __init__(self, path: Path):
        self.path, self.offset, self.rest = path, 0, b""

    def lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        lines, self.rest = split_lines(self.rest + data)
        return lines


class Watched(NamedTuple):
    hit: Any  # what ``check`` returned, or None
    seconds: float | None  # launch until ``check`` first returned it
    stop: str  # reached | wall budget | training budget spent | failed (exit N)
    log: str  # the end of the child's output


def watch(
    command: list[str],
    *,
    cwd: Path,
    env: dict,
    budget_s: float,
    check: Callable,
    poll_s: float = POLL_S,
) -> Watched:
    """Launch ``command`` and call ``check(elapsed)`` every ``poll_s`` seconds until it returns
    something (then kill the child: only the time is wanted), the child exits, or ``budget_s``
    passes. The child's output goes to ``cwd/child.log``. A time found is late by up to
    ``poll_s``."""
    log_path = cwd / "child.log"
    with open(log_path, "wb") as log:
        start = time.monotonic()
        child = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            while True:
                elapsed = time.monotonic() - start
                hit = check(elapsed)
                if hit is not None:
                    return Watched(hit, elapsed, "reached", _end(log_path))
                code = child.poll()
                if code is not None:
                    hit = check(time.monotonic() - start)
                    stop = "training budget spent" if code == 0 else f"failed (exit {code})"
                    if hit is not None:
                        return Watched(hit, time.monotonic() - start, "reached", _end(log_path))
                    return Watched(None, None, stop, _end(log_path))
                if elapsed > budget_s:
                    return Watched(None, None, "wall budget", _end(log_path))
                time.sleep(poll_s)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)  # its own session: the child and its threads
            child.wait()


def _end(path: Path, chars: int = 1500) -> str:
    return path.read_text(errors="replace")[-chars:]


def _environ(cache: Path | None = None) -> dict:
    """The children's environment: no persistent JAX compilation cache; ``cache`` as the user
    cache folder (ours keeps its compilation cache there: an empty one compiles everything).
    Python writes bytecode, as it does by default (``PYTHONDONTWRITEBYTECODE`` set here would
    have every process compile the framework's sources again: an editable install is
    byte-compiled by its first import, not by pip)."""
    dropped = ("JAX_COMPILATION_CACHE_DIR", "PYTHONDONTWRITEBYTECODE")
    environ = {k: v for k, v in os.environ.items() if k not in dropped}
    if cache is not None:
        environ["XDG_CACHE_HOME"] = str(cache)
    environ["PYTHONUNBUFFERED"] = "1"
    return environ


# ---------------------------------------------------------------- the tools


def run_ours(task: str, seed: int, budget_s: float, tool: str = "jaxrl-fdg") -> dict:
    """``jaxrl-fdg train`` in a fresh process, until a row of its ``metrics.jsonl`` reaches the
    threshold: with the task's defaults (``tool`` ``jaxrl-fdg``) or its tuned config file, its
    rows spanning the defaults' window; the compilation cache empty, or (``…-warm``) filled by
    one run of the same command stopped at its first row."""
    t = TASKS[task]
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as cache:
        out = Path(out)
        command = [sys.executable, "-m", "jaxrl_fdg", "train", "--algo", t.algo]
        if task == "minatar" and tool == "jaxrl-fdg":
            config = out / "minatar.json"
            config.write_text(json.dumps(our_settings(task)))
            command += ["--config", str(config)]
        if tool != "jaxrl-fdg":
            command += ["--config", str(ROOT / t.tuned), "--log-every", str(tuned_log_every(task))]
        command += ["--out", str(out), "--no-progress", "--seed", str(seed), "--run-name"]
        if tool.endswith("-warm"):
            prime = Tail(out / "prime" / "metrics.jsonl")

            def first_row(elapsed: float) -> list[str] | None:
                return prime.lines() or None

            watch(
                command + ["prime"],
                cwd=out,
                env=_environ(Path(cache)),
                budget_s=budget_s,
                check=first_row,
            )
        command.append("run")
        tail, rows, seen = Tail(out / "run" / "metrics.jsonl"), [], {}

        def check(elapsed: float) -> dict | None:
            for line in tail.lines():
                rows.append(json.loads(line))
                seen.setdefault("first", (elapsed, rows[0]))
            return first_over(rows, t.threshold)

        # cwd: not the repository, whose jaxrl_fdg/ folder `-m` would import before the install
        watched = watch(command, cwd=out, env=_environ(Path(cache)), budget_s=budget_s, check=check)
        summary = out / "run" / "summary.json"
        compile_s = json.loads(summary.read_text())["compile_s"] if summary.exists() else None
    first = seen.get("first")
    return {
        "seed": seed,
        "seconds": watched.seconds,
        "stop": watched.stop,
        "env_steps": watched.hit["step"] if watched.hit else None,
        "start_s": first[0] - first[1]["wall_s"] if first else None,
        "compile_s": compile_s,
        "row_env_steps": rows[0]["step"] if rows else None,
        "progress": progress([(r["step"], r["episode_return"]) for r in rows]),
        **({"log": watched.log} if watched.stop.startswith("failed") else {}),
    }


def our_settings(task: str) -> dict[str, Any]:
    """Our run's settings on ``task``: the algorithm's defaults, but for MinAtar's."""
    if task != "minatar":
        return {"algo": TASKS[task].algo}
    import simulator_curves  # the MinAtar settings, from where the curve was measured

    settings = simulator_curves.TASKS["minatar"]
    # the baselines' network: a 64-64 MLP on the flat board (SB3's image network needs larger
    # frames), so that the rows compare the tools rather than the networks
    return {"algo": "ppo", **settings, "hparams": {**settings["hparams"], "torso": "mlp"}}


def tuned_log_every(task: str) -> int:
    """``--log-every`` for the task's tuned config file: its rows span :func:`window_steps`."""
    import jaxrl_fdg as rl
    from jaxrl_fdg.config import files

    path = ROOT / TASKS[task].tuned
    config = rl.resolve(files.from_mapping(files.load(path), str(path))).config
    every, rest = divmod(window_steps(task), config.steps_per_iteration)
    if rest:
        raise ValueError(f"{path}: its iterations do not divide the window of {task}")
    return every


def window_steps(task: str) -> int:
    """The env steps each of our rows spans on ``task`` (``log_every`` at its default): every
    tool's return is measured over windows of this many env steps."""
    import jaxrl_fdg as rl

    config = rl.resolve(rl.TrainConfig(**our_settings(task))).config
    return config.boundary_every * config.steps_per_iteration


def run_handwritten(task: str, seed: int, budget_s: float, window: int) -> dict:
    """The hand-written program in a fresh process (:func:`handwritten_child`); its time to the
    threshold interpolated (:func:`interpolated_seconds`)."""
    name = TASKS[task].handwritten
    command = [sys.executable, str(Path(__file__).resolve()), "--_handwritten", name]
    command += ["--seed", str(seed), "--_threshold", str(TASKS[task].threshold)]
    command += ["--_window", str(window)]
    with tempfile.TemporaryDirectory() as folder:
        tail, marks = Tail(Path(folder) / "child.log"), {}

        def check(elapsed: float) -> dict | None:
            for line in tail.lines():
                mark = marker(line)
                if mark:
                    marks.setdefault(mark[0], (elapsed, mark[1]))
            return marks.get("done")

        watched = watch(command, cwd=Path(folder), env=_environ(), budget_s=budget_s, check=check)
    record = {"seed": seed, "seconds": None, "stop": watched.stop, "env_steps": None}
    if "compiled" in marks:
        record["start_s"] = marks["compiled"][0]
    if watched.hit is None:
        return {**record, **({"log": watched.log} if watched.stop.startswith("failed") else {})}
    done = watched.hit[1]
    record.update(compile_s=done["compile_s"], run_s=done["run_s"], env_steps=done["steps_at"])
    record["row_env_steps"] = done["window_steps"]
    if done["steps_at"] is None:
        record["stop"] = "training budget spent"
    else:
        record["seconds"] = interpolated_seconds(
            marks["compiled"][0], done["run_s"], done["steps_at"], done["total_steps"]
        )
    return record


def handwritten_child(name: str, seed: int, threshold: float, window: int) -> None:
    """In the child: compile the hand-written program, say so, run it, report its crossing."""
    import importlib

    import jax
    import numpy as np

    kwargs, per_iteration = HANDWRITTEN[name]
    train = importlib.import_module(f"handwritten_{name}").make_train(**kwargs)
    key = jax.random.key(seed)
    start = time.perf_counter()
    compiled = jax.jit(train).lower(key).compile()
    compile_s = time.perf_counter() - start
    print("TTR compiled", flush=True)
    start = time.perf_counter()
    _, ret_sum, episodes = jax.block_until_ready(compiled(key))
    run_s = time.perf_counter() - start
    ret_sum, episodes = np.asarray(ret_sum), np.asarray(episodes)
    at = window_crossing(ret_sum, episodes, threshold, max(1, window // per_iteration))
    report = {
        "compile_s": compile_s,
        "run_s": run_s,
        "steps_at": None if at is None else at * per_iteration,
        "total_steps": len(ret_sum) * per_iteration,
        "window_steps": max(1, window // per_iteration) * per_iteration,
    }
    print("TTR done " + json.dumps(report), flush=True)


def run_baseline(
    tool: str, task: str, seed: int, budget_s: float, python: Path, window: int
) -> dict:
    """``time_to_result_sb3.py`` under ``tool``'s own Python, until it says it reached the
    threshold."""
    command = [str(python), str(CHILD), "--tool", tool, "--task", task, "--seed", str(seed)]
    command += ["--threshold", str(TASKS[task].threshold), "--window-steps", str(window)]
    with tempfile.TemporaryDirectory() as folder:
        tail, marks, windows = Tail(Path(folder) / "child.log"), {}, []

        def check(elapsed: float) -> dict | None:
            for line in tail.lines():
                mark = marker(line)
                if mark and mark[0] == "window":
                    windows.append(mark[1])
                elif mark:
                    marks.setdefault(mark[0], (elapsed, mark[1]))
            return marks.get("reached")

        watched = watch(command, cwd=Path(folder), env=_environ(), budget_s=budget_s, check=check)
    record = {
        "seed": seed,
        "seconds": watched.seconds,
        "stop": watched.stop,
        "env_steps": watched.hit[1]["steps"] if watched.hit else None,
        "start_s": marks["learning"][0] if "learning" in marks else None,
        "compile_s": None,
        "progress": progress([(w["steps"], w["mean_return"]) for w in windows]),
        "row_env_steps": window,
    }
    if watched.stop.startswith("failed"):
        record["log"] = watched.log
    return record


# ---------------------------------------------------------------- the baselines' environments


def ensure_venv(tool: str) -> dict:
    """``tool``'s virtual environment under :data:`VENVS`, made (torch, then :data:`BASELINES`)
    unless one with these versions is there: what was installed, how long it took, its size;
    ``ok`` false with ``error`` where an install failed."""
    root = VENVS / tool
    stamp = root / "ttr-install.json"
    wanted = [TORCH, *BASELINES[tool]]
    if stamp.exists():
        info = json.loads(stamp.read_text())
        if info.get("ok") and info.get("requested") == wanted:
            return info
    shutil.rmtree(root, ignore_errors=True)
    print(f"{tool}: making {root} ({', '.join(wanted)}); this takes minutes", flush=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    python = root / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    info: dict[str, Any] = {"ok": False, "requested": wanted, "python": str(python)}
    attempts = (
        ["--index-url", TORCH_CPU_INDEX, "--retries", "1", "--timeout", "30", TORCH],
        [TORCH],  # PyPI (and whatever index pip is configured with)
    )
    for flags in attempts:
        done = subprocess.run(pip + flags, capture_output=True, text=True)
        if done.returncode == 0:
            info["torch_install"] = "pip install " + " ".join(flags)
            break
    else:
        info["error"] = f"torch did not install: {done.stderr.strip()[-1000:]}"
        return _stamp(stamp, info)
    done = subprocess.run(pip + list(BASELINES[tool]), capture_output=True, text=True)
    if done.returncode != 0:
        info["error"] = f"{' '.join(BASELINES[tool])} did not install: {done.stderr[-1000:]}"
        return _stamp(stamp, info)
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True)
    versions = dict(line.split("==", 1) for line in freeze.stdout.splitlines() if "==" in line)
    info.update(
        ok=True,
        install_s=time.perf_counter() - start,
        size_mb=sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 1e6,
        versions={
            name: v
            for name, v in versions.items()
            if name.lower().replace("_", "-") in REPORTED_PACKAGES
        },
    )
    return _stamp(stamp, info)


def _stamp(path: Path, info: dict) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info, indent=2) + "\n")
    return info


# ---------------------------------------------------------------- measuring and reporting


def measure(task: str, tool: str, seeds: int, budget_s: float, venvs: dict) -> dict:
    """Every seed of ``tool`` on ``task``, one after the other; their seconds and median."""
    t = TASKS[task]
    if tool == "handwritten" and t.handwritten is None:
        return {"skipped": "no hand-written program for this task"}
    if tool in OURS[1:] and t.tuned is None:
        return {"skipped": "no tuned config file for this task"}
    settings = {
        "jaxrl-fdg": t.ours,
        "jaxrl-fdg-tuned": f"`--config {t.tuned}`",
        "jaxrl-fdg-tuned-warm": f"`--config {t.tuned}`, a second run (warm compilation cache)",
        "handwritten": f"one `lax.scan`, `benchmarks/handwritten_{t.handwritten}.py`",
    }.get(tool, t.baseline)
    if tool in BASELINES:
        if not venvs[tool].get("ok"):
            return {"skipped": f"{tool} did not install: {venvs[tool].get('error', '')[:300]}"}
        python = Path(venvs[tool]["python"])
    window = window_steps(task)
    runs = []
    for seed in range(seeds):
        if tool in OURS:
            run = run_ours(task, seed, budget_s, tool)
        elif tool == "handwritten":
            run = run_handwritten(task, seed, budget_s, window)
        else:
            run = run_baseline(tool, task, seed, budget_s, python, window)
        seconds = "—" if run["seconds"] is None else f"{run['seconds']:.1f} s"
        print(
            f"{task:<9} {tool:<20} seed {seed}: {seconds} ({run['stop']}), env steps "
            f"{run['env_steps']}, start {run.get('start_s')}",
            flush=True,
        )
        runs.append(run)
    return {"settings": settings, "runs": runs, **median_of([r["seconds"] for r in runs], budget_s)}


def _measured_ours(tools: dict[str, dict]) -> list[str]:
    return [t for t in OURS if "runs" in tools.get(t, {})]


def ratios(tools: dict[str, dict]) -> dict[str, Any]:
    """``baseline / ours`` of the medians, for each baseline and each of ours measured."""
    out = {}
    for mine in _measured_ours(tools):
        for tool in ("sb3", "sbx", "handwritten"):
            if "runs" in tools.get(tool, {}):
                out[f"{tool} / {mine}"] = ratio(tools[tool], tools[mine])
    return out


def ceilings(tools: dict[str, dict]) -> dict[str, float]:
    """``baseline median / median of our start_s``: the most each of ours could reach against
    each baseline if, once started, it took no time to the threshold."""
    out = {}
    for mine in _measured_ours(tools):
        starts = [r["start_s"] for r in tools[mine]["runs"] if r.get("start_s") is not None]
        for tool in ("sb3", "sbx"):
            if starts and tools.get(tool, {}).get("median_s") is not None:
                out[f"{tool} / {mine}"] = tools[tool]["median_s"] / statistics.median(starts)
    return out


def plot(results: dict, budget_s: float, path: Path) -> None:
    """One panel per task, on one log scale of seconds: each tool's median as a bar (hatched
    where it is the budget, a lower bound) and each seed as a point (a missed run a hollow
    triangle at the budget); the budget as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(results)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False, sharey=True)
    for ax, entry in zip(axes[0], results.values(), strict=True):
        tools = [t for t in TOOLS if t in entry["tools"]]
        for i, tool in enumerate(tools):
            x = entry["tools"][tool]
            if "runs" not in x:
                ax.text(i, 2.0, "none", ha="center", color="0.4")
                continue
            missed = x["median_s"] is None
            median = x["lower_bound_s"] if missed else x["median_s"]
            color = f"C{OURS.index(tool)}" if tool in OURS else "0.75"
            ax.bar(i, median, color=color, width=0.6, hatch="//" if missed else None)
            top = max([median] + [r["seconds"] or 0 for r in x["runs"]])
            ax.text(i, top * 1.15, ">" * missed + f"{median:.3g} s", ha="center", fontsize=8)
            for j, run in enumerate(x["runs"]):
                dx = (j - (len(x["runs"]) - 1) / 2) * 0.12
                if run["seconds"] is None:
                    ax.plot(i + dx, budget_s, "^", mfc="none", color="C3")
                else:
                    ax.plot(i + dx, run["seconds"], "o", color="k", ms=4)
        ax.axhline(budget_s, ls="--", color="C3", lw=1)
        ax.set_xticks(range(len(tools)), [LABELS.get(t, t) for t in tools], fontsize=8)
        threshold = f"{entry['threshold']:g}".replace("-", "\N{MINUS SIGN}")
        ax.set_title(f"{entry['env']} to {threshold}", fontsize=10)
    axes[0][0].set_yscale("log")
    axes[0][0].set_ylim(1.0, budget_s * 2)
    axes[0][0].set_ylabel("seconds from launch to the return")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 per task and tool")
    parser.add_argument("--budget-s", type=float, default=600.0, help="wall seconds per run")
    parser.add_argument("--out", default=str(RESULTS / "time_to_result.json"))
    parser.add_argument("--plot", default=str(RESULTS / "time_to_result.png"))
    parser.add_argument("--setup-only", action="store_true", help="make the venvs, then stop")
    parser.add_argument("--_handwritten", help=argparse.SUPPRESS)
    parser.add_argument("--_threshold", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--_window", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._handwritten:
        handwritten_child(args._handwritten, args.seed, args._threshold, args._window)
        return
    tasks = cli_args.comma_list(parser, "--tasks", args.tasks, TASKS)
    tools = cli_args.comma_list(parser, "--tools", args.tools, TOOLS)
    venvs = {tool: ensure_venv(tool) for tool in tools if tool in BASELINES}
    for tool, info in venvs.items():
        print(f"{tool}: {'ready' if info['ok'] else info['error']}", flush=True)
    if args.setup_only:
        return

    from jaxrl_fdg.profiling import write_report

    load_before = os.getloadavg()
    results = {}
    for task in tasks:
        measured = {tool: measure(task, tool, args.seeds, args.budget_s, venvs) for tool in tools}
        t = TASKS[task]
        results[task] = {
            "env": t.env,
            "threshold": t.threshold,
            "window_env_steps": window_steps(task),
            "tools": measured,
            "ratios": ratios(measured),
            "ceilings": ceilings(measured),
        }
    load_after = os.getloadavg()
    plot(results, args.budget_s, Path(args.plot))
    config = {
        "seeds": args.seeds,
        "budget_s": args.budget_s,
        "goals": {f"{tool} / jaxrl-fdg": goal for tool, goal in GOALS.items()},
        "tuned_log_every": {t: tuned_log_every(t) for t in tasks if TASKS[t].tuned},
        "tasks": {task: TASKS[task]._asdict() for task in tasks},
        "tools": tools,
        "poll_s": POLL_S,
        "venvs": venvs,
    }
    write_report(
        args.out,
        "time_to_result",
        config,
        results,
        image=Path(args.plot).name,
        load_average={"before": list(load_before), "after": list(load_after)},
        definitions=DEFINITIONS,
    )


if __name__ == "__main__":
    main()

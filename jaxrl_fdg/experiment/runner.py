"""Running an experiment: the cells not done, each as its own ``jaxrl-fdg train`` process, a
few at a time on this machine or as jobs on a cluster.

Each cell's command is the same wherever it runs: ``train --config DIR/configs/CELL.toml --out
DIR/cells --run-name CELL`` for a cell not started, ``train --resume DIR/cells/CELL`` for one
with a checkpoint. So a cell run by hand, by the local executor or by SLURM computes the same
bits, and an experiment stopped in any way (Ctrl-C, SIGTERM, ``kill -9``, a node lost) goes on
from each cell's last checkpoint when the command is run again.

Executors:

- ``local`` (default): ``--jobs N`` processes at once. On a machine with several GPUs each
  process sees one of them (``CUDA_VISIBLE_DEVICES``), and ``--jobs`` defaults to their count.
  Each child is tied to this process (Linux): if this one dies, even by ``kill -9``, they are
  sent SIGTERM and stop at their next safe point with a checkpoint.
- ``submitit-local`` and ``slurm``: one submitit job per cell (the ``slurm`` extra installs
  submitit); ``slurm`` submits them as one job array to the partition given.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.experiment import spec
from jaxrl_fdg.experiment.folder import ExperimentFolder, write_status
from jaxrl_fdg.run import signals

EXECUTORS = ("local", "submitit-local", "slurm")
_POLL_S = 0.5
RELEASE_WAIT_S = 120.0  # how long a cell another process holds is waited for


@dataclasses.dataclass(frozen=True)
class Options:
    """How to run the cells. ``slurm``: submitit's ``slurm_*`` parameters (partition, time in
    minutes, gpus per node, cpus per task, and any other as ``additional``)."""

    jobs: int | None = None
    executor: str = "local"
    devices: tuple[str, ...] | None = None  # None: found (CUDA_VISIBLE_DEVICES, the driver)
    new: bool = False
    slurm: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Outcome:
    """What a call of :func:`run` did: the cells in each final state, and the ones it ran."""

    folder: Path
    states: dict[str, str]
    ran: list[str]
    left_out: list[spec.LeftOut]

    @property
    def complete(self) -> bool:
        return all(state == "done" for state in self.states.values())


def run(
    experiment: spec.Experiment | str | Path,
    out: str | Path,
    options: Options | None = None,
    *,
    echo: Callable[[str], None] = print,
) -> Outcome:
    """Run ``experiment`` (a parsed one, or a file or suite name) into the folder ``out``:
    check every cell, record them, then run each cell not done. Running it again skips the
    cells done, resumes those with a checkpoint and starts the rest."""
    options = options or Options()
    if options.executor not in EXECUTORS:
        raise ConfigError(f"--executor {options.executor!r} is not one of {', '.join(EXECUTORS)}")
    if options.jobs is not None and options.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {options.jobs}")
    if not isinstance(experiment, spec.Experiment):
        experiment = spec.load(experiment)
    cells, left_out = spec.cells(experiment)
    executor = _executor(options)  # a missing submitit stops here, before anything is written
    folder = ExperimentFolder(out)
    lock = folder.lock()  # one command per experiment folder at a time
    try:
        return _run(experiment, folder, cells, left_out, executor, options, echo)
    finally:
        lock.release()


def _run(experiment, folder, cells, left_out, executor, options, echo) -> Outcome:
    replaced = folder.record(experiment, cells, left_out, new=options.new)
    for item in left_out:
        echo(f"left out {item.name}: {item.reason}")
    for name in replaced:
        echo(f"{name}: its definition changed; its old folder moved to replaced/")
    states = _states_once_released(folder, [c.name for c in cells], echo)
    todo = [c.name for c in cells if states[c.name] != "done"]
    done = len(cells) - len(todo)
    echo(
        f"experiment {experiment.name}: {len(cells)} cells ({done} done, "
        f"{sum(states[n] == 'resumable' for n in todo)} to resume, "
        f"{sum(states[n] != 'resumable' for n in todo)} to start) in {folder.path}"
    )
    progress = _Progress(len(cells), done, echo)
    try:
        executor(folder, todo, progress)
    finally:
        write_status(folder.status(), folder.path / "status.json")
    final = {c.name: folder.state(c.name) for c in cells}
    failed = [name for name, state in final.items() if state != "done"]
    if failed:
        echo(f"not done: {', '.join(f'{n} ({final[n]}, log: logs/{n}.log)' for n in failed)}")
    return Outcome(folder.path, final, todo, left_out)


def _states_once_released(
    folder: ExperimentFolder, names: list[str], echo: Callable[[str], None]
) -> dict[str, str]:
    """Each cell's state, once no process holds a cell's folder. The cells of an experiment
    killed a moment ago are still writing their last checkpoint (they were sent SIGTERM as it
    died): waited for, up to :data:`RELEASE_WAIT_S`; a holder longer than that is another
    process's run, and refused."""
    deadline = time.monotonic() + RELEASE_WAIT_S
    said = False
    while True:
        states = {name: folder.state(name) for name in names}
        busy = [name for name, state in states.items() if state == "running"]
        if not busy:
            return states
        if time.monotonic() > deadline:
            raise ConfigError(
                f"cells {', '.join(busy)} of {str(folder.path)!r} are held by another process "
                "(jaxrl-fdg experiment status shows them); wait for it to finish or stop it"
            )
        if not said:
            echo(f"waiting for {', '.join(busy)}: another process holds them (a cell stopping?)")
            said = True
        time.sleep(_POLL_S)


def status(out: str | Path) -> list[dict[str, Any]]:
    """Each recorded cell's row (state, steps, final return, run seconds), read from files."""
    return ExperimentFolder(out).status()


class _Progress:
    """One line per event: ``[3/8 done · 2 running · 1 failed] CELL done in 41 s · ETA 2 min``;
    the ETA is the mean time of the cells finished so far, over the cells left and the slots."""

    def __init__(self, total: int, done: int, echo: Callable[[str], None]):
        self.total, self.done, self.running, self.failed = total, done, 0, 0
        self.durations: list[float] = []
        self.slots = 1
        self.echo = echo

    def started(self, name: str, how: str) -> None:
        self.running += 1
        self.echo(f"{self._counts()} {name}: {how}")

    def ended(self, name: str, ok: bool, seconds: float, detail: str = "") -> None:
        self.running -= 1
        if ok:
            self.done += 1
            self.durations.append(seconds)
        else:
            self.failed += 1
        what = "done" if ok else "failed"
        self.echo(f"{self._counts()} {name}: {what} in {_duration(seconds)}{detail}{self._eta()}")

    def _counts(self) -> str:
        failed = f" · {self.failed} failed" if self.failed else ""
        return f"[{self.done}/{self.total} done · {self.running} running{failed}]"

    def _eta(self) -> str:
        left = self.total - self.done - self.failed
        if not self.durations or left <= 0:
            return ""
        mean = sum(self.durations) / len(self.durations)
        return f" · ETA {_duration(mean * left / max(1, self.slots))}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


# -- executors --------------------------------------------------------------------------------


def _executor(options: Options) -> Callable[[ExperimentFolder, list[str], _Progress], None]:
    if options.executor == "local":
        devices = options.devices if options.devices is not None else visible_gpus()
        jobs = options.jobs or max(1, len(devices))
        return lambda folder, todo, progress: _run_local(folder, todo, progress, jobs, devices)
    # Found, not imported: importing submitit reconfigures logging (dictConfig), closing every
    # handler the process had; it is imported when the jobs are submitted.
    if importlib.util.find_spec("submitit") is None:
        raise ConfigError(
            f"--executor {options.executor} needs submitit: pip install 'jaxrl-fdg[slurm]'"
        )
    if options.executor == "slurm":
        missing = [tool for tool in ("sbatch", "srun") if shutil.which(tool) is None]
        if missing:
            raise ConfigError(
                "--executor slurm submits with SLURM's sbatch and srun, not on this machine's "
                f"PATH (missing: {', '.join(missing)}): run the command on the cluster's login "
                "node (--executor submitit-local runs the same jobs here)"
            )
    return lambda folder, todo, progress: _run_submitit(folder, todo, progress, options)


def visible_gpus() -> tuple[str, ...]:
    """The NVIDIA GPUs this process may use, without starting a JAX backend (which would take
    their memory): ``CUDA_VISIBLE_DEVICES`` if set, else the driver's list; none without a
    driver."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return tuple(d.strip() for d in given.split(",") if d.strip() and d.strip() != "-1")
    try:
        count = len(list(Path("/proc/driver/nvidia/gpus").iterdir()))
    except OSError:
        return ()
    return tuple(str(i) for i in range(count))


def command(argv: Sequence[str]) -> list[str]:
    """The process that runs ``jaxrl-fdg ARGV`` with this interpreter."""
    return [sys.executable, "-m", "jaxrl_fdg", *argv]


def _run_local(
    folder: ExperimentFolder,
    todo: list[str],
    progress: _Progress,
    jobs: int,
    devices: Sequence[str],
) -> None:
    progress.slots = jobs
    waiting = list(todo)
    running: dict[str, tuple[subprocess.Popen, float, str | None, Any, dict]] = {}
    free = list(devices)
    parent = os.getpid()
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                name = waiting.pop(0)
                running[name] = _start(folder, name, free.pop(0) if free else None, parent)
                how = "resuming" if "--resume" in running[name][4]["argv"] else "starting"
                progress.started(name, how)
            time.sleep(_POLL_S)
            for name in [n for n, (p, *_) in running.items() if p.poll() is not None]:
                proc, began, device, log, entry = running.pop(name)
                log.close()
                if device is not None:
                    free.append(device)
                _ended(folder, progress, name, proc.returncode, time.monotonic() - began, entry)
    except BaseException:
        try:
            _stop_children(running)
        finally:
            for proc, _, _, _, entry in running.values():
                if proc.returncode is not None:
                    _record_end(folder, entry, proc.returncode)
        raise


def _start(folder: ExperimentFolder, name: str, device: str | None, parent: int):
    """Start the cell's process (on ``device``, a GPU id, where given); its attempt recorded.
    ``(process, start time, device, log file, attempt)``."""
    argv = folder.start_argv(name)
    env = {**os.environ, signals.PARENT_VARIABLE: str(parent)}
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = device
    # A session of its own: a Ctrl-C at the terminal reaches this process only, which passes
    # each child one SIGTERM (two would stop it without saving).
    proc, log = _spawn(argv, folder.log_file(name), env=env, start_new_session=True)
    entry = {
        "cell": name,
        "argv": argv,
        "executor": "local",
        "pid": proc.pid,
        "parent": parent,
        "device": device,
        "started": time.time(),
    }
    folder.add_attempt(entry)
    return proc, time.monotonic(), device, log, entry


def _record_end(folder: ExperimentFolder, entry: dict, code: int) -> None:
    signum = -code if code < 0 else (code - 128 if code > 128 else 0)
    folder.add_attempt({**entry, "ended": time.time(), "exit": code, "signal": signum or None})


def _ended(folder, progress, name, code: int, seconds: float, entry: dict) -> None:
    _record_end(folder, entry, code)
    ok = code == 0 and folder.state(name) == "done"
    progress.ended(name, ok, seconds, "" if ok else f" (exit {code}; log: logs/{name}.log)")


def _stop_children(running: dict) -> None:
    """Ask every running cell to stop at its next safe point (it writes a checkpoint), then
    wait for them; a second signal here stops the wait and them at once."""
    for proc, *_ in running.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    try:
        for proc, *_ in running.values():
            proc.wait()
    except BaseException:
        for proc, *_ in running.values():
            if proc.poll() is None:
                proc.kill()
        raise
    finally:
        for _, _, _, log, _ in running.values():
            log.close()


def run_cell(argv: list[str], log_file: str) -> int:
    """A cell's process, as a submitit job runs it: ``jaxrl-fdg ARGV`` with its output appended
    to the cell's log. Returns its exit status."""
    proc, log = _spawn(argv, log_file)
    with log:
        try:
            return proc.wait()
        except BaseException:  # as subprocess.run: the cell does not outlive its job
            proc.kill()
            raise


def _spawn(argv: list[str], log_file: str | Path, **popen: Any) -> tuple[subprocess.Popen, Any]:
    """``jaxrl-fdg ARGV`` started with its output appended to ``log_file`` (after a line naming
    the command); the process and the open log, which the caller closes once it ends."""
    log = open(log_file, "a")  # noqa: SIM115 (closed by the caller)
    log.write(f"\n$ jaxrl-fdg {' '.join(argv)}\n")
    log.flush()
    proc = subprocess.Popen(
        command(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **popen
    )
    return proc, log


def _run_submitit(
    folder: ExperimentFolder, todo: list[str], progress: _Progress, options: Options
) -> None:
    import submitit

    cluster = "local" if options.executor == "submitit-local" else "slurm"
    executor = submitit.AutoExecutor(folder=str(folder.path / "submitit"), cluster=cluster)
    params: dict[str, Any] = {"name": f"jaxrl-fdg-{folder.path.name}"}
    if cluster == "slurm":
        slurm = dict(options.slurm)
        extra = slurm.pop("additional", {})
        params.update({f"slurm_{k}": v for k, v in slurm.items() if v is not None})
        if extra:
            params["slurm_additional_parameters"] = extra
        if options.jobs:
            params["slurm_array_parallelism"] = options.jobs
    executor.update_parameters(**params)
    jobs = options.jobs or len(todo)
    progress.slots = jobs
    waiting, running = list(todo), {}
    try:
        while waiting or running:
            batch = []
            while waiting and len(running) + len(batch) < jobs:
                name = waiting.pop(0)
                batch.append((name, folder.start_argv(name)))
            if batch:
                with executor.batch():
                    submitted = [
                        executor.submit(run_cell, argv, str(folder.log_file(name)))
                        for name, argv in batch
                    ]
                for (name, argv), job in zip(batch, submitted, strict=True):
                    entry = {
                        "cell": name,
                        "argv": argv,
                        "executor": options.executor,
                        "job": str(job.job_id),
                        "started": time.time(),
                    }
                    folder.add_attempt(entry)
                    running[name] = (job, time.monotonic(), entry)
                    progress.started(name, f"job {job.job_id}")
            time.sleep(_POLL_S)
            for name in [n for n, (job, *_) in running.items() if job.done()]:
                job, began, entry = running.pop(name)
                try:
                    code = job.result()
                except Exception as e:  # the job itself failed (node lost, time limit)
                    print(f"{name}: job {job.job_id} failed: {e}", file=sys.stderr)
                    code = 1
                _ended(folder, progress, name, code, time.monotonic() - began, entry)
    except BaseException:
        for job, *_ in running.values():
            job.cancel(check=False)
        raise

"""Data-parallel runs across processes: several machines, or several processes on one.

Every process runs the same command with its own ``process_id``. :func:`initialize` connects the
processes through ``jax.distributed.initialize`` (process 0 hosts the coordinator at
``coordinator``); from then on ``jax.devices()`` lists the devices of every process, and the
data-parallel placement's ``shard_map`` mesh spans them all
(``jaxrl_fdg.policies.data_parallel``). Each process feeds and steps the shards on its own devices;
the gradient mean is the one collective, and it crosses processes. A run over ``P`` processes of
``D`` devices each computes what one process with ``P × D`` shards computes
(tests/policies/test_distributed.py).

On CPU devices the cross-process collectives go over TCP with gloo
(``jax_cpu_collectives_implementation``); GPUs use NCCL, as JAX arranges.

What the host reads back (the iteration counter and the metrics, reduced over shards) is kept
whole on every device, so every process logs the same values without a collective of its own.
Process 0 alone writes the run folder (config, metrics, summary) and shows progress: the
processes compute one run, so one folder describes it, in the place the user named. Checkpoints
are every process's: each writes the shards on its own devices into the folder's
``checkpoints/`` (orbax's multi-process saving, process 0 its metadata and the rename that puts
it in place), which must be one folder for all of them (a shared filesystem across machines), and
every process restores its own shards on ``--resume``. Process 0 tells the others where its run
folder is (:func:`share_path`). The processes agree at each host boundary on whether to stop and
how many iterations to dispatch next (:func:`agree`), so a stop signal to any of them stops all
at the same iteration. A process that dies takes the others down within
:data:`HEARTBEAT_TIMEOUT_S` (JAX's coordination service aborts them): the folder is then as a
``kill -9`` leaves it, and resumes.
"""

from __future__ import annotations

import threading
from typing import Any

import jax
import numpy as np

from jaxrl_fdg import validate
from jaxrl_fdg.errors import ConfigError

# Seconds a process waits for the others to connect before giving up.
CONNECT_TIMEOUT_S = 300
# Seconds without a heartbeat after which a process counts as dead and the others are stopped
# (JAX's default, 100 s, kept a run that had lost a process waiting that long).
HEARTBEAT_TIMEOUT_S = 15


def initialize(
    coordinator: str, num_processes: int, process_id: int, timeout_s: int = CONNECT_TIMEOUT_S
) -> None:
    """Connect this process to the others of its run; once per process, before JAX starts its
    backends (before the first ``jax.devices()`` or computation).

    A second call with the same values does nothing; with other values it raises.
    """
    if jax.distributed.is_initialized():
        if (jax.process_count(), jax.process_index()) != (num_processes, process_id):
            raise ConfigError(
                f"this process already runs as process {jax.process_index()} of "
                f"{jax.process_count()}; it cannot join as process_id = {process_id} of "
                f"num_processes = {num_processes}"
            )
        return
    _use_cpu_collectives()
    _interruptible(
        lambda: jax.distributed.initialize(
            coordinator_address=coordinator,
            num_processes=num_processes,
            process_id=process_id,
            initialization_timeout=timeout_s,
            heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT_S,
        )
    )


def _interruptible(connect: Any) -> None:
    """Run ``connect`` (which blocks in C++ until every process has joined, up to
    :data:`CONNECT_TIMEOUT_S`) on a worker thread while the main thread waits in short steps:
    Python runs signal handlers only in the main thread between bytecodes, so a stop signal
    sent while the peers are awaited stops the process within a fraction of a second instead of
    once the connection gives up. The abandoned connection dies with the process (as the
    command ends it on a signal, ``os._exit``)."""
    if threading.current_thread() is not threading.main_thread():
        connect()
        return
    failed: list[BaseException] = []

    def run() -> None:
        try:
            connect()
        except BaseException as e:  # handed to the main thread
            failed.append(e)

    worker = threading.Thread(target=run, name="jaxrl_fdg: connecting", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)  # a signal's handler runs here, in the main thread
    if failed:
        raise failed[0]


def initialize_for(num_processes: int, process_id: int, coordinator: str | None) -> None:
    """:func:`initialize` with a run's process settings, once they are checked; nothing for a
    run in one process."""
    check_processes(num_processes, process_id, coordinator)
    if num_processes > 1:
        initialize(coordinator, num_processes, process_id)


def _use_cpu_collectives() -> None:
    """Cross-process collectives between CPU devices need an implementation: gloo, unless one is
    already chosen (older JAX versions choose none by default; some have no such option)."""
    try:
        chosen = jax.config.jax_cpu_collectives_implementation
    except AttributeError:
        return
    if chosen is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")


def check_processes(num_processes: Any, process_id: Any, coordinator: Any) -> None:
    """A run's process settings on their own (no JAX backend is started). Which placements
    span processes is theirs to declare (``Supports.process_backends``)."""
    validate.positive_int("num_processes", num_processes)
    n = num_processes
    if isinstance(process_id, bool) or not isinstance(process_id, int) or not 0 <= process_id < n:
        raise ConfigError(f"process_id must be an integer in 0..{n - 1}, got {process_id!r}")
    if n == 1:  # a coordinator, if any, is not used
        return
    if coordinator is None:
        raise ConfigError(
            f"num_processes = {n} needs a coordinator: the host:port of process 0, which every "
            "process can reach (e.g. 127.0.0.1:12355 on one machine)"
        )
    host, _, port = str(coordinator).rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(
            f"coordinator must be host:port with a port in 1..65535, got {coordinator!r}"
        )


def check_mesh(processes: int, devices: int) -> None:
    """A run across ``processes`` processes uses every device of every process, with JAX
    connected."""
    if jax.process_count() != processes:
        raise ConfigError(
            f"num_processes = {processes} but JAX runs {jax.process_count()} "
            "process(es): call jaxrl_fdg.policies.distributed.initialize first (train does)"
        )
    total = jax.device_count()
    if devices != total:
        raise ConfigError(
            f"devices = {devices}, but a run across {processes} processes shards over every "
            f"device of every process (valid: {total})"
        )


def is_primary() -> bool:
    """Whether this process reports the run and writes its folder (process 0)."""
    return jax.process_index() == 0


# Bytes of a path sent from process 0 to the others (PATH_MAX on Linux).
_PATH_BYTES = 4096


def share_path(path: str | None, failed: bool = False) -> str | None:
    """Process 0's ``path`` (its run folder, or ``None``), in every process: a collective, which
    every process calls at the same point. ``failed``: process 0 could not make its folder;
    the others then raise, naming that, instead of waiting for it."""
    if jax.process_count() == 1:
        return path
    from jax.experimental import multihost_utils

    text = "\x01" if failed else "" if path is None else path
    raw = text.encode()[:_PATH_BYTES].ljust(_PATH_BYTES, b"\0")
    sent = multihost_utils.broadcast_one_to_all(np.frombuffer(raw, np.uint8))
    shared = np.asarray(sent, np.uint8).tobytes().rstrip(b"\0").decode()
    if shared == "\x01":
        raise ConfigError("process 0 could not make the run folder (its error says why)")
    return shared or None


def agree(size: int, signum: int) -> tuple[int, int]:
    """What every process does next: the fewest iterations any proposes to dispatch, and the
    stop signal any was sent (0: none). A collective at each host boundary of a run across
    processes (their programs are collectives too, so they must dispatch the same ones)."""
    if jax.process_count() == 1:
        return size, signum
    from jax.experimental import multihost_utils

    proposals = np.asarray(multihost_utils.process_allgather(np.array([size, signum])))
    proposals = proposals.reshape(-1, 2)
    return int(proposals[:, 0].min()), int(proposals[:, 1].max())


def every_process(values: np.ndarray) -> np.ndarray:
    """``values`` of every process, stacked: ``[processes, ...]``; a collective."""
    if jax.process_count() == 1:
        return np.asarray(values)[None]
    from jax.experimental import multihost_utils

    gathered = np.asarray(multihost_utils.process_allgather(np.asarray(values)))
    return gathered.reshape(jax.process_count(), *np.shape(values))


def barrier(name: str) -> None:
    """Wait until every process reaches the barrier ``name`` (nothing with one process)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def host_values(tree: Any) -> Any:
    """Every array of ``tree`` as a numpy array holding its global value, in every process.

    Where an array spans processes this is a collective: every process must call it, with the
    same tree. Typed PRNG keys are not supported (pass ``jax.random.key_data`` of them)."""
    if jax.process_count() == 1:
        return jax.tree.map(np.asarray, jax.device_get(tree))
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)

"""One writer per run folder: an advisory lock (``flock``) on the folder's ``.lock`` file.

Training (fresh or resumed) and ``evaluate`` take the lock before they write anything and hold
it until they return. A second writer is refused at once with the holder's pid, host and
command, never left waiting. The kernel drops a ``flock`` when the last descriptor of its holder
closes, so a writer that dies (``kill -9``, a crash) never leaves the folder locked: the next
writer takes the lock and overwrites the stale holder line. The file itself stays behind; it
is a few bytes and removing it would let two writers lock two different files.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

from jaxrl_fdg.errors import ConfigError

FILE = ".lock"


class FolderLock:
    """The exclusive lock on one run folder; :meth:`release` (or process exit) gives it back."""

    def __init__(self, fd: int, path: Path):
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, folder: Path, purpose: str) -> FolderLock:
        """Lock ``folder`` for ``purpose`` (``"train"``, ``"evaluate"``), or raise
        :class:`ConfigError` naming whoever holds it."""
        path = Path(folder) / FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ConfigError(f"cannot lock run folder {str(folder)!r}: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise ConfigError(
                f"run folder {str(folder)!r} is in use by {holder}; wait for it to finish or "
                "stop it (a writer that died holds nothing)"
            ) from None
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        line = f"pid {os.getpid()} on {socket.gethostname()} ({purpose}, since {stamp})\n"
        os.ftruncate(fd, 0)
        os.pwrite(fd, line.encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

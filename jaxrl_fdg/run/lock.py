"""One writer per run folder: an advisory lock (``flock``) on the folder's ``.lock`` file.

Training (fresh or resumed) and ``evaluate`` take the lock before they write anything and hold
it until they return. A second writer is refused at once with the holder's pid, host and
command, never left waiting. The kernel drops a ``flock`` when the last descriptor of its holder
closes, so a writer that dies (``kill -9``, a crash) never leaves the folder locked: the next
writer takes the lock and overwrites the stale holder line. A writer that finishes removes the
file while it still holds the lock; one that locked the file just before it went checks that
it holds the file the folder names, else locks afresh, so two writers never hold two files.
The file is opened without following links (a ``.lock`` that is a link is refused). A folder
that cannot be written at all needs no lock to be read: ``evaluate`` reads it unlocked.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from pathlib import Path

from jaxrl_fdg.errors import ConfigError

FILE = ".lock"


class FolderLock:
    """The exclusive lock on one run folder; :meth:`release` (or process exit) gives it back."""

    def __init__(self, fd: int | None, path: Path):
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, folder: Path, purpose: str, read_only: bool = False) -> FolderLock:
        """Lock ``folder`` for ``purpose`` (``"train"``, ``"evaluate"``), or raise
        :class:`ConfigError` naming whoever holds it. ``read_only``: the caller only reads, and
        a folder it cannot write to (so nobody can) is read without a lock."""
        path = Path(folder) / FILE
        for _ in range(100):  # another writer removing the file as this one locks it: again
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            except OSError as e:
                if read_only and e.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
                    return cls(None, path)
                why = "it is a link" if e.errno == errno.ELOOP else e.strerror
                raise ConfigError(f"cannot lock run folder {str(folder)!r}: {why}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
                os.close(fd)
                raise ConfigError(
                    f"run folder {str(folder)!r} is in use by {holder or 'another process'}; "
                    "wait for it to finish or stop it (a writer that died holds nothing)"
                ) from None
            if _same_file(fd, path):
                break
            os.close(fd)  # it was removed (or replaced) after we opened it
        else:
            raise ConfigError(f"cannot lock run folder {str(folder)!r}: its {FILE} keeps changing")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        line = f"pid {os.getpid()} on {socket.gethostname()} ({purpose}, since {stamp})\n"
        os.ftruncate(fd, 0)
        os.pwrite(fd, line.encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        """Remove the file (still holding it, so no one else has it) and give the lock back."""
        if self._fd is not None:
            if _same_file(self._fd, self.path):
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
            os.close(self._fd)
            self._fd = None


def is_held(folder: Path) -> bool:
    """Whether a process holds ``folder``'s lock: asked without waiting, given back at once."""
    try:
        fd = os.open(Path(folder) / FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)

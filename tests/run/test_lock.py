"""One writer per run folder (``jaxrl_fdg.run.lock``): a second writer is refused at once,
naming the holder; a released lock is taken again and leaves no file; a file removed under a
writer that opened it is locked afresh; a link is refused; the holder line says who holds it.
(A writer that dies holding it: tests/faults/test_process_faults.py.)"""

import errno
import os
import socket

import pytest

from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import lock as lock_module
from jaxrl_fdg.run.lock import FILE, FolderLock


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    held = FolderLock.acquire(tmp_path, "train")
    try:
        line = (tmp_path / FILE).read_text()
        assert line.startswith(f"pid {os.getpid()} on {socket.gethostname()} (train, since ")
        with pytest.raises(ConfigError, match=r"is in use by pid \d+ on .*\(train, since"):
            FolderLock.acquire(tmp_path, "evaluate")
    finally:
        held.release()


def test_a_released_lock_is_taken_again_and_release_twice_is_harmless(tmp_path):
    FolderLock.acquire(tmp_path, "train").release()
    assert not (tmp_path / FILE).exists()  # a finished writer leaves nothing that reads as live
    (tmp_path / FILE).write_text("pid 1 on gone (train, since 2026-01-01)\n")  # one that died
    again = FolderLock.acquire(tmp_path, "evaluate")
    assert "(evaluate, since " in (tmp_path / FILE).read_text()  # the holder line rewritten
    again.release()
    again.release()
    assert not (tmp_path / FILE).exists()


def test_a_file_removed_as_a_writer_locks_it_is_locked_afresh(tmp_path, monkeypatch):
    # The first writer removes the file while the second has it open, about to lock it: the
    # second must not hold a file the folder no longer names.
    first = FolderLock.acquire(tmp_path, "train")
    real_flock, calls = lock_module.fcntl.flock, []

    def flock(fd, operation):
        calls.append(fd)
        if len(calls) == 1:
            first.release()  # removes the file; the second writer's descriptor is now stale
        return real_flock(fd, operation)

    monkeypatch.setattr(lock_module.fcntl, "flock", flock)
    second = FolderLock.acquire(tmp_path, "evaluate")
    assert len(calls) == 2  # locked the removed file, saw it, locked the new one
    assert "(evaluate, since " in (tmp_path / FILE).read_text()
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="is in use by pid"):
        FolderLock.acquire(tmp_path, "train")
    second.release()


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_kept(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / FILE).symlink_to(target)
    with pytest.raises(ConfigError, match="cannot lock run folder .*: it is a link"):
        FolderLock.acquire(tmp_path, "train")
    assert target.read_text() == "keep me"


def test_a_folder_nobody_can_write_is_read_without_the_lock(tmp_path, monkeypatch):
    real_open = os.open

    def read_only(path, flags, *args):
        if str(path).endswith(FILE):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, *args)

    monkeypatch.setattr(lock_module.os, "open", read_only)
    FolderLock.acquire(tmp_path, "evaluate", read_only=True).release()
    with pytest.raises(ConfigError, match="Read-only file system"):
        FolderLock.acquire(tmp_path, "train")


def test_a_folder_that_cannot_hold_the_lock_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="cannot lock run folder .*missing"):
        FolderLock.acquire(tmp_path / "missing", "train")

"""One writer per run folder (``jaxrl_fdg.run.lock``): a second writer is refused at once,
naming the holder; a released lock is taken again; the holder line says who holds it. (A writer
that dies holding it: tests/faults/test_process_faults.py.)"""

import os
import socket

import pytest

from jaxrl_fdg.errors import ConfigError
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
    again = FolderLock.acquire(tmp_path, "evaluate")
    assert "(evaluate, since " in (tmp_path / FILE).read_text()  # the holder line rewritten
    again.release()
    again.release()
    assert (tmp_path / FILE).exists()  # the file stays: two writers must lock one file


def test_a_folder_that_cannot_hold_the_lock_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="cannot lock run folder .*missing"):
        FolderLock.acquire(tmp_path / "missing", "train")

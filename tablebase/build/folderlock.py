"""One build per database folder: an exclusive lock held for the whole of a build.

Two builds writing into one folder would delete each other's temporary files (each removes
the leftovers of an interrupted build when it starts). :func:`lock_folder` takes an
exclusive ``flock`` on ``<db>/.tablebase.lock`` and writes the holder's pid and command line
into it; a second build finds the lock taken and raises :class:`FolderInUseError` naming
that process. The kernel releases the lock when the holder exits, however it ends (even
``kill -9``), so a stale lock file never blocks a later build. Worker processes do not
inherit the lock (they are spawned, not forked, and the file is opened close-on-exec).
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = ".tablebase.lock"


class FolderInUseError(RuntimeError):
    """The database folder is locked by another running build."""

    def __init__(self, folder: Path | str, holder: str) -> None:
        self.folder = Path(folder)
        self.holder = holder
        super().__init__(f"database folder {folder} is in use by {holder}")

    def __reduce__(self):
        return (type(self), (self.folder, self.holder))


def lock_path(folder: Path | str) -> Path:
    return Path(folder) / LOCK_NAME


def _holder_text(fd: int) -> str:
    data = os.pread(fd, 4096, 0).decode(errors="replace").strip()
    pid, _, command = data.partition("\n")
    if not pid:
        return "another process (it has not written its pid yet)"
    return f"process {pid} ({command})" if command else f"process {pid}"


@contextmanager
def lock_folder(folder: Path | str) -> Iterator[Path]:
    """Hold the build lock of ``folder`` (which must exist) for the ``with`` block.

    Raises :class:`FolderInUseError` at once if another process holds it, and ``OSError``
    if the lock file cannot be created (e.g. a read-only folder).
    """
    path = lock_path(folder)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderInUseError(folder, _holder_text(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{' '.join(sys.argv)}\n".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)  # the file stays (unlinking it would race a new locker)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

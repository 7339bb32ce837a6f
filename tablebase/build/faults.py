"""Why a build stopped, in one line: the errors a build reports and how causes are worded.

A pair task that fails (a disk that is full or read-only, a damaged input table, a worker
process that was killed) ends the build with :class:`BuildError`, whose message names the
slice pair, the cause and what is kept; the command line prints it without a traceback.
Exceptions here survive pickling, so they cross from worker processes intact.
"""

from __future__ import annotations

import errno as errno_module
import os
import re
from concurrent.futures.process import BrokenProcessPool

from tablebase.storage.slicefile import TableFileError

_H5_ERRNO = re.compile(r"errno = (\d+)")


class SliceWriteError(OSError):
    """Writing one slice's file failed (the cause is the underlying OS error)."""

    def __init__(self, slice_name: str, path: str, cause: str) -> None:
        self.slice_name, self.path, self.cause = slice_name, path, cause
        super().__init__(f"cannot write slice {slice_name} ({path}): {cause}")

    def __reduce__(self):
        return (type(self), (self.slice_name, self.path, self.cause))


class BuildError(RuntimeError):
    """A build stopped; the message is the one line a user sees."""


class MemoryBudgetError(BuildError):
    """A task needs more memory than the build may use."""


def describe(exc: BaseException) -> str:
    """A one-line cause for ``exc``: the OS's wording for I/O errors, no traceback."""
    if isinstance(exc, BrokenProcessPool):
        return "its worker process died (killed by a signal, or by the kernel when out of memory)"
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, SliceWriteError | TableFileError):
        return str(exc)
    if isinstance(exc, OSError | RuntimeError):
        code = getattr(exc, "errno", None)
        if code is None:  # h5py wraps the OS error in the message of either type
            m = _H5_ERRNO.search(str(exc))
            code = int(m.group(1)) if m else None
        if code is not None and code in errno_module.errorcode:
            filename = getattr(exc, "filename", None)
            return os.strerror(code) + (f" ({filename})" if filename else "")
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")

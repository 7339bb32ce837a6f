"""Where numba keeps the compiled code: one folder per version of the project's sources.

Numba's own cache checks only the file a compiled function is written in. A function that
inlines or calls compiled code from another module (the solver inlines the move generator
and the index; the replay inlines the move generator) keeps the old code from its cache when
only that other module changes, and with it, for example, an old layout of a workspace array
that the new Python side allocates differently. So the cache folder is chosen here from a
digest of every Python source of ``tablebase`` and ``adjudicator``: after any change of the
sources everything is compiled afresh, and a version of the sources finds its own cache
again. The folder is ``$NUMBA_CACHE_DIR/draughts-tablebase/<digest>`` when that variable is
set, else ``$XDG_CACHE_HOME`` (default ``~/.cache``) ``/draughts-tablebase/numba/<digest>``;
beyond the :data:`KEEP` most recently used, folders unused for a day are removed, except a
folder some process still uses: each process holds a shared ``flock`` on its folder's
:data:`IN_USE` file for as long as it runs (worker processes too, as they import the
package), and pruning removes a folder only while it holds that lock exclusively, so a build
running for days never loses its compiled code to a newer checkout's first import.

:func:`configure` must run before any module with compiled functions is imported (numba
picks a function's cache folder when it is decorated): ``tablebase/__init__.py`` calls it
first, and ``adjudicator`` imports ``tablebase`` first.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import time
from pathlib import Path

KEEP = 4  # cache folders kept (the current one and the most recently used others) ...
STALE_SECONDS = 86_400  # ... and any other used in the last day (a process may still run)
_PACKAGES = ("tablebase", "adjudicator")
IN_USE = ".in-use"  # the lock file of a cache folder (see the module docstring)
_held: list[int] = []  # descriptors of the shared locks this process holds (never closed)


def source_digest(root: Path) -> str:
    """Digest (16 hex digits) of the Python sources of the project's packages under
    ``root`` (the folder holding ``tablebase/``): their paths and contents."""
    h = hashlib.sha256()
    for package in _PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


def cache_base() -> Path:
    """The folder holding one cache folder per digest (see the module docstring)."""
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return Path(user) / "draughts-tablebase"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "draughts-tablebase" / "numba"


def configure() -> Path | None:
    """Point numba's cache at the folder of the current sources (created if need be) and
    prune old folders; returns the folder (None if it cannot be created: numba then keeps
    its own choice)."""
    import numba

    root = Path(__file__).resolve().parent.parent
    folder = cache_base() / source_digest(root)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)  # most recently used
        hold(folder)
    except OSError:
        return None
    # numba.config sets its names at run time (from the environment): mypy cannot see them
    numba.config.CACHE_DIR = str(folder)  # type: ignore[attr-defined]
    _prune(folder.parent)
    return folder


def hold(folder: Path) -> None:
    """Mark ``folder`` as used by this process until it exits (a shared lock on its
    :data:`IN_USE` file, which the kernel releases however the process ends)."""
    fd = os.open(folder / IN_USE, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _held.append(fd)


def _remove_unless_in_use(folder: Path) -> None:
    """Remove ``folder`` unless a process holds its lock (see :func:`hold`)."""
    try:
        fd = os.open(folder / IN_USE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return  # in use
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(fd)


def _prune(base: Path, now: float | None = None) -> None:
    now = time.time() if now is None else now
    try:
        folders = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in folders[:-KEEP]:
        try:
            stale = now - old.stat().st_mtime > STALE_SECONDS
        except OSError:
            continue
        if stale:
            _remove_unless_in_use(old)

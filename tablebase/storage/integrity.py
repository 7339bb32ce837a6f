"""The check of a slice file made before the HDF5 library parses any of it.

A damaged byte of HDF5 metadata can make the library spin forever or crash (a flipped
length in a variable-length attribute sent it round the global heap). So a file of format
version 3 (``docs/FORMAT.md``, "Integrity") opens with a header of its own in the HDF5
*user block*, the 512 bytes at the start of the file that the library skips (its superblock
follows), and ends with a table of the byte extents of the compressed chunks of its parts,
after the HDF5 data (the library ignores bytes past its end). The header holds a SHA-256
digest of every byte of the file outside those chunks: the header itself (its digest field
read as zeros), the superblock, object headers, attributes, chunk indexes, the small
datasets beside the parts, and the table. Hashing them takes reads of kilobytes to a few
megabytes however large the file, so it is done on every first open; the chunks, the bulk
of a file, are checked where they are read (each part's SHA-256 when read whole, a CRC-32
per block where read by block).

Layout, little-endian::

    0   8 bytes  magic  b"DTBSLICE"
    8   uint32   header version (3)
    12  uint32   U, the user block size (512): the HDF5 superblock starts here
    16  uint64   file length in bytes
    24  uint64   T, where the extent table starts (the end of the HDF5 data)
    32  uint64   n, the number of extents; the file length is T + 16 n
    40  32 bytes SHA-256 (see above)
    72  zeros up to U
    T   n x (uint64 offset, uint64 length): the chunks, in file order, disjoint, in [U, T)

Files of versions 1 and 2 carry no header (they begin with the HDF5 signature). They are
read as before, but their metadata is first parsed by the library in a child process
with a time limit (:func:`check_legacy`; one child serves a process's files, started anew
after a failure), so that a damaged one fails alone, with a message naming it, instead of
hanging or crashing the reader.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"DTBSLICE"
HEADER_VERSION = 3
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
USER_BLOCK = 512
_FIXED = struct.Struct("<8sIIQQQ32s")  # magic, version, U, length, T, n, digest: 72 bytes
DIGEST_AT = 40  # the digest field's offset in the header
_EXTENT = 16  # bytes per extent: offset, length
#: Seconds the HDF5 library may take to parse the metadata of a version 1 or 2 file.
LEGACY_TIME_LIMIT = float(os.environ.get("TABLEBASE_LEGACY_CHECK_SECONDS", "60"))
_READ = 1 << 20


class DamagedFile(ValueError):
    """The file fails its check (the reason is the message)."""


@dataclass(frozen=True)
class Sealed:
    """A version 3 file's header, checked: the user block size, the end of the HDF5 data
    and the chunk extents (``(n, 2)`` int64: offset, length)."""

    user_block: int
    hdf5_end: int
    extents: np.ndarray


def seal(image: memoryview, extents: np.ndarray | list[tuple[int, int]]) -> tuple[bytes, bytes]:
    """The header and the chunk table of a file whose HDF5 part is ``image`` (written with
    a user block of :data:`USER_BLOCK` zero bytes) and whose chunks are at ``extents``
    (``(offset, length)`` pairs, a list or an array of rows, in any order): the file is the
    header, ``image`` past the header's length, then the table. Nothing of ``image`` is
    copied."""
    if len(image) < USER_BLOCK or any(bytes(image[:USER_BLOCK])):
        raise ValueError(f"the image has no empty {USER_BLOCK}-byte user block")
    end = len(image)
    ext = np.asarray(extents, dtype=np.int64).reshape(-1, 2)
    ext = ext[np.argsort(ext[:, 0], kind="stable")]
    _check_extents(ext, USER_BLOCK, end)
    table = ext.astype("<u8").tobytes()
    length = end + len(table)
    fields = (MAGIC, HEADER_VERSION, USER_BLOCK, length, end, ext.shape[0])
    h = hashlib.sha256(_FIXED.pack(*fields, bytes(32)))
    for lo, hi in _gaps(ext, end):
        lo = max(lo, _FIXED.size)
        if lo < hi:
            h.update(image[lo:hi])
    h.update(table)
    return _FIXED.pack(*fields, h.digest()), table


def _gaps(ext: np.ndarray, length: int) -> list[tuple[int, int]]:
    """The ``[lo, hi)`` ranges of a file of ``length`` bytes outside the extents ``ext``."""
    starts = np.concatenate(([0], ext[:, 0] + ext[:, 1]))
    stops = np.concatenate((ext[:, 0], [length]))
    keep = stops > starts
    return list(zip(starts[keep].tolist(), stops[keep].tolist(), strict=True))


def _check_extents(ext: np.ndarray, lo: int, hi: int) -> None:
    if not ext.shape[0]:
        return
    starts, lengths = ext[:, 0], ext[:, 1]
    ends = starts + lengths
    if (
        (lengths <= 0).any()
        or starts[0] < lo
        or ends[-1] > hi
        or (starts[1:] < ends[:-1]).any()
        or (starts < 0).any()
    ):
        raise DamagedFile("the chunk table lists chunks that overlap or lie outside the data")


def check_sealed(path: Path | str) -> Sealed | None:
    """Check a file's header and digest without the HDF5 library: the header, or None for a
    file that has none (versions 1 and 2: it begins with the HDF5 signature). Raises
    :class:`DamagedFile` for any mismatch, and ``OSError`` if it cannot be read."""
    with open(path, "rb") as fh:
        length = os.fstat(fh.fileno()).st_size
        head = fh.read(_FIXED.size)
        if head[:8] == HDF5_SIGNATURE:
            return None
        if len(head) < _FIXED.size or head[:8] != MAGIC:
            raise DamagedFile(
                "not a slice file: it begins with neither the table header nor the HDF5 signature"
            )
        _, version, ub, stated, end, n, digest = _FIXED.unpack(head)
        if version != HEADER_VERSION:
            raise DamagedFile(f"header version {version}, expected {HEADER_VERSION}")
        if stated != length:
            raise DamagedFile(f"{length} bytes, the header says {stated} (truncated or extended)")
        if ub != USER_BLOCK or not ub <= end <= length or length - end != n * _EXTENT:
            raise DamagedFile("the header's layout does not fit the file")
        fh.seek(end)
        table = fh.read(n * _EXTENT)
        if len(table) != n * _EXTENT:
            raise DamagedFile("truncated")
        ext = np.frombuffer(table, dtype="<u8").reshape(-1, 2)
        if (ext > np.uint64(length)).any():
            raise DamagedFile("the chunk table lists chunks outside the file")
        ext = ext.astype(np.int64)
        _check_extents(ext, ub, end)
        h = hashlib.sha256()
        h.update(head[:DIGEST_AT])
        h.update(bytes(32))
        fh.seek(_FIXED.size)
        for lo, hi in _gaps(ext, length):
            lo = max(lo, _FIXED.size)
            if lo >= hi:
                continue
            fh.seek(lo)
            while lo < hi:  # metadata between two chunks (or the header, or the table)
                block = fh.read(min(_READ, hi - lo))
                if not block:
                    raise DamagedFile("truncated")
                h.update(block)
                lo += len(block)
        if h.digest() != digest:
            raise DamagedFile(
                "metadata digest mismatch: the file's header, attributes or layout were "
                "altered or damaged"
            )
        return Sealed(ub, end, ext)


# --- version 1 and 2 files: the library's parse, in a child with a time limit ------------
_CHECKER = Path(__file__).with_name("legacycheck.py")


class _Checker:
    """The child process parsing older files (``legacycheck.py``), kept between files."""

    def __init__(self, script: Path) -> None:
        self.script = script
        self.pid = os.getpid()  # a forked process starts its own
        self.proc = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def ask(self, path: str, limit: float) -> str | None:
        """The child's answer for ``path``; None if it gave none within ``limit`` seconds
        (it is then killed); ``""`` if it died."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(path) + "\n")
            self.proc.stdin.flush()
        except OSError:
            return ""
        ready, _, _ = select.select([self.proc.stdout], [], [], limit)
        if not ready:
            self.stop()
            return None
        return self.proc.stdout.readline()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


_checker: _Checker | None = None
_checker_lock = threading.Lock()


def check_legacy(path: Path | str, time_limit: float | None = None) -> None:
    """Parse the metadata of a file without a header (attributes, datasets, chunk index)
    with the HDF5 library in a child process (one kept for the files of a process);
    :class:`DamagedFile` if the library fails, crashes or takes longer than ``time_limit``
    seconds (:data:`LEGACY_TIME_LIMIT`)."""
    global _checker
    limit = LEGACY_TIME_LIMIT if time_limit is None else time_limit
    with _checker_lock:
        if (
            _checker is None
            or _checker.pid != os.getpid()
            or _checker.script != _CHECKER
            or _checker.proc.poll() is not None
        ):
            _checker = _Checker(_CHECKER)
        checker = _checker
        answer = checker.ask(os.fspath(path), limit)
        if not answer:
            _checker = None
    if answer is None:
        raise DamagedFile(
            f"the HDF5 library did not finish reading its metadata within {limit:g} s: "
            "damaged (a version 1 or 2 file has no digest; regenerate it, or convert the "
            "database with `tablebase export`)"
        )
    if not answer:
        code = checker.proc.wait()
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        raise DamagedFile(f"the HDF5 library crashed reading its metadata ({how}): damaged")
    if answer.strip() != "ok":
        raise DamagedFile(f"damaged metadata ({answer.strip()})")


_checked: dict[tuple, Sealed | None] = {}
_lock = threading.Lock()


def check_file(path: Path | str, recheck: bool = False) -> Sealed | None:
    """:func:`check_sealed`, and :func:`check_legacy` for a file without a header, once per
    file per process (a file is known by its inode, size and times: a file written anew is
    checked anew); ``recheck`` checks it again. Raises :class:`DamagedFile` or ``OSError``."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if not recheck:
        with _lock:
            if key in _checked:
                return _checked[key]
    sealed = check_sealed(path)
    if sealed is None:
        check_legacy(path)
    with _lock:
        if len(_checked) > 100_000:
            _checked.clear()
        _checked[key] = sealed
    return sealed

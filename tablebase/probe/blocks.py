"""Where the blocks of a slice's part come from: its file, one block at a time, checked.

A *part* is a slice's ``values`` or its ``wdl`` (:mod:`tablebase.storage.slicefile`), seen as
blocks of :data:`~tablebase.storage.chunkio.BLOCK_BYTES` bytes (the last one padded with
zeros): block ``k`` holds bytes ``k * BLOCK_BYTES`` and on of the part (of its entries for
``values``, little-endian; of its packed codes for ``wdl``). :func:`open_part` opens one:

- a file written with per-block checksums (formats 3 and 4, blocks the size of the file's chunks)
  is read by :class:`tablebase.storage.chunkio.BlockReader`: one ``pread``, one inflate and
  one CRC-32 per block;
- an older file (format 1 or 2: chunks of 2^18 entries, one checksum for the whole dataset)
  is checked whole on first use, as the prober always did, by streaming its dataset
  through SHA-256 (a few MiB at a time, nothing kept), then read a block at a time through
  HDF5 with its chunk cache off, which inflates the file's whole chunk for each block.
  The ``wdl`` part of a version 1 file, which has none, is derived from the values block
  by block. ``tablebase export`` rewrites such a database in format 4 (docs/FORMAT.md).

Every failure is a :class:`~tablebase.storage.slicefile.TableFileError` naming the file (and
the block, where one is damaged).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import h5py
import numpy as np

from tablebase.material.slices import Slice
from tablebase.rules.variants import Variant
from tablebase.storage.chunkio import BLOCK_BYTES, BlockReader, Groups
from tablebase.storage.reader import check_header, open_slice_file
from tablebase.storage.slicefile import DATASET, WDL_DATASET, TableFileError
from tablebase.storage.wdl import exact_wdl, packed_size

STREAM_BYTES = 1 << 22  # bytes hashed at a time when an older file is checked whole


class PartSource:
    """The blocks of one part of one slice file (see the module docstring)."""

    path: Path
    blocks: int  # number of blocks
    width: int  # bytes per entry (1, or 2 for 16-bit values; 1 for the packed wdl codes)
    captures_stored: bool  # wdl: the part stores capture positions' codes
    groups: Groups | None = None  # a group-coded part's (tablebase.probe.direct reads it)

    @property
    def fd(self) -> int | None:
        """The open file a group-coded part's blocks are read from directly (None: none)."""
        return None

    def read(self, k: int, out: np.ndarray) -> None:
        """Block ``k`` into ``out`` (``uint8``, :data:`BLOCK_BYTES` long)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the file."""


class _Checked(PartSource):
    """A part written with per-block checksums, read by :class:`BlockReader`."""

    def __init__(self, path: Path, reader: BlockReader, captures_stored: bool) -> None:
        self.path = path
        self.reader = reader
        self.blocks = reader.blocks
        self.width = reader.dtype.itemsize
        self.captures_stored = captures_stored
        self.groups = reader.groups  # group-coded: its entries can be read directly

    @property
    def fd(self) -> int | None:
        return self.reader._fd

    def read(self, k: int, out: np.ndarray) -> None:
        try:
            self.reader.read(k, out)
        except (OSError, ValueError) as e:
            raise TableFileError(self.path, f"damaged slice file ({e})") from None

    def close(self) -> None:
        self.reader.close()


class _Whole(PartSource):
    """A part of an older file: checked whole once, then read through HDF5 by ranges."""

    def __init__(
        self, path: Path, f: h5py.File, name: str, digest: str | None, wdl_of_values: bool
    ) -> None:
        self.path = path
        self.file = f
        self.ds = f[name]
        self.wdl_of_values = wdl_of_values
        self.width = 1 if wdl_of_values else self.ds.dtype.itemsize
        entries = self.ds.shape[0]
        nbytes = (entries + 3) // 4 if wdl_of_values else entries * self.width
        self.nbytes = nbytes
        self.blocks = -(-nbytes // BLOCK_BYTES)
        self.captures_stored = True
        _check_whole(path, self.ds, digest)

    def read(self, k: int, out: np.ndarray) -> None:
        try:
            if self.wdl_of_values:
                lo = k * BLOCK_BYTES * 4
                values = self.ds[lo : min(self.ds.shape[0], lo + BLOCK_BYTES * 4)]
                raw = exact_wdl(values)
            else:
                per = BLOCK_BYTES // self.width
                lo = k * per
                data = self.ds[lo : min(self.ds.shape[0], lo + per)]
                raw = data.astype(data.dtype.newbyteorder("<"), copy=False).view(np.uint8)
        except (OSError, ValueError, KeyError) as e:
            raise TableFileError(self.path, f"truncated or damaged slice file ({e})") from None
        out[: raw.shape[0]] = raw
        out[raw.shape[0] : BLOCK_BYTES] = 0

    def close(self) -> None:
        self.file.close()


def _check_whole(path: Path, ds: h5py.Dataset, digest: str | None) -> None:
    """Stream ``ds`` through SHA-256 and compare with the digest its file recorded."""
    h = hashlib.sha256()
    n = ds.shape[0]
    step = max(1, STREAM_BYTES // ds.dtype.itemsize)
    try:
        for lo in range(0, n, step):
            part = ds[lo : min(n, lo + step)]
            h.update(np.ascontiguousarray(part).view(np.uint8).data)  # .data: a Buffer to mypy
    except (OSError, ValueError) as e:
        raise TableFileError(path, f"truncated or damaged slice file ({e})") from None
    if digest is None or h.hexdigest() != digest:
        raise TableFileError(
            path, f"checksum mismatch: the {ds.name[1:]} part was altered or damaged"
        )


def open_part(path: Path, variant: Variant, s: Slice, part: str) -> PartSource:
    """The blocks of part ``part`` (``"values"`` or ``"wdl"``) of the file of slice ``s``;
    :class:`TableFileError` if the file is missing, describes another slice, lacks the part
    (a WDL-only copy has no values) or is damaged where it was read."""
    attrs = check_header(path, variant, s)  # the header checked against the name
    version = attrs["format_version"]
    entries = s.size(variant)
    try:
        if part == DATASET:
            with open_slice_file(path) as f:
                if DATASET not in f:
                    raise TableFileError(
                        path,
                        "holds win/draw/loss only (a WDL-only copy): distances are not available",
                    )
                ds = f[DATASET]
                if ds.dtype not in (np.uint8, np.uint16) or ds.shape != (entries,):
                    raise TableFileError(path, f"dataset has shape {ds.shape} {ds.dtype}")
            return _open(path, DATASET, True, version)
        if version == 1:  # no wdl part: derived from the values block by block
            f = h5py.File(path, "r", rdcc_nbytes=0)
            try:
                return _Whole(path, f, DATASET, _digest(f[DATASET]), True)
            except BaseException:
                f.close()
                raise
        with open_slice_file(path) as f:
            ds = f[WDL_DATASET]
            if ds.dtype != np.uint8 or ds.shape != (packed_size(entries),):
                raise TableFileError(path, f"wdl dataset has shape {ds.shape} {ds.dtype}")
        return _open(path, WDL_DATASET, bool(attrs["wdl_captures_stored"]), version)
    except (OSError, KeyError) as e:
        raise TableFileError(path, f"truncated or damaged slice file ({e})") from None


def _open(path: Path, name: str, captures_stored: bool, version: int) -> PartSource:
    try:
        reader = BlockReader(path, name)
    except ValueError:
        reader = None
    if reader is not None and reader.block_bytes == BLOCK_BYTES:
        return _Checked(path, reader, captures_stored)
    if reader is not None:
        reader.close()
    f = h5py.File(path, "r", rdcc_nbytes=0)  # no chunk cache: the block cache is the budget
    try:
        source = _Whole(path, f, name, _digest(f[name]), False)
    except BaseException:
        f.close()
        raise
    source.captures_stored = captures_stored
    return source


def _digest(ds: h5py.Dataset) -> str | None:
    d = ds.attrs.get("sha256")
    return d.decode() if isinstance(d, bytes) else (None if d is None else str(d))
